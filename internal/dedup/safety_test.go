package dedup

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// These tests hold sharing to what a default must be: scoped to one
// position, and returning its memory. The root package's tests hold it to
// the rest (one informer, read-race free, exact, behind a switch that
// fails closed).

// Equal values at different positions of one informer's objects (labels
// and annotations, a container's env and an init container's, nodeSelector
// and labels) are never one; equal values at one position are.
func TestDedup_OnlyAtTheSamePosition(t *testing.T) {
	mk := func(i int) *v1.Pod {
		p := dedupPod(1, i)
		p.Annotations = map[string]string{"app": "app-1", "tier": "web"}
		p.Spec.NodeSelector = map[string]string{"app": "app-1", "tier": "web"}
		p.Spec.InitContainers = []v1.Container{{Name: "app", Image: "registry/app-1:1.0", Env: []v1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "2"}}}}
		return p
	}
	s := eagerDeduper()
	a, b := dedupObj(s, mk(1)), dedupObj(s, mk(2))
	shared := []struct {
		name string
		one  bool
		want bool
	}{
		{"labels of two pods", sameMap(a.Labels, b.Labels), true},
		{"env of two pods", sameSlice(a.Spec.Containers[0].Env, b.Spec.Containers[0].Env), true},
		{"labels and annotations", sameMap(a.Labels, a.Annotations) || sameMap(a.Labels, b.Annotations), false},
		{"labels and nodeSelector", sameMap(a.Labels, a.Spec.NodeSelector), false},
		{"env and init env", sameSlice(a.Spec.Containers[0].Env, a.Spec.InitContainers[0].Env) || sameSlice(a.Spec.Containers[0].Env, b.Spec.InitContainers[0].Env), false},
		{"label value and annotation value", stringData(a.Labels["app"]) == stringData(b.Annotations["app"]), false},
		{"values under two keys", stringData(a.Labels["app"]) == stringData(a.Labels["tier"]), false},
	}
	for _, tt := range shared {
		if tt.one != tt.want {
			t.Errorf("%s: one value = %v, want %v", tt.name, tt.one, tt.want)
		}
	}
}

// settledHeap returns the live heap after collections that let the
// table's cleanups run.
func settledHeap() uint64 {
	var ms runtime.MemStats
	for range 3 {
		runtime.GC()
		time.Sleep(20 * time.Millisecond)
	}
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// tinyLeft is how many entries may outlive the objects: a short string
// shares its 16-byte block with other small allocations, and lives (and
// stays shareable) while any of them does.
const tinyLeft = 8

// After 10,000 pods with labels of their own are cached and deleted, the
// table gives back what they used: its entries go, and the live heap over
// the baseline is within 1 MB of what the same run leaves without sharing.
func TestDedup_MemoryReturned(t *testing.T) {
	const n = 10000
	run := func(dd *Table) uint64 {
		store := newObjectStore()
		share := func(obj interface{}) interface{} { return obj }
		if dd != nil {
			share = dd.Share
		}
		// The baseline is a warm informer: its plans, made by the first
		// object, stay as long as it runs.
		share(dedupPod(9, 0))
		base := settledHeap()
		for i := range n {
			p := dedupPod(1, i)
			p.Labels["pod"] = fmt.Sprintf("unique-%06d", i)
			p.UID = types.UID(fmt.Sprint("u", i))
			store.add(share(p))
		}
		store.clear()
		// The cleanups run on their own goroutine, one at a time: wait
		// for them (a slow machine, -race) before measuring.
		deadline := time.Now().Add(10 * time.Second)
		for dd != nil && tableSize(dd) > tinyLeft && time.Now().Before(deadline) {
			settledHeap()
		}
		after := settledHeap()
		runtime.KeepAlive(store)
		if after < base {
			return 0
		}
		return after - base
	}
	off := run(nil)
	s := eagerDeduper()
	on := run(s)
	if left := tableSize(s); left > tinyLeft {
		t.Errorf("%d table entries left after every object went", left)
	}
	t.Logf("live heap over baseline: %d B with sharing, %d B without", on, off)
	if on > off+1<<20 {
		t.Errorf("sharing keeps %d B after every object went, %d B more than without sharing (limit 1 MiB)", on, on-off)
	}
	runtime.KeepAlive(s)
}
