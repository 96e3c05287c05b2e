package cache

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/kcache/cache/internal/dedup"
	fcache "github.com/kcache/cache/testing"
	v1 "k8s.io/api/core/v1"
)

// An informer's queue compares an update with the object it replaces in
// the store.
func TestValueSharing_UpdateComparedWithCached(t *testing.T) {
	store := NewStore(MetaNamespaceKeyFunc)
	tf := eagerSharing().transform(nil, store)
	first, err := tf(safetyPod("web", 3))
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Add(first); err != nil {
		t.Fatal(err)
	}
	next := safetyPod("web", 3)
	next.ResourceVersion = "5"
	got, err := tf(next)
	if err != nil {
		t.Fatal(err)
	}
	a, b := first.(*v1.Pod), got.(*v1.Pod)
	if unsafe.StringData(a.Name) != unsafe.StringData(b.Name) {
		t.Error("the pod's name (looked up nowhere) is not the cached object's")
	}
	if !reflect.DeepEqual(b, next) {
		t.Error("the update's content changed")
	}
}

// kicked is a guard or compactor of an informer of the test that works
// only when kicked: each kick runs one round or compaction, whose count
// (of changed values found, of objects replaced) done then gets.
type kicked struct {
	kick chan struct{}
	done chan int
}

// serve runs work at each kick until ctx ends.
func (k *kicked) serve(ctx context.Context, work func() int) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-k.kick:
		}
		k.done <- work()
	}
}

// kickedCompactors makes every compactor run during the test compact only
// when kicked, and returns them as they start.
func kickedCompactors(t *testing.T) <-chan *kicked {
	made := make(chan *kicked, 4)
	runCompactor = func(c *dedup.Compactor, ctx context.Context) {
		k := &kicked{kick: make(chan struct{}), done: make(chan int)}
		made <- k
		k.serve(ctx, c.CompactAll)
	}
	t.Cleanup(func() { runCompactor = (*dedup.Compactor).Run })
	return made
}

// compactTestInformer runs an informer over src, indexed by app label, with
// a handler counting updates; it returns once the informer synced.
func compactTestInformer(t *testing.T, src *fcache.FakeControllerSource, updates *atomic.Int64, lastNew *atomic.Pointer[v1.Pod]) SharedIndexInformer {
	t.Helper()
	byApp := func(obj interface{}) ([]string, error) { return []string{obj.(*v1.Pod).Labels["app"]}, nil }
	inf := NewSharedIndexInformer(src, &v1.Pod{}, 0, Indexers{"app": byApp})
	_, err := inf.AddEventHandler(ResourceEventHandlerFuncs{UpdateFunc: func(_, newObj interface{}) {
		lastNew.Store(newObj.(*v1.Pod))
		updates.Add(1)
	}})
	if err != nil {
		t.Fatal(err)
	}
	runInformer(t, inf)
	return inf
}

func mustJSON(t *testing.T, obj interface{}) string {
	t.Helper()
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// An update is cached as the source returned it, as in client-go; once the
// compactor has run, the cache holds an equal object (byte for byte) whose
// unchanged parts are those of the object it replaced. The delivered object
// is never written, no event is delivered for the swap, and the index
// serves the new object under the same value.
func TestDedupCompactor_SharesAnUpdateAfterTheFact(t *testing.T) {
	compactors := kickedCompactors(t)
	src := fcache.NewFakeControllerSource()
	t.Cleanup(src.Shutdown)
	for i := range 4 {
		src.Add(safetyPod("web", i))
	}
	var updates atomic.Int64
	var lastNew atomic.Pointer[v1.Pod]
	inf := compactTestInformer(t, src, &updates, &lastNew)
	c := <-compactors
	before := cachedPods(t, inf)[0]

	changed := safetyPod("web", 0)
	changed.Labels = map[string]string{"app": "web", "tier": "web", "rollout": "2"}
	src.Modify(changed)
	waitFor(t, func() bool { return updates.Load() == 1 })
	delivered := lastNew.Load()
	snapshot := delivered.DeepCopy()
	if got, _, _ := inf.GetStore().Get(delivered); !sameObject(got, delivered) {
		t.Fatal("before compaction the cache does not hold the delivered object, as client-go would")
	}
	if sameSlice(delivered.Spec.Containers, before.Spec.Containers) {
		t.Fatal("the update shares its containers before compaction: the test proves nothing")
	}

	c.kick <- struct{}{}
	if n := <-c.done; n != 1 {
		t.Fatalf("compaction replaced %d objects, want 1", n)
	}
	got, _, _ := inf.GetStore().Get(delivered)
	after := got.(*v1.Pod)
	if sameObject(after, delivered) {
		t.Fatal("compaction left the delivered object in the cache")
	}
	if mustJSON(t, after) != mustJSON(t, snapshot) {
		t.Errorf("compacted object differs from the update:\n got %s\nwant %s", mustJSON(t, after), mustJSON(t, snapshot))
	}
	if !reflect.DeepEqual(delivered, snapshot) {
		t.Error("compaction wrote into the delivered object")
	}
	if !sameSlice(after.Spec.Containers, before.Spec.Containers) {
		t.Error("the compacted object does not share its unchanged containers with the object it replaced")
	}
	if sameMap(after.Labels, before.Labels) {
		t.Error("the compacted object shares the labels that changed")
	}
	objs, err := inf.GetIndexer().ByIndex("app", "web")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, obj := range objs {
		found = found || sameObject(obj, after)
	}
	if !found || len(objs) != 4 {
		t.Errorf("index serves %d objects (compacted one found: %v), want 4 with it", len(objs), found)
	}
	if n := updates.Load(); n != 1 {
		t.Errorf("handler saw %d updates, want 1: compaction delivers nothing", n)
	}
}

// What the compactor finds when it runs: a key updated again is compacted
// once, as its newest version; a deleted key is skipped; an unchanged
// resync of the same object compacts nothing.
func TestDedupCompactor_CompactsWhatTheCacheHolds(t *testing.T) {
	tests := []struct {
		name    string
		after   func(src *fcache.FakeControllerSource)
		updates int64
		want    int
		// tier is the label the cached pod has after compaction, ""
		// when it is gone.
		tier string
	}{
		{"one update", func(*fcache.FakeControllerSource) {}, 1, 1, "api"},
		{"updated twice", func(src *fcache.FakeControllerSource) {
			p := safetyPod("web", 0)
			p.Labels = map[string]string{"app": "web", "tier": "db"}
			src.Modify(p)
		}, 2, 1, "db"},
		{"deleted", func(src *fcache.FakeControllerSource) { src.Delete(safetyPod("web", 0)) }, 1, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			compactors := kickedCompactors(t)
			src := fcache.NewFakeControllerSource()
			t.Cleanup(src.Shutdown)
			src.Add(safetyPod("web", 0))
			src.Add(safetyPod("web", 1))
			var updates atomic.Int64
			var lastNew atomic.Pointer[v1.Pod]
			inf := compactTestInformer(t, src, &updates, &lastNew)
			c := <-compactors
			p := safetyPod("web", 0)
			p.Labels = map[string]string{"app": "web", "tier": "api"}
			src.Modify(p)
			tt.after(src)
			waitFor(t, func() bool {
				_, exists, _ := inf.GetStore().GetByKey("ns/web-0")
				return updates.Load() == tt.updates && exists == (tt.tier != "")
			})
			c.kick <- struct{}{}
			if n := <-c.done; n != tt.want {
				t.Errorf("compaction replaced %d objects, want %d", n, tt.want)
			}
			if tt.tier == "" {
				return
			}
			got, _, _ := inf.GetStore().GetByKey("ns/web-0")
			if tier := got.(*v1.Pod).Labels["tier"]; tier != tt.tier {
				t.Errorf("cached pod's tier %q after compaction, want %q", tier, tt.tier)
			}
		})
	}
}

// swapIfHeld replaces only the object the store holds, leaves the indexes
// and the recorded resource version alone, and reports what it did.
func TestThreadSafeMap_SwapIfHeld(t *testing.T) {
	byApp := func(obj interface{}) ([]string, error) { return []string{obj.(*v1.Pod).Labels["app"]}, nil }
	held := safetyPod("web", 0)
	equal := held.DeepCopy()
	equal.ResourceVersion = "9" // a swap must not record it
	tests := []struct {
		name   string
		key    string
		held   interface{}
		want   bool
		cached interface{}
	}{
		{"held", "ns/web-0", held, true, equal},
		{"another pointer", "ns/web-0", held.DeepCopy(), false, held},
		{"absent key", "ns/web-9", held, false, held},
		{"not a pointer", "ns/web-0", *held, false, held},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newThreadSafeMap(Indexers{"app": byApp}, nil)
			s.Add("ns/web-0", held)
			rv := s.rv
			if got := s.swapIfHeld(tt.key, tt.held, equal); got != tt.want {
				t.Errorf("swapIfHeld = %v, want %v", got, tt.want)
			}
			if got, _ := s.Get("ns/web-0"); !sameObject(got, tt.cached) {
				t.Errorf("store holds %p, want %p", got, tt.cached)
			}
			if s.rv != rv {
				t.Errorf("resource version %q recorded by the swap, want %q kept", s.rv, rv)
			}
			objs, err := s.ByIndex("app", "web")
			if err != nil || len(objs) != 1 || !sameObject(objs[0], tt.cached) {
				t.Errorf("index serves %v (%v), want the cached object", objs, err)
			}
		})
	}
}

// Readers of cached objects and of the objects delivered to handlers run
// beside updates and compactions without a data race (run with -race).
func TestDedupCompactor_ReadersDoNotRace(t *testing.T) {
	compactors := kickedCompactors(t)
	src := fcache.NewFakeControllerSource()
	t.Cleanup(src.Shutdown)
	const pods = 20
	for i := range pods {
		src.Add(safetyPod("web", i))
	}
	var updates atomic.Int64
	var lastNew atomic.Pointer[v1.Pod]
	inf := compactTestInformer(t, src, &updates, &lastNew)
	c := <-compactors
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				for _, obj := range inf.GetStore().List() {
					_ = fmt.Sprint(obj.(*v1.Pod).Spec.Containers, obj.(*v1.Pod).Labels)
				}
				if p := lastNew.Load(); p != nil {
					_ = mustJSON(t, p)
				}
			}
		})
	}
	for round := range 5 {
		for i := range pods {
			p := safetyPod("web", i)
			p.Labels["round"] = fmt.Sprint(round)
			src.Modify(p)
		}
		want := int64((round + 1) * pods)
		waitFor(t, func() bool { return updates.Load() == want })
		c.kick <- struct{}{}
		<-c.done
	}
	close(stop)
	wg.Wait()
	for _, p := range cachedPods(t, inf) {
		if p.Labels["round"] != "4" {
			t.Errorf("pod %s cached at round %q, want 4", p.Name, p.Labels["round"])
		}
	}
}

// Without a kick, the compactor's own clock compacts an update once it is
// quiet: eventually the cache holds an object sharing its containers with
// the object the update replaced.
func TestDedupCompactor_RunsOnItsOwn(t *testing.T) {
	src := fcache.NewFakeControllerSource()
	t.Cleanup(src.Shutdown)
	src.Add(safetyPod("web", 0))
	var updates atomic.Int64
	var lastNew atomic.Pointer[v1.Pod]
	inf := compactTestInformer(t, src, &updates, &lastNew)
	obj, _, _ := inf.GetStore().GetByKey("ns/web-0")
	before := obj.(*v1.Pod)
	p := safetyPod("web", 0)
	p.Annotations = map[string]string{"touched": "yes"}
	src.Modify(p)
	waitFor(t, func() bool {
		obj, _, _ := inf.GetStore().GetByKey("ns/web-0")
		got := obj.(*v1.Pod)
		return got.Annotations["touched"] == "yes" && sameSlice(got.Spec.Containers, before.Spec.Containers)
	})
}

// With sharing off for the informer there is no compactor: the cache keeps
// the delivered object.
func TestDedupCompactor_NoneWithoutSharing(t *testing.T) {
	src := fcache.NewFakeControllerSource()
	t.Cleanup(src.Shutdown)
	src.Add(safetyPod("web", 0))
	inf := NewSharedIndexInformer(src, &v1.Pod{}, 0, Indexers{})
	if err := SetValueSharing(inf, false); err != nil {
		t.Fatal(err)
	}
	runInformer(t, inf)
	s := inf.(*sharedIndexInformer)
	s.mu.Lock()
	q := s.controller.(*controller).config.Queue.(*RealFIFO)
	s.mu.Unlock()
	if q.sharing != nil {
		t.Fatal("an informer without sharing has a table, a guard or a compactor")
	}
	p := safetyPod("web", 0)
	p.ResourceVersion = "2"
	src.Modify(p)
	waitFor(t, func() bool {
		obj, _, _ := inf.GetStore().GetByKey("ns/web-0")
		return obj.(*v1.Pod).ResourceVersion == "2"
	})
}

// A program whose handlers keep every object they are given (as
// kube-scheduler's cache keeps assigned pods) would hold two objects per
// compacted update: the one it was given and the compacted copy. Once the
// compactor finds the objects it replaced still held after garbage
// collections, the informer shares updates as they arrive instead: the
// handler is given, and the cache holds, one object whose unchanged parts
// are those of the object it replaced.
func TestDedupCompactor_HandlersThatKeepObjectsGetUpdatesSharedOnArrival(t *testing.T) {
	src := fcache.NewFakeControllerSource()
	t.Cleanup(src.Shutdown)
	const pods = 40 // more than one window of the compactor's sample
	for i := range pods {
		src.Add(safetyPod("web", i))
	}
	var mu sync.Mutex // guards kept and updates
	kept := map[string]*v1.Pod{}
	updates := 0
	inf := NewSharedIndexInformer(src, &v1.Pod{}, 0, Indexers{})
	_, err := inf.AddEventHandler(ResourceEventHandlerFuncs{UpdateFunc: func(_, newObj interface{}) {
		p := newObj.(*v1.Pod)
		mu.Lock()
		defer mu.Unlock()
		kept[p.Name] = p
		updates++
	}})
	if err != nil {
		t.Fatal(err)
	}
	runInformer(t, inf)
	delivered := func() int { mu.Lock(); defer mu.Unlock(); return updates }

	for i := range pods {
		p := safetyPod("web", i)
		p.Annotations = map[string]string{"round": "1"}
		src.Modify(p)
	}
	waitFor(t, func() bool { return delivered() == pods })
	waitFor(t, func() bool { // every update compacted: the cache holds a copy
		mu.Lock()
		defer mu.Unlock()
		for name, p := range kept {
			if got, _, _ := inf.GetStore().GetByKey("ns/" + name); sameObject(got, p) {
				return false
			}
		}
		return true
	})

	round := 1
	waitFor(t, func() bool {
		runtime.GC()
		obj, _, _ := inf.GetStore().GetByKey("ns/web-0")
		before := obj.(*v1.Pod)
		round++
		p := safetyPod("web", 0)
		p.Annotations = map[string]string{"round": fmt.Sprint(round)}
		want := delivered() + 1
		src.Modify(p)
		waitFor(t, func() bool { return delivered() == want })
		mu.Lock()
		given := kept["web-0"]
		mu.Unlock()
		cached, _, _ := inf.GetStore().GetByKey("ns/web-0")
		return sameObject(cached, given) && sameSlice(given.Spec.Containers, before.Spec.Containers)
	})
}
