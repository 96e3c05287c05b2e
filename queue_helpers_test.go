package cache

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Helpers shared by the queue tests.

// testPod returns a Pod in namespace "ns"; rv tells versions apart.
func queuePod(name, rv string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv}}
}

// podKey is the MetaNamespaceKeyFunc key of queuePod(name, ...).
func podKey(name string) string { return "ns/" + name }

// objs turns its arguments into a list for Replace.
func objs(items ...interface{}) []interface{} { return items }

// tombstone is the DeletedFinalStateUnknown a queue makes for name.
func tombstone(name string, last interface{}) DeletedFinalStateUnknown {
	return DeletedFinalStateUnknown{Key: podKey(name), Obj: last}
}

// fakeKnown is a map-backed KeyListerGetter standing in for an informer's
// store. ListKeys is sorted, so tests see a fixed order. A key can be made
// to fail its lookup, or to vanish: listed, but absent for GetByKey.
type fakeKnown struct {
	mu       sync.Mutex
	objs     map[string]interface{}
	failing  map[string]bool
	vanished map[string]bool
}

func newFakeKnown(pods ...*v1.Pod) *fakeKnown {
	k := &fakeKnown{objs: map[string]interface{}{}, failing: map[string]bool{}, vanished: map[string]bool{}}
	for _, p := range pods {
		k.objs[podKey(p.Name)] = p
	}
	return k
}

func (k *fakeKnown) ListKeys() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	keys := make([]string, 0, len(k.objs)+len(k.vanished))
	for key := range k.objs {
		keys = append(keys, key)
	}
	for key := range k.vanished {
		if _, ok := k.objs[key]; !ok {
			keys = append(keys, key)
		}
	}
	slices.Sort(keys)
	return keys
}

func (k *fakeKnown) GetByKey(key string) (interface{}, bool, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.failing[key] {
		return nil, false, fmt.Errorf("lookup of %q failed", key)
	}
	if k.vanished[key] {
		return nil, false, nil
	}
	obj, ok := k.objs[key]
	return obj, ok, nil
}

func (k *fakeKnown) set(key string, obj interface{}) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.objs[key] = obj
}

func (k *fakeKnown) remove(key string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.objs, key)
}

// popped is what one Pop handed to its process function.
type popped struct {
	Obj     interface{}
	Initial bool
}

// queuedLen returns how many Pops can run without blocking.
func queuedLen(q Queue) int {
	switch f := q.(type) {
	case *FIFO:
		f.mu.Lock()
		defer f.mu.Unlock()
		live := 0
		for _, s := range f.slots {
			if !s.deleted {
				live++
			}
		}
		return live
	case *DeltaFIFO:
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.book.len()
	case *RealFIFO:
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.queue.len()
	}
	panic(fmt.Sprintf("unknown queue %T", q))
}

// popNow pops one item, failing the test instead of blocking if the queue
// is empty.
func popNow(t *testing.T, q Queue) popped {
	t.Helper()
	if queuedLen(q) == 0 {
		t.Fatalf("pop: queue is empty")
	}
	var got popped
	calls := 0
	_, err := q.Pop(func(obj interface{}, isInInitialList bool) error {
		calls++
		got = popped{Obj: obj, Initial: isInInitialList}
		return nil
	})
	if err != nil {
		t.Fatalf("pop: %v", err)
	}
	if calls != 1 {
		t.Fatalf("pop: process called %d times, want 1", calls)
	}
	return got
}

// drain closes q and pops everything left.
func drain(t *testing.T, q Queue) []popped {
	t.Helper()
	q.Close()
	var out []popped
	for {
		_, err := q.Pop(func(obj interface{}, isInInitialList bool) error {
			out = append(out, popped{Obj: obj, Initial: isInInitialList})
			return nil
		})
		if errors.Is(err, ErrFIFOClosed) {
			return out
		}
		if err != nil {
			t.Fatalf("drain: %v", err)
		}
	}
}

// drainObjs is drain without the isInInitialList flags.
func drainObjs(t *testing.T, q Queue) []interface{} {
	t.Helper()
	var out []interface{}
	for _, p := range drain(t, q) {
		out = append(out, p.Obj)
	}
	return out
}

// mustOK fails the test on err.
func mustOK(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// queueOp is one step of a table test; it fails the test on an error.
type queueOp func(t *testing.T, q Queue)

func opAdd(obj interface{}) queueOp {
	return func(t *testing.T, q Queue) { t.Helper(); mustOK(t, q.Add(obj)) }
}

func opUpdate(obj interface{}) queueOp {
	return func(t *testing.T, q Queue) { t.Helper(); mustOK(t, q.Update(obj)) }
}

func opDelete(obj interface{}) queueOp {
	return func(t *testing.T, q Queue) { t.Helper(); mustOK(t, q.Delete(obj)) }
}

func opReplace(list ...interface{}) queueOp {
	return func(t *testing.T, q Queue) { t.Helper(); mustOK(t, q.Replace(list, "7")) }
}

func opResync() queueOp {
	return func(t *testing.T, q Queue) { t.Helper(); mustOK(t, q.Resync()) }
}

// opPop pops one item and drops it.
func opPop() queueOp {
	return func(t *testing.T, q Queue) { t.Helper(); popNow(t, q) }
}

func runOps(t *testing.T, q Queue, ops []queueOp) {
	t.Helper()
	for _, op := range ops {
		op(t, q)
	}
}

// countingTransform returns a transform that labels a copy of each Pod
// "transformed" and counts its calls; other objects fail.
func countingTransform() (TransformFunc, *int) {
	var mu sync.Mutex
	calls := 0
	return func(obj interface{}) (interface{}, error) {
		mu.Lock()
		calls++
		mu.Unlock()
		p, ok := obj.(*v1.Pod)
		if !ok {
			return nil, fmt.Errorf("cannot transform %T", obj)
		}
		return transformedPod(p), nil
	}, &calls
}

// transformedPod is what countingTransform makes of p.
func transformedPod(p *v1.Pod) *v1.Pod {
	out := p.DeepCopy()
	out.Labels = map[string]string{"transformed": "true"}
	return out
}

// noMeta is an object without object metadata: it has no key.
type noMeta struct{ Name string }
