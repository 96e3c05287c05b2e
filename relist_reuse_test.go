package cache

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// reusePod is queuePod with a UID.
func reusePod(name, uid, rv string) *v1.Pod {
	p := queuePod(name, rv)
	p.UID = types.UID(uid)
	return p
}

// panickingGetter is a KeyGetter whose lookups panic.
type panickingGetter struct{}

func (panickingGetter) GetByKey(string) (interface{}, bool, error) { panic("lookup exploded") }

// failingGetter is a KeyGetter whose lookups fail.
type failingGetter struct{}

func (failingGetter) GetByKey(string) (interface{}, bool, error) {
	return nil, false, errors.New("lookup failed")
}

func TestReuseCached_KeepsTheCachedObjectOnlyForTheSameVersion(t *testing.T) {
	cachedPod := reusePod("p", "uid-1", "7")
	unversioned := reusePod("p", "uid-1", "")
	cases := map[string]struct {
		cached    KeyGetter
		listed    interface{}
		wantReuse bool
	}{
		"same UID and resource version": {
			cached: newFakeKnown(cachedPod), listed: reusePod("p", "uid-1", "7"), wantReuse: true,
		},
		"newer resource version": {
			cached: newFakeKnown(cachedPod), listed: reusePod("p", "uid-1", "8"),
		},
		"recreated under the same name with the same resource version": {
			cached: newFakeKnown(cachedPod), listed: reusePod("p", "uid-2", "7"),
		},
		"no resource version on either side": {
			cached: newFakeKnown(unversioned), listed: reusePod("p", "uid-1", ""),
		},
		"key not cached": {
			cached: newFakeKnown(reusePod("other", "uid-1", "7")), listed: reusePod("p", "uid-1", "7"),
		},
		"cached object of another type": {
			cached: &fakeKnown{objs: map[string]interface{}{podKey("p"): &v1.Service{ObjectMeta: cachedPod.ObjectMeta}}},
			listed: reusePod("p", "uid-1", "7"),
		},
		"listed object without metadata": {
			cached: newFakeKnown(cachedPod), listed: "not an object",
		},
		"no cache": {
			cached: nil, listed: reusePod("p", "uid-1", "7"),
		},
		"lookup fails": {
			cached: failingGetter{}, listed: reusePod("p", "uid-1", "7"),
		},
		"lookup panics": {
			cached: panickingGetter{}, listed: reusePod("p", "uid-1", "7"),
		},
		"listed nil pointer": {
			cached: newFakeKnown(cachedPod), listed: (*v1.Pod)(nil),
		},
		"listed nil": {
			cached: newFakeKnown(cachedPod), listed: nil,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := reuseCached(tc.cached, podKey("p"), tc.listed)
			want := tc.listed
			if tc.wantReuse {
				want = cachedPod
			}
			if got != want {
				t.Errorf("reuseCached returned %s (%p), want %s", rfDescribe(got), got, rfDescribe(want))
			}
		})
	}
}

// preparingQueue is a queue under test for prepareListed, built with a
// transformer and, when the queue has a place for it, the consumer's cache.
type preparingQueue struct {
	build func(cache KeyListerGetter, tr TransformFunc) listPreparer
	// caches says whether the queue reads the consumer's cache at all.
	caches bool
	// keysLater says whether keys are left to the consumer (AtomicEvents):
	// Replace does not fail on an object without a key.
	keysLater bool
}

func preparingQueues() map[string]preparingQueue {
	return map[string]preparingQueue{
		"DeltaFIFO with KnownObjects": {caches: true, build: func(c KeyListerGetter, tr TransformFunc) listPreparer {
			return NewDeltaFIFOWithOptions(DeltaFIFOOptions{KnownObjects: c, Transformer: tr, EmitDeltaTypeReplaced: true})
		}},
		"DeltaFIFO without KnownObjects": {build: func(_ KeyListerGetter, tr TransformFunc) listPreparer {
			return NewDeltaFIFOWithOptions(DeltaFIFOOptions{Transformer: tr, EmitDeltaTypeReplaced: true})
		}},
		"RealFIFO": {caches: true, build: func(c KeyListerGetter, tr TransformFunc) listPreparer {
			return NewRealFIFOWithOptions(RealFIFOOptions{KnownObjects: c, Transformer: tr})
		}},
		"atomic RealFIFO given the informer's cache": {caches: true, keysLater: true, build: func(c KeyListerGetter, tr TransformFunc) listPreparer {
			f := NewRealFIFOWithOptions(RealFIFOOptions{AtomicEvents: true, Transformer: tr})
			f.consumerCache = c
			return f
		}},
		"atomic RealFIFO on its own": {keysLater: true, build: func(_ KeyListerGetter, tr TransformFunc) listPreparer {
			return NewRealFIFOWithOptions(RealFIFOOptions{AtomicEvents: true, Transformer: tr})
		}},
	}
}

func TestQueuePrepareListed_ReusesTheConsumersObjectAfterTheTransform(t *testing.T) {
	cachedPod := reusePod("p", "uid-1", "7")
	// keepVersion changes the pod but not its version: the cached object,
	// transformed on its way in, has the same UID and resource version.
	keepVersion := func(obj interface{}) (interface{}, error) {
		p := obj.(*v1.Pod).DeepCopy()
		p.Spec.Hostname = "transformed"
		return p, nil
	}
	// bumpVersion changes the resource version, so nothing can match.
	bumpVersion := func(obj interface{}) (interface{}, error) {
		p := obj.(*v1.Pod).DeepCopy()
		p.ResourceVersion += "-t"
		return p, nil
	}
	cases := map[string]struct {
		listed    *v1.Pod
		transform TransformFunc
		wantReuse bool
	}{
		"same version, no transform":              {listed: reusePod("p", "uid-1", "7"), wantReuse: true},
		"same version, transform keeps version":   {listed: reusePod("p", "uid-1", "7"), transform: keepVersion, wantReuse: true},
		"same version, transform changes version": {listed: reusePod("p", "uid-1", "7"), transform: bumpVersion},
		"different resource version":              {listed: reusePod("p", "uid-1", "8")},
		"different UID":                           {listed: reusePod("p", "uid-2", "7")},
		"empty resource version":                  {listed: reusePod("p", "uid-1", "")},
		"key absent":                              {listed: reusePod("q", "uid-1", "7")},
	}
	for qname, q := range preparingQueues() {
		for name, tc := range cases {
			t.Run(qname+"/"+name, func(t *testing.T) {
				calls := 0
				var tr TransformFunc
				if tc.transform != nil {
					tr = func(obj interface{}) (interface{}, error) {
						calls++
						return tc.transform(obj)
					}
				}
				queue := q.build(newFakeKnown(cachedPod), tr)
				got, err := queue.prepareListed(tc.listed)
				if err != nil {
					t.Fatalf("prepareListed: %v", err)
				}
				if tc.transform != nil && calls != 1 {
					t.Errorf("transform called %d times, want once", calls)
				}
				reused := got == interface{}(cachedPod)
				if want := tc.wantReuse && q.caches; reused != want {
					t.Errorf("prepareListed returned %s: cached object reused = %v, want %v", rfDescribe(got), reused, want)
				}
				if !reused && tc.transform == nil && got != interface{}(tc.listed) {
					t.Errorf("prepareListed returned %p, want the listed object %p", got, tc.listed)
				}
			})
		}
	}
}

func TestQueuePrepareListed_FailsAsReplaceWould(t *testing.T) {
	failing := func(interface{}) (interface{}, error) { return nil, errors.New("transform refused") }
	cases := map[string]struct {
		listed    interface{}
		transform TransformFunc
		// wantErr is the exact error, as client-go's Replace returns it;
		// wantPanic the exact panic.
		wantErr, wantPanic string
		// keyless says the failure is a missing key.
		keyless bool
	}{
		"object without a key":  {listed: "not an object", wantErr: "couldn't create key for object not an object: object has no meta: object does not implement the Object interfaces", keyless: true},
		"transform that fails":  {listed: reusePod("p", "uid-1", "7"), transform: failing, wantErr: "transform refused"},
		"transform that panics": {listed: reusePod("p", "uid-1", "7"), transform: func(interface{}) (interface{}, error) { panic("boom") }, wantPanic: "boom"},
	}
	for qname, q := range preparingQueues() {
		for name, tc := range cases {
			t.Run(qname+"/"+name, func(t *testing.T) {
				queue := q.build(newFakeKnown(), tc.transform)
				var got interface{}
				var err error
				p := capturePanic(func() { got, err = queue.prepareListed(tc.listed) })
				if fmt.Sprint(p) != tc.wantPanic && (p != nil || tc.wantPanic != "") {
					t.Fatalf("prepareListed panicked with %v, want %q", p, tc.wantPanic)
				}
				if tc.wantPanic != "" {
					return
				}
				if tc.keyless && q.keysLater {
					if err != nil || got != tc.listed {
						t.Errorf("prepareListed = %v, %v; want the object as it is, for the consumer to refuse", got, err)
					}
					return
				}
				if errText(err) != tc.wantErr {
					t.Errorf("prepareListed error = %v, want %q", err, tc.wantErr)
				}
			})
		}
	}
}

func TestInitialEvents_KeepsTheNewestStateOfEachKeyInArrivalOrder(t *testing.T) {
	p := func(name, rv string) *v1.Pod { return reusePod(name, "uid-"+name, rv) }
	cases := map[string]struct {
		ops  func(e *initialEvents) error
		want []string
	}{
		"adds": {
			ops: func(e *initialEvents) error {
				return errors.Join(e.Add(p("b", "1")), e.Add(p("a", "2")), e.Add(p("c", "3")))
			},
			want: []string{"b@1", "a@2", "c@3"},
		},
		"an update keeps the first position": {
			ops: func(e *initialEvents) error {
				return errors.Join(e.Add(p("a", "1")), e.Add(p("b", "2")), e.Update(p("a", "3")))
			},
			want: []string{"a@3", "b@2"},
		},
		"a delete leaves no hole": {
			ops: func(e *initialEvents) error {
				return errors.Join(e.Add(p("a", "1")), e.Add(p("b", "2")), e.Add(p("c", "3")), e.Delete(p("b", "4")))
			},
			want: []string{"a@1", "c@3"},
		},
		"re-added after a delete goes last": {
			ops: func(e *initialEvents) error {
				return errors.Join(e.Add(p("a", "1")), e.Add(p("b", "2")), e.Delete(p("a", "3")), e.Add(p("a", "4")))
			},
			want: []string{"b@2", "a@4"},
		},
		"deleting an unknown key": {
			ops: func(e *initialEvents) error {
				return errors.Join(e.Add(p("a", "1")), e.Delete(p("z", "2")))
			},
			want: []string{"a@1"},
		},
		"replace starts over": {
			ops: func(e *initialEvents) error {
				return errors.Join(e.Add(p("a", "1")), e.Replace([]interface{}{p("c", "5"), p("b", "6")}, "6"), e.Resync())
			},
			want: []string{"c@5", "b@6"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := newInitialEvents(nil)
			if err := tc.ops(e); err != nil {
				t.Fatal(err)
			}
			got := []string{}
			for _, obj := range e.list() {
				got = append(got, rfDescribe(obj))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("collected objects (-want +got):\n%s", diff)
			}
		})
	}
}

func TestInitialEvents_PreparesEveryObjectAndReportsFailures(t *testing.T) {
	var prepared []string
	e := newInitialEvents(func(obj interface{}) (interface{}, error) {
		p := obj.(*v1.Pod)
		prepared = append(prepared, p.Name)
		switch p.Name {
		case "bad":
			return nil, fmt.Errorf("refusing %s", p.Name)
		case "nil-pointer":
			return (*v1.Pod)(nil), nil
		case "nil":
			return nil, nil
		}
		return obj, nil
	})
	if err := e.Add(reusePod("a", "u", "1")); err != nil {
		t.Fatal(err)
	}
	if err := e.Add(reusePod("bad", "u", "2")); err == nil {
		t.Error("Add of an object prepare refuses succeeded")
	}
	if err := e.Add("no key"); err == nil {
		t.Error("Add of an object without a key succeeded")
	}
	// client-go's temporary store keys the object before transforming it,
	// so a nil pointer is kept too; it panics later, when a key of it is
	// needed.
	if err := e.Add(reusePod("nil-pointer", "u", "3")); err != nil {
		t.Errorf("Add of an object prepared into a nil pointer: %v, want it kept", err)
	}
	if err := e.Add(reusePod("nil", "u", "4")); err != nil {
		t.Errorf("Add of an object prepared into nil: %v, want it kept for Replace to refuse", err)
	}
	if diff := cmp.Diff([]string{"a", "bad", "nil-pointer", "nil"}, prepared); diff != "" {
		t.Errorf("prepared objects (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"a@1", "nil *v1.Pod", "nil"}, describeAll(e.list())); diff != "" {
		t.Errorf("collected objects (-want +got):\n%s", diff)
	}
}

// describeAll describes objs with rfDescribe, nil as "nil".
func describeAll(objs []interface{}) []string {
	out := []string{}
	for _, obj := range objs {
		switch {
		case obj == nil:
			out = append(out, "nil")
		case isNilPointer(obj):
			out = append(out, fmt.Sprintf("nil %T", obj))
		default:
			out = append(out, rfDescribe(obj))
		}
	}
	return out
}

// relistPods returns n fresh pods p0..p(n-1), each with its own UID; the
// pods whose index changed lists are at resource version 2, the others at 1.
func relistPods(n int, changed ...int) []*v1.Pod {
	pods := make([]*v1.Pod, n)
	for i := range pods {
		pods[i] = reusePod(fmt.Sprintf("p%d", i), fmt.Sprintf("uid-%d", i), "1")
	}
	for _, i := range changed {
		pods[i].ResourceVersion = "2"
	}
	return pods
}

// relistScript scripts a ListerWatcher that serves each of lists in turn,
// by pages of two (paged) or as a streaming list (streamed), with a watch
// that expires (410) after every list but the last.
func relistScript(streamed bool, lists ...[]*v1.Pod) *rfLW {
	expired := rfStatusEvent(apierrors.NewResourceExpired("too old"))
	lw := &rfLW{streaming: streamed}
	var pages []rfReply
	var watches []rfWatchReply
	for i, pods := range lists {
		last := i == len(lists)-1
		rv := fmt.Sprint(10 * (i + 1))
		if streamed {
			var events []watch.Event
			for _, p := range pods {
				events = append(events, rfEvent(watch.Added, p))
			}
			events = append(events, rfEndBookmark(rv))
			if !last {
				events = append(events, expired)
			}
			watches = append(watches, rfWatchReply{stream: newRFStream(false, events...)})
			continue
		}
		for start := 0; start < len(pods); start += 2 {
			end := min(start+2, len(pods))
			cont := ""
			if end < len(pods) {
				cont = fmt.Sprint(end)
			}
			pages = append(pages, rfReply{obj: rfPodList(rv, cont, pods[start:end]...)})
		}
		if !last {
			watches = append(watches, rfWatchReply{stream: newRFStream(false, expired)})
		}
	}
	lw.listFn = rfLists(pages...)
	lw.watchFn = rfWatches(watches...)
	return lw
}

// listedObjects flattens what a queue handed out into the listed objects:
// the objects of Replaced or Sync changes and of ReplacedAll lists.
func listedObjects(items []interface{}) []interface{} {
	var out []interface{}
	for _, item := range items {
		for _, d := range item.(Deltas) {
			switch d.Type {
			case Replaced, Sync:
				out = append(out, d.Object)
			case ReplacedAll:
				out = append(out, d.Object.(ReplacedAllInfo).Objects...)
			}
		}
	}
	return out
}

func TestReflectorList_QueueCollectsTheCachedObjectOfEveryUnchangedItem(t *testing.T) {
	cached := relistPods(5)
	cachedByName := map[string]interface{}{}
	for _, p := range cached {
		cachedByName[p.Name] = p
	}
	type target struct {
		queue func(known *fakeKnown) Queue
		// reuses says whether the queue prepares listed objects as they
		// arrive and can know what is cached. A DeltaFIFO and a RealFIFO
		// without AtomicEvents get the list as listed, so that their Replace
		// can fail partway as client-go's does.
		reuses bool
	}
	targets := map[string]target{
		"DeltaFIFO with KnownObjects": {queue: func(k *fakeKnown) Queue {
			return NewDeltaFIFOWithOptions(DeltaFIFOOptions{KnownObjects: k, EmitDeltaTypeReplaced: true})
		}},
		"DeltaFIFO without KnownObjects": {queue: func(*fakeKnown) Queue {
			return NewDeltaFIFOWithOptions(DeltaFIFOOptions{EmitDeltaTypeReplaced: true})
		}},
		"RealFIFO": {queue: func(k *fakeKnown) Queue {
			return NewRealFIFOWithOptions(RealFIFOOptions{KnownObjects: k})
		}},
		"atomic RealFIFO of an informer": {reuses: true, queue: func(k *fakeKnown) Queue {
			f := NewRealFIFOWithOptions(RealFIFOOptions{AtomicEvents: true})
			f.consumerCache = k
			return f
		}},
	}
	for _, streamed := range []bool{false, true} {
		for name, tc := range targets {
			t.Run(fmt.Sprintf("%s/streamed=%v", name, streamed), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					rfSetup(t, streamed)
					// A fresh copy of the cached pods, p1 and p3 changed,
					// p4 gone and p5 new.
					fresh := append(relistPods(5, 1, 3)[:4], reusePod("p5", "uid-5", "1"))
					queue := tc.queue(newFakeKnown(cached...))
					r := NewReflector(relistScript(streamed, fresh), &v1.Pod{}, queue, 0)
					stop := rfRun(r)
					synctest.Wait()
					if err := stop(); err != nil {
						t.Fatal(err)
					}
					var got []string
					for _, obj := range listedObjects(drainObjs(t, queue)) {
						p := obj.(*v1.Pod)
						origin := "fresh"
						if obj == cachedByName[p.Name] {
							origin = "cached"
						}
						got = append(got, rfDescribe(obj)+" "+origin)
					}
					want := []string{"p0@1 fresh", "p1@2 fresh", "p2@1 fresh", "p3@2 fresh", "p5@1 fresh"}
					if tc.reuses {
						want = []string{"p0@1 cached", "p1@2 fresh", "p2@1 cached", "p3@2 fresh", "p5@1 fresh"}
					}
					if diff := cmp.Diff(want, got); diff != "" {
						t.Errorf("listed objects queued (-want +got):\n%s", diff)
					}
				})
			})
		}
	}
}

func TestReflectorList_PlainStoreGetsTheListAsListed(t *testing.T) {
	for _, streamed := range []bool{false, true} {
		t.Run(fmt.Sprintf("streamed=%v", streamed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rfSetup(t, streamed)
				fresh := relistPods(3, 1)
				store := newRFStore()
				r := NewReflector(relistScript(streamed, fresh), &v1.Pod{}, store, 0)
				stop := rfRun(r)
				synctest.Wait()
				if err := stop(); err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff([]string{"p0@1", "p1@2", "p2@1"}, store.content()); diff != "" {
					t.Errorf("store content (-want +got):\n%s", diff)
				}
				if streamed {
					for _, p := range fresh {
						if got := store.items[podKey(p.Name)]; got != interface{}(p) {
							t.Errorf("store holds %s (%p), want the streamed object %p", rfDescribe(got), got, p)
						}
					}
				}
			})
		})
	}
}

// relistRecorder is a ResourceEventHandler counting what an informer
// delivers. It closes updatesDone once wantUpdates updates arrived.
type relistRecorder struct {
	mu          sync.Mutex
	adds        int
	sameObject  []string
	newObject   []string
	deletes     int
	wantUpdates int
	updatesDone chan struct{}
}

func (r *relistRecorder) OnAdd(interface{}, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.adds++
}

func (r *relistRecorder) OnUpdate(oldObj, newObj interface{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if oldObj == newObj {
		r.sameObject = append(r.sameObject, rfDescribe(newObj))
	} else {
		r.newObject = append(r.newObject, rfDescribe(oldObj)+"->"+rfDescribe(newObj))
	}
	if len(r.sameObject)+len(r.newObject) == r.wantUpdates {
		close(r.updatesDone)
	}
}

func (r *relistRecorder) OnDelete(interface{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.deletes++
}

// With AtomicFIFO (the default), a relist hands the handlers the cached
// object of every unchanged item. Without it the queue gets the list as
// listed, as in client-go (see TestReflectorList_QueueCollectsTheCachedObjectOfEveryUnchangedItem).
func TestInformerRelist_UnchangedObjectsKeepTheirCachedPointer(t *testing.T) {
	const n = 12
	changed := []int{2, 5, 11}
	for _, atomicFIFO := range []bool{true} {
		for _, streamed := range []bool{false, true} {
			t.Run(fmt.Sprintf("atomic=%v/streamed=%v", atomicFIFO, streamed), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					rfSetup(t, streamed)
					t.Cleanup(setFeatureForTesting(featureAtomicFIFO, atomicFIFO))
					lw := relistScript(streamed, relistPods(n), relistPods(n, changed...))
					inf := NewSharedIndexInformer(lw, &v1.Pod{}, 0, Indexers{NamespaceIndex: MetaNamespaceIndexFunc})
					rec := &relistRecorder{wantUpdates: n, updatesDone: make(chan struct{})}
					if _, err := inf.AddEventHandler(rec); err != nil {
						t.Fatal(err)
					}
					ctx, cancel := context.WithCancel(context.Background())
					done := make(chan struct{})
					go func() {
						defer close(done)
						inf.RunWithContext(ctx)
					}()
					<-rec.updatesDone
					synctest.Wait()
					cancel()
					<-done

					rec.mu.Lock()
					defer rec.mu.Unlock()
					if rec.adds != n || rec.deletes != 0 {
						t.Errorf("got %d adds and %d deletes, want %d adds and none", rec.adds, rec.deletes, n)
					}
					var wantNew []string
					for _, i := range changed {
						wantNew = append(wantNew, fmt.Sprintf("p%d@1->p%d@2", i, i))
					}
					if diff := cmp.Diff(sorted(wantNew), sorted(rec.newObject)); diff != "" {
						t.Errorf("updates with a new object (-want +got):\n%s", diff)
					}
					if got, want := len(rec.sameObject), n-len(changed); got != want {
						t.Errorf("got %d updates whose new object is the cached one, want %d: %v", got, want, rec.sameObject)
					}
					for _, obj := range inf.GetStore().List() {
						p := obj.(*v1.Pod)
						want := "1"
						if slices.Contains(changed, mustAtoi(t, p.Name[1:])) {
							want = "2"
						}
						if p.ResourceVersion != want {
							t.Errorf("cache holds %s, want resource version %s", rfDescribe(p), want)
						}
					}
				})
			})
		}
	}
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A paginated list transforms each object once; a streaming list twice, as
// the reference does (see TestReflectorWatchList_QueuesTransformEachObjectTwice).
func TestReflectorList_QueueTransformsEachListedObject(t *testing.T) {
	for _, streamed := range []bool{false, true} {
		t.Run(fmt.Sprintf("streamed=%v", streamed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rfSetup(t, streamed)
				var calls atomic.Int32
				queue := NewDeltaFIFOWithOptions(DeltaFIFOOptions{EmitDeltaTypeReplaced: true, Transformer: func(obj interface{}) (interface{}, error) {
					calls.Add(1)
					p := obj.(*v1.Pod).DeepCopy()
					p.Spec.Hostname = "transformed"
					return p, nil
				}})
				r := NewReflector(relistScript(streamed, relistPods(5)), &v1.Pod{}, queue, 0)
				stop := rfRun(r)
				synctest.Wait()
				if err := stop(); err != nil {
					t.Fatal(err)
				}
				want := int32(5)
				if streamed {
					want = 10
				}
				if got := calls.Load(); got != want {
					t.Errorf("transform called %d times for 5 listed objects, want %d", got, want)
				}
				for _, obj := range listedObjects(drainObjs(t, queue)) {
					if obj.(*v1.Pod).Spec.Hostname != "transformed" {
						t.Errorf("%s queued untransformed", rfDescribe(obj))
					}
				}
			})
		})
	}
}

// A transform failing on a listed object ends the list as the queue's
// Replace ends in client-go: an atomic RealFIFO queues nothing; a DeltaFIFO
// or a RealFIFO without AtomicEvents keeps what it queued before the
// failing object and reports "couldn't enqueue object".
func TestReflectorList_TransformFailureEndsAPagedListAsReplaceWould(t *testing.T) {
	refuseP3 := func(obj interface{}) (interface{}, error) {
		if obj.(*v1.Pod).Name == "p3" {
			return nil, errors.New("p3 refused")
		}
		return obj, nil
	}
	cases := map[string]struct {
		queue      func() Queue
		wantErr    string
		wantQueued int
	}{
		"RealFIFO": {
			queue: func() Queue {
				return NewRealFIFOWithOptions(RealFIFOOptions{KnownObjects: newFakeKnown(), Transformer: refuseP3})
			},
			wantErr:    "unable to sync list result: couldn't enqueue object: p3 refused",
			wantQueued: 3,
		},
		"atomic RealFIFO": {
			queue: func() Queue {
				return NewRealFIFOWithOptions(RealFIFOOptions{AtomicEvents: true, Transformer: refuseP3})
			},
			wantErr: "unable to sync list result: p3 refused",
		},
		"DeltaFIFO": {
			queue: func() Queue {
				return NewDeltaFIFOWithOptions(DeltaFIFOOptions{KnownObjects: newFakeKnown(), Transformer: refuseP3})
			},
			wantErr:    "unable to sync list result: couldn't enqueue object: p3 refused",
			wantQueued: 3,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rfSetup(t, false)
				queue := tc.queue()
				r := NewReflector(relistScript(false, relistPods(5)), &v1.Pod{}, queue, 0)
				err := r.ListAndWatchWithContext(context.Background())
				if err == nil || err.Error() != tc.wantErr {
					t.Errorf("ListAndWatch error = %v, want %q", err, tc.wantErr)
				}
				if got := queuedLen(queue); got != tc.wantQueued {
					t.Errorf("%d changes queued after a failed list, want %d", got, tc.wantQueued)
				}
				if got := r.LastSyncResourceVersion(); got != "" {
					t.Errorf("LastSyncResourceVersion = %q after a failed list, want \"\"", got)
				}
			})
		})
	}
}

func TestListPager_PreparesNothingOnceTheContextIsCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	prepared := 0
	p := listPager{
		fetch: func(context.Context, metav1.ListOptions) (apiruntime.Object, error) {
			cancel() // the list ignored its context and answered late
			return rfPodList("5", "", relistPods(3)...), nil
		},
		prepare: func(obj interface{}) (interface{}, error) {
			prepared++
			return obj, nil
		},
	}
	_, err := p.collect(ctx, metav1.ListOptions{})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("collect error = %v, want context.Canceled", err)
	}
	if prepared != 0 {
		t.Errorf("prepared %d objects after the context was canceled", prepared)
	}
}
