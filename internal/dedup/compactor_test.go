package dedup

import (
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// A key is due once quiet for compactQuiet, or once it has waited
// compactLongest however often it changes; the twin kept is the one the
// first update replaced.
func TestCompactor_Due(t *testing.T) {
	t0 := time.Unix(1000, 0)
	first, second := dedupPod(1, 0), dedupPod(1, 1)
	tests := []struct {
		name  string
		notes []time.Duration
		now   time.Duration
		due   bool
	}{
		{"just updated", []time.Duration{0}, tuning.compactQuiet / 2, false},
		{"quiet long enough", []time.Duration{0}, tuning.compactQuiet, true},
		{"updated again since", []time.Duration{0, tuning.compactQuiet}, tuning.compactQuiet * 3 / 2, false},
		{"quiet after the last update", []time.Duration{0, tuning.compactQuiet}, 2 * tuning.compactQuiet, true},
		{"busy but waited longest", []time.Duration{0, tuning.compactLongest - tuning.compactQuiet/2}, tuning.compactLongest, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewCompactor(New(Options{}), newObjectStore())
			for i, d := range tt.notes {
				twin := first
				if i > 0 {
					twin = second
				}
				c.Note("ns/web-0", twin, t0.Add(d))
			}
			got := c.due(t0.Add(tt.now), false)
			if _, ok := got["ns/web-0"]; ok != tt.due {
				t.Fatalf("due = %v, want %v", ok, tt.due)
			}
			if tt.due && got["ns/web-0"] != interface{}(first) {
				t.Error("the twin kept is not the one the first update replaced")
			}
			if c.waiting() == tt.due {
				t.Errorf("waiting = %v after due = %v", c.waiting(), tt.due)
			}
		})
	}
}

// CompactAll replaces each noted object the store still holds by an equal
// one whose unchanged parts are its twin's, and leaves alone a key whose
// object is gone or holds nothing to share.
func TestCompactor_CompactAll(t *testing.T) {
	s := eagerDeduper()
	store := newObjectStore()
	c := NewCompactor(s, store)
	twins := map[string]*v1.Pod{}
	for i := range 3 {
		p := s.Share(dedupPod(1, i)).(*v1.Pod)
		key, _ := objectKey(p)
		twins[key] = p
		store.add(p)
	}
	updated := dedupPod(1, 0)
	updated.ResourceVersion = "2"
	store.add(updated)
	c.Note("ns-1/app-1-00000", twins["ns-1/app-1-00000"], time.Now())
	c.Note("ns-1/app-1-00001", twins["ns-1/app-1-00001"], time.Now()) // cached as shared already
	c.Note("ns-1/gone", twins["ns-1/app-1-00002"], time.Now())
	want := updated.DeepCopy()
	if n := c.CompactAll(); n != 1 {
		t.Fatalf("CompactAll replaced %d objects, want 1", n)
	}
	obj, _, _ := store.GetByKey("ns-1/app-1-00000")
	got := obj.(*v1.Pod)
	if got == updated || !reflect.DeepEqual(got, want) || !reflect.DeepEqual(updated, want) {
		t.Fatal("the cached update was not replaced by an equal copy, or was written")
	}
	if !sameSlice(got.Spec.Containers, twins["ns-1/app-1-00000"].Spec.Containers) {
		t.Error("the copy does not share its unchanged containers with its twin")
	}
	if c.waiting() {
		t.Error("keys still wait after CompactAll")
	}
}
