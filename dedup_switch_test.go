package cache

import (
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
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
			tf := withValueSharing(tt.transform, tt.sharer, nil, nil)
			if tf == nil {
				if tt.wantShare || tt.transform != nil {
					t.Fatal("no transform returned")
				}
				return
			}
			a, b := sharePod(1, 1), sharePod(1, 2)
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
			if got := sameMap(outA.(*v1.Pod).Labels, outB.(*v1.Pod).Labels); got != tt.wantShare {
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
			a, b := shareObj(s, sharePod(1, 1)), shareObj(s, sharePod(1, 2))
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

// Two informers' transforms fed the same object pointers at once, while
// others read those objects: the inputs are never written (the race
// detector would see it), each cached object is deep-equal to its input,
// and equal parts of the two informers' objects are one.
func TestShareCopy_SameInputsConcurrently(t *testing.T) {
	const n = 50
	inputs := make([]*v1.Pod, n)
	wants := make([]*v1.Pod, n)
	for i := range inputs {
		inputs[i] = sharePod(i%5, i)
		wants[i] = inputs[i].DeepCopy()
	}
	sharer := newValueSharer()
	outs := [2][]*v1.Pod{make([]*v1.Pod, n), make([]*v1.Pod, n)}
	var wg sync.WaitGroup
	for inf := range outs {
		tf := withValueSharing(nil, sharer, nil, nil)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i, in := range inputs {
				out, err := tf(in)
				if err != nil {
					t.Errorf("transform: %v", err)
					return
				}
				outs[inf][i] = out.(*v1.Pod)
			}
		}()
	}
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i, in := range inputs {
				if !reflect.DeepEqual(in, wants[i]) {
					t.Errorf("input %d changed while read", i)
				}
			}
		}()
	}
	wg.Wait()
	for i := range inputs {
		for inf := range outs {
			if !reflect.DeepEqual(outs[inf][i], wants[i]) {
				t.Errorf("informer %d's object %d differs from its input", inf, i)
			}
		}
		if !reflect.DeepEqual(inputs[i], wants[i]) {
			t.Errorf("input %d was modified", i)
		}
	}
	if !sameMap(outs[0][0].Labels, outs[1][5].Labels) {
		t.Error("equal labels of the two informers' objects are not one")
	}
}

// A DeepCopy of a cached, shared object is its own: modifying it changes
// no cached object.
func TestShareCopy_DeepCopyIndependent(t *testing.T) {
	sharer := newValueSharer()
	a := shareCopy(sharer, sharePod(1, 1)).(*v1.Pod)
	b := shareCopy(sharer, sharePod(1, 2)).(*v1.Pod)
	if !sameMap(a.Labels, b.Labels) {
		t.Fatal("labels not shared; the test proves nothing")
	}
	wantA, wantB := a.DeepCopy(), b.DeepCopy()
	c := a.DeepCopy()
	c.Labels["tier"] = "db"
	c.Spec.Containers[0].Env[0].Value = "changed"
	c.Spec.Containers[0].ReadinessProbe.Exec.Command[0] = "false"
	c.ManagedFields[0].Manager = "other"
	c.Spec.Containers = append(c.Spec.Containers, v1.Container{Name: "extra"})
	if !reflect.DeepEqual(a, wantA) || !reflect.DeepEqual(b, wantB) {
		t.Error("modifying a deep copy changed a cached object")
	}
}

// Values that are not runtime.Objects are kept as given, unshared, and a
// nil object stays nil.
func TestShareCopy_NotAnObject(t *testing.T) {
	sharer := newValueSharer()
	m := map[string]string{"a": "b"}
	if got := shareCopy(sharer, m).(map[string]string); !sameMap(got, m) {
		t.Error("a plain map was replaced")
	}
	var nilPod *v1.Pod
	if got := shareCopy(sharer, nilPod); got != interface{}(nilPod) {
		t.Errorf("nil pod became %v", got)
	}
}
