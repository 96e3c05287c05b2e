package cache

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/klog/v2"
)

func TestWithValueSharing(t *testing.T) {
	errTransform := errors.New("transform failed")
	tests := []struct {
		name      string
		transform TransformFunc
		sharer    *valueSharer
		wantErr   error
		wantShare bool
	}{
		{"sharing off, no transform", nil, nil, nil, false},
		{"sharing on, no transform", nil, newValueSharer(), nil, true},
		{"sharing on after a transform", func(obj interface{}) (interface{}, error) { return obj, nil }, newValueSharer(), nil, true},
		{"a failed transform shares nothing", func(interface{}) (interface{}, error) { return nil, errTransform }, newValueSharer(), errTransform, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tf := withValueSharing(tt.transform, tt.sharer)
			if tf == nil {
				if tt.wantShare || tt.transform != nil {
					t.Fatal("no transform returned")
				}
				return
			}
			a, b := sharePod(1, 1), sharePod(1, 2)
			want := b.DeepCopy()
			if _, err := tf(a); !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			out, err := tf(b)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if err == nil && !reflect.DeepEqual(out, want) {
				t.Error("the transformed object differs from its input")
			}
			if got := sameMap(a.Labels, b.Labels); got != tt.wantShare {
				t.Errorf("labels shared = %v, want %v", got, tt.wantShare)
			}
		})
	}
}

// The mutation detector still passes for shared objects and still catches
// a caller that modifies a shared part; the modification shows in every
// object sharing it.
func TestValueSharer_MutationDetector(t *testing.T) {
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
			s := newValueSharer()
			a, b := sharePod(1, 1), sharePod(1, 2)
			s.share(a)
			s.share(b)
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
