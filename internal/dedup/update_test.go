package dedup

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	fcache "github.com/kcache/cache/testing"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// An update takes the cached object's memory for every part equal to it,
// walks the parts that differ as a new object's, and writes into neither
// the update nor the cached object.
func TestDeduper_UpdateTakesEqualPartsOfCached(t *testing.T) {
	update := func(p *v1.Pod) *v1.Pod {
		p.ResourceVersion = "2"
		p.Labels["tier"] = "db"
		p.Status.ContainerStatuses[0].Ready = true
		return p
	}
	tests := []struct {
		name string
		got  func(cached, out, in *v1.Pod) bool
	}{
		{"containers are the cached array", func(c, o, _ *v1.Pod) bool { return sameSlice(c.Spec.Containers, o.Spec.Containers) }},
		{"managedFields are the cached array", func(c, o, _ *v1.Pod) bool { return sameSlice(c.ManagedFields, o.ManagedFields) }},
		{"equal name is the cached string", func(c, o, _ *v1.Pod) bool { return unsafe.StringData(c.Name) == unsafe.StringData(o.Name) }},
		{"changed labels are not the cached map", func(c, o, _ *v1.Pod) bool { return !sameMap(c.Labels, o.Labels) }},
		{"changed statuses are a copy of neither", func(c, o, in *v1.Pod) bool {
			return !sameSlice(c.Status.ContainerStatuses, o.Status.ContainerStatuses) && !sameSlice(in.Status.ContainerStatuses, o.Status.ContainerStatuses)
		}},
		{"in changed statuses, the equal container ID is the cached string", func(c, o, _ *v1.Pod) bool {
			return unsafe.StringData(c.Status.ContainerStatuses[0].ContainerID) == unsafe.StringData(o.Status.ContainerStatuses[0].ContainerID)
		}},
		{"changed resource version is the update's", func(_, o, in *v1.Pod) bool { return o.ResourceVersion == "2" }},
	}
	s := eagerDeduper()
	cached := dedupObj(s, dedupPod(1, 7))
	cachedRefs, cachedWant := references(cached), dedupPod(1, 7)
	in := update(dedupPod(1, 7))
	inRefs := references(in)
	out := s.dedupLike(in, cached).(*v1.Pod)
	if !reflect.DeepEqual(out, update(dedupPod(1, 7))) || !reflect.DeepEqual(in, update(dedupPod(1, 7))) {
		t.Fatal("the update's content changed")
	}
	if !reflect.DeepEqual(cached, cachedWant) || !slices.Equal(references(cached), cachedRefs) {
		t.Fatal("the cached object was written")
	}
	if !slices.Equal(references(in), inRefs) {
		t.Fatal("the update was written")
	}
	for _, tt := range tests {
		if !tt.got(cached, out, in) {
			t.Errorf("%s: no", tt.name)
		}
	}
}

// Whatever the twin, the result is deep-equal to the update and the
// inputs are left as they were.
func TestDeduper_UpdateAnyTwin(t *testing.T) {
	unstr := func(n int64) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]interface{}{"spec": map[string]interface{}{"n": n, "list": []interface{}{"a"}}}}
	}
	tests := []struct {
		name      string
		obj, twin func() interface{}
	}{
		{"equal pod", func() interface{} { return dedupPod(1, 1) }, func() interface{} { return dedupPod(1, 1) }},
		{"other pod", func() interface{} { return dedupPod(1, 1) }, func() interface{} { return dedupPod(2, 9) }},
		{"pod with fewer containers", func() interface{} { return dedupPod(1, 1) }, func() interface{} {
			p := dedupPod(1, 1)
			p.Spec.Containers = nil
			p.Labels = nil
			return p
		}},
		{"twin of another type", func() interface{} { return dedupPod(1, 1) }, func() interface{} { return &v1.Service{} }},
		{"nodes", func() interface{} { return newWalkNode(1) }, func() interface{} { return newWalkNode(2) }},
		{"unstructured", func() interface{} { return unstr(1) }, func() interface{} { return unstr(2) }},
		{"empty node beside a full one", func() interface{} { return &walkNode{} }, func() interface{} { return newWalkNode(1) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := eagerDeduper()
			twin := s.dedup(tt.twin())
			in := tt.obj()
			refs := references(in)
			out := s.dedupLike(in, twin)
			if !reflect.DeepEqual(out, tt.obj()) {
				t.Fatal("result differs from the update")
			}
			if !slices.Equal(references(in), refs) || !reflect.DeepEqual(in, tt.obj()) {
				t.Fatal("the update was written")
			}
			if !reflect.DeepEqual(twin, tt.twin()) {
				t.Fatal("the twin changed")
			}
		})
	}
}

// An informer's queue compares an update with the object it replaces in
// the store.
func TestWithDedup_UpdateComparedWithCached(t *testing.T) {
	s := eagerDeduper()
	store := NewStore(MetaNamespaceKeyFunc)
	tf := withDedup(nil, s, store, nil)
	first, err := tf(dedupPod(1, 3))
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Add(first); err != nil {
		t.Fatal(err)
	}
	next := dedupPod(1, 3)
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

// An update of an unstructured object takes, inside its content maps, the
// cached object's maps and strings wherever they are equal, under the
// same keys; what changed stays the update's own.
func TestDeduper_UnstructuredUpdateTakesEqualEntries(t *testing.T) {
	mk := func(rv, phase string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "example.com/v1", "kind": "Thing",
			"metadata": map[string]interface{}{"namespace": "ns", "name": "a", "resourceVersion": rv,
				"labels": map[string]interface{}{"app": "web"}},
			"spec":   map[string]interface{}{"replicas": int64(3), "template": map[string]interface{}{"image": "registry/web:1"}},
			"status": map[string]interface{}{"phase": phase},
		}}
	}
	s := eagerDeduper()
	cached := dedupObj(s, mk("1", "Pending"))
	want := mk("2", "Running")
	in := mk("2", "Running")
	out := s.dedupLike(in, cached).(*unstructured.Unstructured)
	if !reflect.DeepEqual(out, want) || !reflect.DeepEqual(in, want) || !reflect.DeepEqual(cached, mk("1", "Pending")) {
		t.Fatal("content changed, or the update or cached object was written")
	}
	mapOf := func(u *unstructured.Unstructured, keys ...string) map[string]interface{} {
		m := u.Object
		for _, k := range keys {
			m = m[k].(map[string]interface{})
		}
		return m
	}
	checks := []struct {
		name string
		one  bool
		want bool
	}{
		{"spec is the cached map", sameMap(mapOf(out, "spec"), mapOf(cached, "spec")), true},
		{"labels are the cached map", sameMap(mapOf(out, "metadata", "labels"), mapOf(cached, "metadata", "labels")), true},
		{"status is the update's", sameMap(mapOf(out, "status"), mapOf(in, "status")), true},
		{"metadata is a new map", sameMap(mapOf(out, "metadata"), mapOf(cached, "metadata")) || sameMap(mapOf(out, "metadata"), mapOf(in, "metadata")), false},
	}
	for _, c := range checks {
		if c.one != c.want {
			t.Errorf("%s: %v, want %v", c.name, c.one, c.want)
		}
	}
}

// An update whose slice grew takes the cached object's elements at the
// same indexes where they are equal (a managedFields entry added).
func TestDeduper_UpdateOfALongerSliceTakesEqualElements(t *testing.T) {
	s := eagerDeduper()
	cached := dedupObj(s, dedupPod(1, 7))
	in := dedupPod(1, 7)
	in.ResourceVersion = "2"
	in.ManagedFields = append(in.ManagedFields, in.ManagedFields[0])
	in.ManagedFields[1].Manager = "kubelet"
	out := s.dedupLike(in, cached).(*v1.Pod)
	if !reflect.DeepEqual(out, in) {
		t.Fatal("content changed")
	}
	if out.ManagedFields[0].FieldsV1 != cached.ManagedFields[0].FieldsV1 || out.ManagedFields[0].Time != cached.ManagedFields[0].Time {
		t.Error("the first entry's parts are not the cached ones")
	}
	if len(out.ManagedFields) != 2 || out.ManagedFields[1].Manager != "kubelet" {
		t.Errorf("managedFields = %+v", out.ManagedFields)
	}
}

// kickedCompactors makes every compactor made during the test compact only
// when kicked, and returns them as they are made.
func kickedCompactors(t *testing.T) <-chan *dedupCompactor {
	made := make(chan *dedupCompactor, 4)
	onNewDedupCompactor = func(c *dedupCompactor) {
		c.kick, c.done = make(chan struct{}), make(chan int)
		made <- c
	}
	t.Cleanup(func() { onNewDedupCompactor = nil })
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

// A key is due once quiet for compactQuiet, or once it has waited
// compactLongest however often it changes; the twin kept is the one the
// first update replaced.
func TestDedupCompactor_Due(t *testing.T) {
	t0 := time.Unix(1000, 0)
	first, second := safetyPod("web", 0), safetyPod("web", 1)
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
			c := &dedupCompactor{wake: make(chan struct{}, 1), pending: map[string]*pendingUpdate{}}
			for i, d := range tt.notes {
				twin := first
				if i > 0 {
					twin = second
				}
				c.note("ns/web-0", twin, t0.Add(d))
			}
			got := c.due(t0.Add(tt.now), false)
			if _, ok := got["ns/web-0"]; ok != tt.due {
				t.Fatalf("due = %v, want %v", ok, tt.due)
			}
			if tt.due && !sameObject(got["ns/web-0"], first) {
				t.Error("the twin kept is not the one the first update replaced")
			}
			if c.waiting() == tt.due {
				t.Errorf("waiting = %v after due = %v", c.waiting(), tt.due)
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
	made := make(chan *dedupCompactor, 1)
	onNewDedupCompactor = func(c *dedupCompactor) { made <- c }
	t.Cleanup(func() { onNewDedupCompactor = nil })
	src := fcache.NewFakeControllerSource()
	t.Cleanup(src.Shutdown)
	src.Add(safetyPod("web", 0))
	inf := NewSharedIndexInformer(src, &v1.Pod{}, 0, Indexers{})
	if err := SetValueSharing(inf, false); err != nil {
		t.Fatal(err)
	}
	runInformer(t, inf)
	select {
	case <-made:
		t.Fatal("a compactor was made for an informer without sharing")
	default:
	}
}
