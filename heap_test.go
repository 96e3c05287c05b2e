package cache

import (
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"sort"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// heapPod returns a pod whose Spec.Priority orders it in a test heap.
func heapPod(name string, priority int32) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Spec:       v1.PodSpec{Priority: &priority},
	}
}

// heapByPriority is the LessFunc of the test heaps: lowest priority first.
func heapByPriority(a, b interface{}) bool {
	return *a.(*v1.Pod).Spec.Priority < *b.(*v1.Pod).Spec.Priority
}

// heapOp is one step applied to a Heap in a table test.
type heapOp func(h *Heap) error

func heapAdd(name string, prio int32) heapOp {
	return func(h *Heap) error { return h.Add(heapPod(name, prio)) }
}

func heapUpdate(name string, prio int32) heapOp {
	return func(h *Heap) error { return h.Update(heapPod(name, prio)) }
}

func heapAddIfNotPresent(name string, prio int32) heapOp {
	return func(h *Heap) error { return h.AddIfNotPresent(heapPod(name, prio)) }
}

func heapDelete(name string) heapOp {
	return func(h *Heap) error { return h.Delete(heapPod(name, 0)) }
}

func heapBulkAdd(objs ...interface{}) heapOp {
	return func(h *Heap) error { return h.BulkAdd(objs) }
}

// heapDrain pops everything left in h and returns the popped pod names,
// each with its priority, in pop order.
func heapDrain(t *testing.T, h *Heap) []string {
	t.Helper()
	var out []string
	for len(h.ListKeys()) > 0 {
		obj, err := h.Pop()
		if err != nil {
			t.Fatalf("Pop: %v", err)
		}
		p := obj.(*v1.Pod)
		out = append(out, fmt.Sprintf("%s:%d", p.Name, *p.Spec.Priority))
	}
	return out
}

func TestHeap_PopsInLessOrderAfterEachKindOfWrite(t *testing.T) {
	cases := map[string]struct {
		ops      []heapOp
		wantErrs []bool
		wantPops []string
	}{
		"adds come out least first": {
			ops:      []heapOp{heapAdd("c", 3), heapAdd("a", 1), heapAdd("b", 2)},
			wantErrs: []bool{false, false, false},
			wantPops: []string{"a:1", "b:2", "c:3"},
		},
		"add of a held key replaces and reorders": {
			ops:      []heapOp{heapAdd("a", 1), heapAdd("b", 2), heapAdd("a", 9)},
			wantErrs: []bool{false, false, false},
			wantPops: []string{"b:2", "a:9"},
		},
		"update behaves as add, also for a new key": {
			ops:      []heapOp{heapUpdate("a", 5), heapAdd("b", 2), heapUpdate("b", 7)},
			wantErrs: []bool{false, false, false},
			wantPops: []string{"a:5", "b:7"},
		},
		"add if not present keeps the held object": {
			ops:      []heapOp{heapAdd("a", 5), heapAddIfNotPresent("a", 1), heapAddIfNotPresent("b", 3)},
			wantErrs: []bool{false, false, false},
			wantPops: []string{"b:3", "a:5"},
		},
		"delete removes from the middle": {
			ops:      []heapOp{heapAdd("a", 1), heapAdd("b", 2), heapAdd("c", 3), heapDelete("b")},
			wantErrs: []bool{false, false, false, false},
			wantPops: []string{"a:1", "c:3"},
		},
		"delete of an absent key fails and changes nothing": {
			ops:      []heapOp{heapAdd("a", 1), heapDelete("zz")},
			wantErrs: []bool{false, true},
			wantPops: []string{"a:1"},
		},
		"bulk add orders and replaces": {
			ops: []heapOp{
				heapAdd("a", 4),
				heapBulkAdd(heapPod("b", 3), heapPod("a", 1), heapPod("c", 2)),
			},
			wantErrs: []bool{false, false},
			wantPops: []string{"a:1", "c:2", "b:3"},
		},
		"bulk add keeps the objects before a key failure": {
			ops:      []heapOp{heapBulkAdd(heapPod("b", 2), "not an object", heapPod("a", 1))},
			wantErrs: []bool{true},
			wantPops: []string{"b:2"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			h := NewHeap(MetaNamespaceKeyFunc, heapByPriority)
			var gotErrs []bool
			for _, op := range tc.ops {
				gotErrs = append(gotErrs, op(h) != nil)
			}
			if diff := cmp.Diff(tc.wantErrs, gotErrs); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantPops, heapDrain(t, h)); diff != "" {
				t.Errorf("pop order (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHeap_KeyFailuresAreKeyErrors(t *testing.T) {
	panicky := func(obj interface{}) (string, error) { panic("boom") }
	cases := map[string]struct {
		keyFunc KeyFunc
		op      func(h *Heap) error
	}{
		"add without metadata":           {MetaNamespaceKeyFunc, func(h *Heap) error { return h.Add(42) }},
		"add if absent without metadata": {MetaNamespaceKeyFunc, func(h *Heap) error { return h.AddIfNotPresent(42) }},
		"delete without metadata":        {MetaNamespaceKeyFunc, func(h *Heap) error { return h.Delete(42) }},
		"get without metadata": {MetaNamespaceKeyFunc, func(h *Heap) error {
			_, _, err := h.Get(42)
			return err
		}},
		// A panicking key function panics the call, as in client-go.
		"key function panics":  {panicky, func(h *Heap) error { return h.Add(heapPod("a", 1)) }},
		"bulk add with panics": {panicky, func(h *Heap) error { return h.BulkAdd([]interface{}{heapPod("a", 1)}) }},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			h := NewHeap(tc.keyFunc, heapByPriority)
			var err error
			if p := capturePanic(func() { err = tc.op(h) }); p != nil {
				if p != "boom" {
					t.Fatalf("panic %v, want the key function's", p)
				}
			} else if keyErr := (KeyError{}); !errors.As(err, &keyErr) {
				t.Fatalf("got error %v, want a KeyError", err)
			}
			if got := len(h.List()); got != 0 {
				t.Errorf("heap holds %d objects after a failed write, want 0", got)
			}
		})
	}
}

func TestHeap_ReadersSeeHeldObjects(t *testing.T) {
	h := NewHeap(MetaNamespaceKeyFunc, heapByPriority)
	a, b := heapPod("a", 2), heapPod("b", 1)
	if err := h.BulkAdd([]interface{}{a, b}); err != nil {
		t.Fatal(err)
	}

	got, ok, err := h.Get(heapPod("a", 0))
	if err != nil || !ok || got != a {
		t.Errorf("Get(a) = %v, %v, %v; want the stored pod", got, ok, err)
	}
	got, ok, err = h.GetByKey("ns/b")
	if err != nil || !ok || got != b {
		t.Errorf("GetByKey(ns/b) = %v, %v, %v; want the stored pod", got, ok, err)
	}
	if _, ok, err := h.GetByKey("ns/zz"); ok || err != nil {
		t.Errorf("GetByKey(ns/zz) = _, %v, %v; want absent without error", ok, err)
	}

	keys := h.ListKeys()
	sort.Strings(keys)
	if diff := cmp.Diff([]string{"ns/a", "ns/b"}, keys); diff != "" {
		t.Errorf("ListKeys (-want +got):\n%s", diff)
	}
	list := h.List()
	if len(list) != 2 || !slices.Contains(list, interface{}(a)) || !slices.Contains(list, interface{}(b)) {
		t.Errorf("List = %v, want both pods", list)
	}
}

func TestHeap_ClosedHeapRefusesWritesButDrains(t *testing.T) {
	h := NewHeap(MetaNamespaceKeyFunc, heapByPriority)
	if err := h.BulkAdd([]interface{}{heapPod("a", 1), heapPod("b", 2), heapPod("c", 3)}); err != nil {
		t.Fatal(err)
	}
	if h.IsClosed() {
		t.Fatal("new heap reports closed")
	}
	h.Close()
	h.Close() // closing twice is harmless
	if !h.IsClosed() {
		t.Fatal("IsClosed is false after Close")
	}

	writes := map[string]func() error{
		"add":         func() error { return h.Add(heapPod("d", 4)) },
		"update":      func() error { return h.Update(heapPod("d", 4)) },
		"add if none": func() error { return h.AddIfNotPresent(heapPod("d", 4)) },
		"bulk add":    func() error { return h.BulkAdd([]interface{}{heapPod("d", 4)}) },
	}
	for name, write := range writes {
		t.Run(name, func(t *testing.T) {
			if err := write(); !errors.Is(err, errHeapClosed) {
				t.Errorf("got %v, want errHeapClosed", err)
			}
		})
	}

	if err := h.Delete(heapPod("b", 0)); err != nil {
		t.Errorf("Delete on a closed heap: %v", err)
	}
	if diff := cmp.Diff([]string{"a:1", "c:3"}, heapDrain(t, h)); diff != "" {
		t.Errorf("closed heap drains (-want +got):\n%s", diff)
	}
	if obj, err := h.Pop(); !errors.Is(err, errHeapClosed) || obj != nil {
		t.Errorf("Pop on empty closed heap = %v, %v; want nil, errHeapClosed", obj, err)
	}
}

func TestHeap_PopWaitsForAnObjectOrClose(t *testing.T) {
	type popResult struct {
		obj interface{}
		err error
	}
	cases := map[string]struct {
		wake     func(h *Heap)
		wantName string
		wantErr  bool
	}{
		"add wakes pop": {
			wake:     func(h *Heap) { _ = h.Add(heapPod("a", 1)) },
			wantName: "a",
		},
		"bulk add wakes pop with the least": {
			wake:     func(h *Heap) { _ = h.BulkAdd([]interface{}{heapPod("b", 2), heapPod("a", 1)}) },
			wantName: "a",
		},
		"add if not present wakes pop": {
			wake:     func(h *Heap) { _ = h.AddIfNotPresent(heapPod("a", 1)) },
			wantName: "a",
		},
		"close wakes pop with an error": {
			wake:    func(h *Heap) { h.Close() },
			wantErr: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := NewHeap(MetaNamespaceKeyFunc, heapByPriority)
				done := make(chan popResult, 1)
				go func() {
					obj, err := h.Pop()
					done <- popResult{obj, err}
				}()
				synctest.Wait()
				select {
				case r := <-done:
					t.Fatalf("Pop returned %v, %v before anything was added", r.obj, r.err)
				default:
				}
				tc.wake(h)
				r := <-done
				if tc.wantErr {
					if !errors.Is(r.err, errHeapClosed) {
						t.Errorf("Pop error = %v, want errHeapClosed", r.err)
					}
					return
				}
				if r.err != nil {
					t.Fatalf("Pop: %v", r.err)
				}
				if got := r.obj.(*v1.Pod).Name; got != tc.wantName {
					t.Errorf("Pop returned %q, want %q", got, tc.wantName)
				}
			})
		})
	}
}

// TestHeap_MatchesSortedModel drives random writes through a Heap and a
// plain map, then checks that popping yields the map's content in order.
func TestHeap_MatchesSortedModel(t *testing.T) {
	for seed := int64(1); seed <= 20; seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			h := NewHeap(MetaNamespaceKeyFunc, heapByPriority)
			model := map[string]int32{}
			for i := 0; i < 300; i++ {
				name := fmt.Sprintf("p%02d", rng.Intn(40))
				prio := int32(i) // distinct priorities keep the order total
				switch rng.Intn(5) {
				case 0, 1:
					_ = h.Add(heapPod(name, prio))
					model[name] = prio
				case 2:
					_ = h.AddIfNotPresent(heapPod(name, prio))
					if _, ok := model[name]; !ok {
						model[name] = prio
					}
				case 3:
					err := h.Delete(heapPod(name, 0))
					_, had := model[name]
					if (err == nil) != had {
						t.Fatalf("Delete(%s) error = %v, model had it: %v", name, err, had)
					}
					delete(model, name)
				case 4:
					if len(model) == 0 {
						continue
					}
					obj, err := h.Pop()
					if err != nil {
						t.Fatal(err)
					}
					p := obj.(*v1.Pod)
					for _, prio := range model {
						if prio < *p.Spec.Priority {
							t.Fatalf("Pop returned %s:%d while the model holds priority %d", p.Name, *p.Spec.Priority, prio)
						}
					}
					delete(model, p.Name)
				}
				checkKeyedHeapInvariants(t, &h.items)
			}
			names := make([]string, 0, len(model))
			for name := range model {
				names = append(names, name)
			}
			sort.Slice(names, func(i, j int) bool { return model[names[i]] < model[names[j]] })
			var want []string
			for _, name := range names {
				want = append(want, fmt.Sprintf("%s:%d", name, model[name]))
			}
			if diff := cmp.Diff(want, heapDrain(t, h)); diff != "" {
				t.Errorf("final drain (-want +got):\n%s", diff)
			}
		})
	}
}

// checkKeyedHeapInvariants fails the test if k's position map or heap
// order is broken.
func checkKeyedHeapInvariants(t *testing.T, k *keyedHeap) {
	t.Helper()
	if len(k.pos) != len(k.entries) {
		t.Fatalf("pos has %d keys for %d entries", len(k.pos), len(k.entries))
	}
	for i, e := range k.entries {
		if k.pos[e.key] != i {
			t.Fatalf("pos[%q] = %d, entry is at %d", e.key, k.pos[e.key], i)
		}
		if i > 0 && k.lessAt(i, (i-1)/2) {
			t.Fatalf("entry %d (%q) is less than its parent", i, e.key)
		}
	}
}

func TestHeap_ConcurrentProducersAndConsumersLoseNothing(t *testing.T) {
	const producers, perProducer = 4, 200
	h := NewHeap(MetaNamespaceKeyFunc, heapByPriority)
	popped := make(chan string, producers*perProducer)

	var consumers sync.WaitGroup
	for range 2 {
		consumers.Go(func() {
			for {
				obj, err := h.Pop()
				if err != nil {
					return
				}
				popped <- obj.(*v1.Pod).Name
			}
		})
	}
	var writers sync.WaitGroup
	for p := range producers {
		writers.Go(func() {
			for i := range perProducer {
				_ = h.Add(heapPod(fmt.Sprintf("w%d-%d", p, i), int32(i)))
			}
		})
	}
	writers.Wait()
	seen := map[string]bool{}
	for len(seen) < producers*perProducer {
		name := <-popped
		if seen[name] {
			t.Fatalf("%s popped twice", name)
		}
		seen[name] = true
	}
	h.Close()
	consumers.Wait()
}

// BenchmarkHeap_AddThenPop measures filling a heap of 1000 pods in reverse
// priority order and draining it.
func BenchmarkHeap_AddThenPop(b *testing.B) {
	const n = 1000
	pods := make([]*v1.Pod, n)
	for i := range pods {
		pods[i] = heapPod(fmt.Sprintf("p%04d", i), int32(n-i))
	}
	b.ReportAllocs()
	for b.Loop() {
		h := NewHeap(MetaNamespaceKeyFunc, heapByPriority)
		for _, p := range pods {
			if err := h.Add(p); err != nil {
				b.Fatal(err)
			}
		}
		for range n {
			if _, err := h.Pop(); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkHeap_UpdateHeldKey measures re-prioritising an object already in
// a heap of 1000.
func BenchmarkHeap_UpdateHeldKey(b *testing.B) {
	const n = 1000
	h := NewHeap(MetaNamespaceKeyFunc, heapByPriority)
	pods := make([]*v1.Pod, n)
	for i := range pods {
		pods[i] = heapPod(fmt.Sprintf("p%04d", i), int32(i))
		if err := h.Add(pods[i]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if err := h.Update(pods[i%n]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
