package cache

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/kcache/cache/internal/dedup"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// eagerTable is a table that shares a value from its first sighting: for
// tests of how values are shared, which compare the first objects they
// cache.
func eagerTable() *dedup.Table {
	return dedup.New(dedup.Options{ShareFirstSighting: true})
}

// eagerSharing is an informer's value sharing through an eagerTable, not
// yet attached to a store.
func eagerSharing() *valueSharing { return &valueSharing{table: eagerTable()} }

// sharedGuard returns the guard of table s over store, as an informer
// named id with metrics would have it.
func sharedGuard(s *dedup.Table, store Store, id InformerNameAndResource, metrics InformerMetricsProvider) *dedup.Guard {
	sh := &valueSharing{table: s}
	sh.attach(store, &v1.Pod{}, id, metrics)
	return sh.guard
}

func sameSlice[T any](a, b []T) bool {
	return len(a) > 0 && len(b) > 0 && unsafe.SliceData(a) == unsafe.SliceData(b)
}

func sameMap[K comparable, V any](a, b map[K]V) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// An informer's transform shares what its own transform returns, when
// sharing is on; it never writes its input, and a failed transform shares
// nothing.
func TestValueSharing_Transform(t *testing.T) {
	errTransform := errors.New("transform failed")
	tests := []struct {
		name      string
		transform TransformFunc
		sharing   *valueSharing
		wantErr   error
		wantDedup bool
	}{
		{"sharing off, no transform", nil, nil, nil, false},
		{"sharing on, no transform", nil, eagerSharing(), nil, true},
		{"sharing on after a transform", func(obj interface{}) (interface{}, error) { return obj, nil }, eagerSharing(), nil, true},
		{"a failed transform shares nothing", func(interface{}) (interface{}, error) { return nil, errTransform }, eagerSharing(), errTransform, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tf := tt.sharing.transform(tt.transform, nil)
			if tf == nil {
				if tt.wantDedup || tt.transform != nil {
					t.Fatal("no transform returned")
				}
				return
			}
			a, b := safetyPod("web", 1), safetyPod("web", 2)
			want := b.DeepCopy()
			outA, err := tf(a)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			outB, err := tf(b)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if !reflect.DeepEqual(outB, want) || !reflect.DeepEqual(b, want) {
				t.Error("the transformed object or its input differs from the input as given")
			}
			if sameMap(a.Labels, b.Labels) {
				t.Error("the inputs' labels were made one: an input was written")
			}
			if got := sameMap(outA.(*v1.Pod).Labels, outB.(*v1.Pod).Labels); got != tt.wantDedup {
				t.Errorf("labels shared = %v, want %v", got, tt.wantDedup)
			}
		})
	}
}

// The mutation detector still passes for shared objects and still catches
// a caller that modifies a shared part; the modification shows in every
// object sharing it.
func TestDeduper_MutationDetector(t *testing.T) {
	tests := []struct {
		name     string
		mutate   func(a, b interface{ GetName() string })
		wantHits int // objects reported
	}{
		{"no mutation", func(_, _ interface{ GetName() string }) {}, 0},
		{"a shared label changed through one pod", nil, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := eagerTable()
			a, b := s.Share(safetyPod("web", 1)).(*v1.Pod), s.Share(safetyPod("web", 2)).(*v1.Pod)
			var report string
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			d := newCacheMutationDetector("pods", klog.Background())
			d.onMutation = func(r string) { report = r }
			d.AddObject(a)
			d.AddObject(b)
			d.check(now)
			if tt.mutate == nil {
				a.Labels["tier"] = "db" // against the contract
			} else {
				tt.mutate(a, b)
			}
			d.check(now)
			if got := strings.Count(report, "tier"); (tt.wantHits == 0) != (got == 0) {
				t.Errorf("report %q, want %d objects reported", report, tt.wantHits)
			}
			if tt.wantHits > 0 && !strings.Contains(report, "2 cached object(s)") {
				t.Errorf("report %q does not list both pods sharing the labels", report)
			}
		})
	}
}

// eagerDedup makes every informer's table made during the test share
// values from their first sighting (eagerTable).
func eagerDedup(t *testing.T) {
	t.Helper()
	dedupOptions = dedup.Options{ShareFirstSighting: true}
	t.Cleanup(func() { dedupOptions = dedup.Options{} })
}

func TestParseDedupSwitch(t *testing.T) {
	tests := []struct {
		raw     string
		want    bool
		wantErr bool
	}{
		{"", true, false}, {"true", true, false}, {"TRUE", true, false}, {" True ", true, false},
		{"1", true, false}, {"on", true, false}, {"ON", true, false}, {"yes", true, false}, {"Yes", true, false},
		{"false", false, false}, {"FALSE", false, false}, {"0", false, false}, {"off", false, false},
		{"Off", false, false}, {"no", false, false}, {"NO", false, false},
		{"disabled", false, true}, {"enable", false, true}, {"2", false, true}, {"t", false, true}, {"tru", false, true},
	}
	for _, tt := range tests {
		got, err := parseDedupSwitch(tt.raw)
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("parseDedupSwitch(%q) = %v, %v; want %v, error %v", tt.raw, got, err, tt.want, tt.wantErr)
		}
		if err != nil && !strings.Contains(err.Error(), "off") {
			t.Errorf("parseDedupSwitch(%q)'s error %q does not name the accepted spellings", tt.raw, err)
		}
	}
}
