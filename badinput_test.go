package cache

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"

	framework "github.com/kcache/cache/testing"
)

// This file feeds the cache bad input, from the server and from user code,
// and checks that each case has a clear error or a documented outcome, that
// nothing panics, and that the informer keeps serving what it can.

// badWait polls cond until it holds, failing the test after
// wait.ForeverTestTimeout: a guard against hangs, not a speed bound.
func badWait(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 2*time.Millisecond, wait.ForeverTestTimeout, true,
		func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// badRecorder is a handler that keeps a view of the objects it was told
// about and every key it ever saw.
type badRecorder struct {
	// mu guards every field.
	mu    sync.Mutex
	view  map[string]string // key → resource version
	seen  map[string]bool
	calls int
	// panicOn makes the handler panic on calls about these names.
	panicOn map[string]bool
}

func newBadRecorder(panicOn ...string) *badRecorder {
	r := &badRecorder{view: map[string]string{}, seen: map[string]bool{}, panicOn: map[string]bool{}}
	for _, n := range panicOn {
		r.panicOn[n] = true
	}
	return r
}

func (r *badRecorder) record(obj interface{}, deleted bool) {
	r.mu.Lock()
	r.calls++
	var key, rv, name string
	switch v := obj.(type) {
	case DeletedFinalStateUnknown:
		key = v.Key
		_, name, _ = SplitMetaNamespaceKey(key)
	case *v1.Pod:
		key, rv, name = v.Namespace+"/"+v.Name, v.ResourceVersion, v.Name
	default:
		key = fmt.Sprintf("unexpected %T", obj)
	}
	r.seen[key] = true
	if deleted {
		delete(r.view, key)
	} else {
		r.view[key] = rv
	}
	doPanic := r.panicOn[name]
	r.mu.Unlock()
	if doPanic {
		panic("handler refuses " + name)
	}
}

func (r *badRecorder) OnAdd(obj interface{}, _ bool)  { r.record(obj, false) }
func (r *badRecorder) OnUpdate(_, newObj interface{}) { r.record(newObj, false) }
func (r *badRecorder) OnDelete(obj interface{})       { r.record(obj, true) }

// viewKeys returns the keys the handler holds, sorted.
func (r *badRecorder) viewKeys() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Sorted(maps.Keys(r.view))
}

// seenKeys returns every key the handler was ever told about, sorted.
func (r *badRecorder) seenKeys() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Sorted(maps.Keys(r.seen))
}

// prefixedSource is a fake server whose first watch (the streaming list,
// or the watch after the first list) starts with bad events.
type prefixedSource struct {
	*framework.FakeControllerSource
	mu     sync.Mutex
	prefix []watch.Event
}

func (p *prefixedSource) Watch(options metav1.ListOptions) (watch.Interface, error) {
	w, err := p.FakeControllerSource.Watch(options)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	prefix := p.prefix
	p.prefix = nil
	p.mu.Unlock()
	if len(prefix) == 0 {
		return w, nil
	}
	pw := &prefixedWatch{inner: w, result: make(chan watch.Event), stop: make(chan struct{})}
	go pw.run(prefix)
	return pw, nil
}

// pagedOnly hides a source's streaming lists.
type pagedOnly struct{ ListerWatcher }

func (pagedOnly) IsWatchListSemanticsUnSupported() bool { return true }

type prefixedWatch struct {
	inner    watch.Interface
	result   chan watch.Event
	stop     chan struct{}
	stopOnce sync.Once
}

func (w *prefixedWatch) Stop()                          { w.stopOnce.Do(func() { close(w.stop) }) }
func (w *prefixedWatch) ResultChan() <-chan watch.Event { return w.result }

func (w *prefixedWatch) run(prefix []watch.Event) {
	defer close(w.result)
	defer w.inner.Stop()
	send := func(e watch.Event) bool {
		select {
		case w.result <- e:
			return true
		case <-w.stop:
			return false
		}
	}
	for _, e := range prefix {
		if !send(e) {
			return
		}
	}
	for {
		select {
		case e, ok := <-w.inner.ResultChan():
			if !ok || !send(e) {
				return
			}
		case <-w.stop:
			return
		}
	}
}

// badInformer is an informer under test with a recording handler.
type badInformer struct {
	// errMu guards errs, the errors told to the watch error handler.
	errMu sync.Mutex
	errs  []error

	inf    *sharedIndexInformer
	rec    *badRecorder
	reg    ResourceEventHandlerRegistration
	cancel context.CancelFunc
	done   chan struct{}
}

// startBadInformer runs an informer over lw, configured by setup before it
// starts, with time running a thousand times faster so that backoffs are
// short.
func startBadInformer(t *testing.T, lw ListerWatcher, setup func(*sharedIndexInformer)) *badInformer {
	t.Helper()
	b := &badInformer{
		inf:  newSharedIndexInformer(lw, &v1.Pod{}, SharedIndexInformerOptions{}, newWarpClock(1000)),
		rec:  newBadRecorder(),
		done: make(chan struct{}),
	}
	if err := b.inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *Reflector, err error) {
		b.errMu.Lock()
		defer b.errMu.Unlock()
		b.errs = append(b.errs, err)
	}); err != nil {
		t.Fatal(err)
	}
	if setup != nil {
		setup(b.inf)
	}
	reg, err := b.inf.AddEventHandler(b.rec)
	if err != nil {
		t.Fatal(err)
	}
	b.reg = reg
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Logger{}))
	b.cancel = cancel
	go func() {
		defer close(b.done)
		b.inf.RunWithContext(ctx)
	}()
	t.Cleanup(b.stop)
	return b
}

func (b *badInformer) stop() {
	b.cancel()
	<-b.done
}

func (b *badInformer) storeKeys() []string { return sorted(b.inf.GetStore().ListKeys()) }

func (b *badInformer) watchErrors() []error {
	b.errMu.Lock()
	defer b.errMu.Unlock()
	return slices.Clone(b.errs)
}

// metaless is an object without object metadata.
type metaless struct {
	metav1.TypeMeta
	Name string
}

func (m *metaless) DeepCopyObject() runtime.Object { c := *m; return &c }

func badPod(name, rv string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv}}
}

func TestBadInput_WatchEventsAreSkippedAndTheInformerKeepsServing(t *testing.T) {
	tests := []struct {
		name  string
		event watch.Event
	}{
		{"nil object", watch.Event{Type: watch.Added}},
		{"object of the wrong type", watch.Event{Type: watch.Added, Object: &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}}}},
		{"object without metadata", watch.Event{Type: watch.Added, Object: &metaless{Name: "ghost"}}},
		{"unknown event type", watch.Event{Type: "BOGUS", Object: badPod("ghost", "")}},
		{"ERROR without an object", watch.Event{Type: watch.Error}},
		{"ERROR carrying a pod", watch.Event{Type: watch.Error, Object: badPod("ghost", "")}},
		{"ERROR with an empty status", watch.Event{Type: watch.Error, Object: &metav1.Status{}}},
	}
	for _, mode := range []string{"streaming", "paged"} {
		for _, tc := range tests {
			t.Run(mode+"/"+tc.name, func(t *testing.T) {
				src := &prefixedSource{FakeControllerSource: framework.NewFakeControllerSource(), prefix: []watch.Event{tc.event}}
				defer src.Shutdown()
				src.Add(badPod("a", ""))
				var lw ListerWatcher = src
				if mode == "paged" {
					lw = pagedOnly{src}
				}
				b := startBadInformer(t, lw, nil)
				badWait(t, "the informer to sync", b.reg.HasSynced)
				src.Add(badPod("b", ""))
				want := []string{"ns/a", "ns/b"}
				badWait(t, "b to reach the store and the handler", func() bool {
					return slices.Equal(want, b.storeKeys()) && slices.Equal(want, b.rec.viewKeys())
				})
				b.stop()
				if diff := cmp.Diff(want, b.rec.seenKeys()); diff != "" {
					t.Errorf("keys the handler was told about (-want +got):\n%s", diff)
				}
			})
		}
	}
}

func TestBadInput_ObjectsWithoutMetadataOfTheExpectedType(t *testing.T) {
	ml := &metaless{Name: "x"}
	t.Run("store", func(t *testing.T) {
		s := NewStore(MetaNamespaceKeyFunc)
		var keyErr KeyError
		if err := s.Add(ml); !errors.As(err, &keyErr) {
			t.Fatalf("Add: got %v, want a KeyError", err)
		}
		if n := len(s.List()); n != 0 {
			t.Errorf("the store holds %d objects", n)
		}
	})
	t.Run("reflector watch", func(t *testing.T) {
		fw := watch.NewRaceFreeFake()
		lw := &ListWatch{
			ListFunc: func(metav1.ListOptions) (runtime.Object, error) {
				return &v1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}}, nil
			},
			WatchFunc: func(metav1.ListOptions) (watch.Interface, error) { return fw, nil },
		}
		store := NewStore(DeletionHandlingMetaNamespaceKeyFunc)
		r := NewReflectorWithOptions(pagedOnly{lw}, nil, store, ReflectorOptions{Clock: newWarpClock(1000)})
		ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Logger{}))
		done := make(chan struct{})
		go func() { defer close(done); r.RunWithContext(ctx) }()
		defer func() { cancel(); <-done }()
		fw.Add(ml)
		fw.Add(badPod("b", "2"))
		badWait(t, "b to be stored", func() bool { return slices.Equal([]string{"ns/b"}, store.ListKeys()) })
	})
	// A listed object without metadata: a streaming list leaves it out and
	// caches the rest; a paged list is refused as a whole, as in the
	// reference (see processReplacedAll), so a stays missing until the next
	// list. Either way the informer syncs and goes on serving the watch.
	for _, mode := range []string{"streaming", "paged"} {
		t.Run("informer list/"+mode, func(t *testing.T) {
			src := framework.NewFakeControllerSource()
			defer src.Shutdown()
			src.Add(badPod("a", ""))
			lw := &ListWatch{
				ListFunc: func(o metav1.ListOptions) (runtime.Object, error) {
					obj, err := src.List(o)
					if err != nil {
						return nil, err
					}
					list := obj.(*v1.List)
					list.Items = append(list.Items, runtime.RawExtension{Object: ml})
					return list, nil
				},
				WatchFunc: func(o metav1.ListOptions) (watch.Interface, error) {
					w, err := src.Watch(o)
					if err != nil || o.SendInitialEvents == nil {
						return w, err
					}
					pw := &prefixedWatch{inner: w, result: make(chan watch.Event), stop: make(chan struct{})}
					go pw.run([]watch.Event{{Type: watch.Added, Object: ml}})
					return pw, nil
				},
			}
			var plw ListerWatcher = lw
			if mode == "paged" {
				plw = pagedOnly{lw}
			}
			b := startBadInformer(t, plw, nil)
			badWait(t, "sync", b.reg.HasSynced)
			src.Add(badPod("b", ""))
			want := []string{"ns/a", "ns/b"}
			if mode == "paged" {
				want = []string{"ns/b"}
			}
			badWait(t, "the served objects stored and delivered", func() bool {
				return slices.Equal(want, b.storeKeys()) && slices.Equal(want, b.rec.viewKeys())
			})
		})
	}
}

func TestBadInput_ListResponsesThatAreNotListsAreRetried(t *testing.T) {
	tests := []struct {
		name string
		resp runtime.Object
		want string
	}{
		{"a pod", badPod("a", "1"), "failed to list *v1.Pod: returned object must be a list: object does not implement the List interfaces"},
		{"nil", nil, "failed to list *v1.Pod: returned object must be a list: object does not implement the List interfaces"},
		{"an object without metadata", &metaless{}, "failed to list *v1.Pod: returned object must be a list: object does not implement the List interfaces"},
		{"a table", tableList(), "failed to list *v1.Pod: unsupported list gvk: meta.k8s.io/v1, Kind=Table, type: *v1.Pod"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := framework.NewFakeControllerSource()
			defer src.Shutdown()
			src.Add(badPod("a", ""))
			var mu sync.Mutex
			bad := 2
			lw := &ListWatch{
				ListFunc: func(o metav1.ListOptions) (runtime.Object, error) {
					mu.Lock()
					defer mu.Unlock()
					if bad > 0 {
						bad--
						return tc.resp, nil
					}
					return src.List(o)
				},
				WatchFunc: src.Watch,
			}
			b := startBadInformer(t, pagedOnly{lw}, nil)
			badWait(t, "the informer to sync once the list is good", b.reg.HasSynced)
			if diff := cmp.Diff([]string{"ns/a"}, b.storeKeys()); diff != "" {
				t.Errorf("store (-want +got):\n%s", diff)
			}
			errs := b.watchErrors()
			if len(errs) < 2 {
				t.Fatalf("%d errors reported, want one per bad list: %v", len(errs), errs)
			}
			for _, err := range errs[:2] {
				if !strings.HasPrefix(err.Error(), tc.want) {
					t.Errorf("error %q does not say %q", err, tc.want)
				}
			}
		})
	}
}

// tableList is a server-side table rendering where a list was expected.
func tableList() runtime.Object {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(metav1.SchemeGroupVersion.WithKind("Table"))
	return l
}

func TestBadInput_MalformedKeys(t *testing.T) {
	s := NewIndexer(DeletionHandlingMetaNamespaceKeyFunc, Indexers{NamespaceIndex: MetaNamespaceIndexFunc})
	mustOK(t, s.Add(badPod("a", "1")))
	tests := []struct {
		name string
		run  func() error
		want string // substring of the error; "" for none
	}{
		{"split with two slashes", func() error { _, _, err := SplitMetaNamespaceKey("a/b/c"); return err }, "unexpected key format"},
		{"get by a key with two slashes", func() error { return notFound(s.GetByKey("a/b/c")) }, ""},
		{"get by an empty key", func() error { return notFound(s.GetByKey("")) }, ""},
		{"delete of a tombstone with a malformed key", func() error {
			return s.Delete(DeletedFinalStateUnknown{Key: "a/b/c", Obj: badPod("a", "1")})
		}, ""},
		{"an explicit key cannot be indexed: the write panics, as in client-go, and the key is stored", func() error {
			other := NewIndexer(DeletionHandlingMetaNamespaceKeyFunc, Indexers{NamespaceIndex: MetaNamespaceIndexFunc})
			p := capturePanic(func() { _ = other.Add(ExplicitKey("x/y/z")) })
			if p == nil {
				return errors.New("no panic")
			}
			if keys := other.ListKeys(); !slices.Equal(keys, []string{"x/y/z"}) {
				return fmt.Errorf("after the panic the store holds %v, want [x/y/z]", keys)
			}
			return p.(error)
		}, `unable to calculate an index entry for key "x/y/z" on index "namespace"`},
		{"index lookup of an unknown index", func() error { _, err := s.ByIndex("nope", "ns"); return err }, "nope"},
		{"lister get with slashes in the name", func() error {
			_, err := NewGenericLister(s, schema.GroupResource{Resource: "pods"}).ByNamespace("ns").Get("a/b")
			return err
		}, "not found"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unexpected error %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got error %v, want one containing %q", err, tc.want)
			}
			if diff := cmp.Diff([]string{"ns/a"}, sorted(s.ListKeys())); diff != "" {
				t.Errorf("store (-want +got):\n%s", diff)
			}
		})
	}
}

// notFound turns a lookup that must miss into an error if it did not.
func notFound(obj interface{}, exists bool, err error) error {
	if err != nil {
		return err
	}
	if exists || obj != nil {
		return fmt.Errorf("found %v", obj)
	}
	return nil
}

// An index function that fails panics the informer's process loop, as in
// client-go. With the keep-serving opt-in (utilruntime.ReallyCrash false)
// the panic handlers see client-go's message, the change is dropped, and
// later changes are stored and delivered.
func TestBadInput_IndexFuncsThatFailPanicTheProcessLoop(t *testing.T) {
	tests := []struct {
		name      string
		index     IndexFunc
		wantPanic string
	}{
		{"error", func(obj interface{}) ([]string, error) {
			if p := obj.(*v1.Pod); p.Labels["state"] == "bad" {
				return nil, errors.New("cannot index " + p.Name)
			}
			return []string{obj.(*v1.Pod).Labels["state"]}, nil
		}, `unable to calculate an index entry for key "ns/x" on index "state": cannot index x`},
		{"panic", func(obj interface{}) ([]string, error) {
			if p := obj.(*v1.Pod); p.Labels["state"] == "bad" {
				panic("cannot index " + p.Name)
			}
			return []string{obj.(*v1.Pod).Labels["state"]}, nil
		}, "cannot index x"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			panics := keepServing(t)
			src := framework.NewFakeControllerSource()
			defer src.Shutdown()
			src.Add(testPod("ns", "a", "", "state", "good"))
			b := startBadInformer(t, src, func(inf *sharedIndexInformer) {
				mustOK(t, inf.AddIndexers(Indexers{"state": tc.index}))
			})
			badWait(t, "sync", b.reg.HasSynced)
			src.Add(testPod("ns", "x", "", "state", "bad"))
			badWait(t, "the panic handlers to see the failure", func() bool { return panics.contains(tc.wantPanic) })
			src.Add(testPod("ns", "y", "", "state", "good"))
			badWait(t, "a later object stored and delivered", func() bool {
				return slices.Contains(b.storeKeys(), "ns/y") && slices.Contains(b.rec.viewKeys(), "ns/y")
			})
			if slices.Contains(b.rec.seenKeys(), "ns/x") {
				t.Error("the handler was told about the object that could not be indexed")
			}
		})
	}
}

func TestBadInput_TransformsThatFailDropOnlyTheirObject(t *testing.T) {
	transforms := map[string]TransformFunc{
		"error": func(obj interface{}) (interface{}, error) {
			if p, ok := obj.(*v1.Pod); ok && p.Name == "bad" {
				return nil, errors.New("cannot transform bad")
			}
			return obj, nil
		},
	}
	for name, transform := range transforms {
		for _, mode := range []string{"streaming", "paged"} {
			t.Run(name+"/"+mode+"/watched", func(t *testing.T) {
				src := framework.NewFakeControllerSource()
				defer src.Shutdown()
				src.Add(badPod("a", ""))
				var lw ListerWatcher = src
				if mode == "paged" {
					lw = pagedOnly{src}
				}
				b := startBadInformer(t, lw, func(inf *sharedIndexInformer) { mustOK(t, inf.SetTransform(transform)) })
				badWait(t, "sync", b.reg.HasSynced)
				src.Add(badPod("bad", ""))
				src.Add(badPod("b", ""))
				want := []string{"ns/a", "ns/b"}
				badWait(t, "b stored and delivered", func() bool {
					return slices.Equal(want, b.storeKeys()) && slices.Equal(want, b.rec.viewKeys())
				})
				b.stop()
				if diff := cmp.Diff(want, b.rec.seenKeys()); diff != "" {
					t.Errorf("keys the handler was told about (-want +got):\n%s", diff)
				}
			})
		}
		// A listed object the transform refuses fails the whole list, as
		// with the reference: the informer does not sync, and says why to
		// the watch error handler at every attempt.
		t.Run(name+"/paged/listed", func(t *testing.T) {
			src := framework.NewFakeControllerSource()
			defer src.Shutdown()
			src.Add(badPod("a", ""))
			src.Add(badPod("bad", ""))
			b := startBadInformer(t, pagedOnly{src}, func(inf *sharedIndexInformer) { mustOK(t, inf.SetTransform(transform)) })
			badWait(t, "two failed attempts", func() bool { return len(b.watchErrors()) >= 2 })
			if b.inf.HasSynced() {
				t.Error("the informer synced from a list it could not transform")
			}
			if err := b.watchErrors()[0]; !strings.Contains(err.Error(), "bad") {
				t.Errorf("error %q does not name the object", err)
			}
		})
	}
}

// A panicking transform panics the reflector's cycle, as in client-go. With
// the keep-serving opt-in the panic handlers see it at every attempt and
// the reflector keeps trying.
func TestBadInput_PanickingTransformsPanicTheReflector(t *testing.T) {
	panics := keepServing(t)
	src := framework.NewFakeControllerSource()
	defer src.Shutdown()
	src.Add(badPod("a", ""))
	b := startBadInformer(t, src, func(inf *sharedIndexInformer) {
		mustOK(t, inf.SetTransform(func(obj interface{}) (interface{}, error) {
			if p, ok := obj.(*v1.Pod); ok && p.Name == "bad" {
				panic("cannot transform bad")
			}
			return obj, nil
		}))
	})
	badWait(t, "sync", b.reg.HasSynced)
	src.Add(badPod("bad", ""))
	badWait(t, "two panics seen", func() bool { return len(panics.all()) >= 2 })
	for _, v := range panics.all() {
		if v != "cannot transform bad" {
			t.Errorf("panic handlers saw %q, want the transform's panic", v)
		}
	}
}

// With the keep-serving opt-in, a handler that panics misses that
// notification only: it and the other handlers get the later ones. A panic
// on an initial-list add still lets the registration sync, unlike
// client-go (kubernetes/kubernetes#129024).
func TestBadInput_PanickingHandlersDoNotStopDelivery(t *testing.T) {
	panics := keepServing(t)
	src := framework.NewFakeControllerSource()
	defer src.Shutdown()
	src.Add(badPod("a", "")) // the panicking handler refuses a
	src.Add(badPod("c", ""))
	b := startBadInformer(t, src, nil)
	panicky := newBadRecorder("a", "b")
	reg, err := b.inf.AddEventHandler(panicky)
	if err != nil {
		t.Fatal(err)
	}
	badWait(t, "both handlers synced despite the panics", func() bool { return b.reg.HasSynced() && reg.HasSynced() })
	src.Add(badPod("b", ""))
	src.Modify(badPod("a", ""))
	src.Delete(badPod("c", ""))
	src.Add(badPod("d", ""))
	want := []string{"ns/a", "ns/b", "ns/d"}
	badWait(t, "every change delivered to both", func() bool {
		return slices.Equal(want, b.rec.viewKeys()) && slices.Equal(want, panicky.viewKeys())
	})
	if diff := cmp.Diff(want, b.storeKeys()); diff != "" {
		t.Errorf("store (-want +got):\n%s", diff)
	}
	if got := panics.all(); len(got) < 3 || got[0] != "handler refuses a" {
		t.Errorf("panic handlers saw %q, want the handler's three panics", got)
	}
}

func TestBadInput_ClosedQueues(t *testing.T) {
	queues := map[string]func() Queue{
		"RealFIFO": func() Queue {
			return NewRealFIFOWithOptions(RealFIFOOptions{KeyFunction: MetaNamespaceKeyFunc, AtomicEvents: true})
		},
		"DeltaFIFO": func() Queue { return NewDeltaFIFOWithOptions(DeltaFIFOOptions{KeyFunction: MetaNamespaceKeyFunc}) },
		"FIFO":      func() Queue { return NewFIFO(MetaNamespaceKeyFunc) },
	}
	for name, newQueue := range queues {
		t.Run(name+"/drains then reports closed", func(t *testing.T) {
			q := newQueue()
			mustOK(t, q.Add(badPod("a", "1")))
			q.Close()
			q.Close()
			if c, ok := q.(interface{ IsClosed() bool }); ok && !c.IsClosed() {
				t.Fatal("IsClosed() = false after Close")
			}
			// Changes after Close are still accepted and drained.
			mustOK(t, q.Add(badPod("b", "2")))
			var got []string
			for {
				_, err := q.Pop(func(obj interface{}, _ bool) error {
					if d, ok := obj.(Deltas); ok {
						obj = d.Newest().Object
					}
					got = append(got, obj.(*v1.Pod).Name)
					return nil
				})
				if errors.Is(err, ErrFIFOClosed) {
					break
				}
				mustOK(t, err)
			}
			if diff := cmp.Diff([]string{"a", "b"}, got); diff != "" {
				t.Errorf("popped (-want +got):\n%s", diff)
			}
		})
		t.Run(name+"/controller over a closed queue stops with its context", func(t *testing.T) {
			q := newQueue()
			q.Close()
			src := framework.NewFakeControllerSource()
			defer src.Shutdown()
			c := newController(&Config{
				Queue: q, ListerWatcher: src, ObjectType: &v1.Pod{},
				Process: func(interface{}, bool) error { return nil },
			}, newWarpClock(1000))
			ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Logger{}))
			done := make(chan struct{})
			go func() { defer close(done); c.RunWithContext(ctx) }()
			cancel()
			select {
			case <-done:
			case <-time.After(wait.ForeverTestTimeout):
				t.Fatal("the controller did not stop")
			}
		})
	}
}

func TestBadInput_Lifecycle(t *testing.T) {
	src := framework.NewFakeControllerSource()
	defer src.Shutdown()
	src.Add(badPod("a", ""))
	b := startBadInformer(t, src, nil)
	badWait(t, "sync", b.reg.HasSynced)

	extra := newBadRecorder()
	extraReg, err := b.inf.AddEventHandler(extra)
	mustOK(t, err)
	mustOK(t, ShutDownEventHandler(b.inf, extraReg))
	mustOK(t, ShutDownEventHandler(b.inf, extraReg)) // twice: the handle is already gone

	if err := b.inf.SetTransform(nil); err == nil {
		t.Error("SetTransform on a running informer: no error")
	}
	if err := b.inf.SetWatchErrorHandler(nil); err == nil {
		t.Error("SetWatchErrorHandler on a running informer: no error")
	}

	// Stop twice: the second cancel is harmless.
	b.cancel()
	b.cancel()
	<-b.done
	if !b.inf.IsStopped() {
		t.Error("IsStopped() = false after the run ended")
	}

	tests := []struct {
		name string
		run  func() error
		want string
	}{
		{"AddEventHandler after stop", func() error { _, err := b.inf.AddEventHandler(newBadRecorder()); return err }, "stopped"},
		{"AddEventHandlerWithOptions after stop", func() error {
			_, err := b.inf.AddEventHandlerWithOptions(newBadRecorder(), HandlerOptions{})
			return err
		}, "stopped"},
		{"AddIndexers after stop", func() error {
			return b.inf.AddIndexers(Indexers{"x": MetaNamespaceIndexFunc})
		}, "stopped"},
		{"RemoveEventHandler after stop", func() error { return b.inf.RemoveEventHandler(b.reg) }, ""},
		{"nil handler", func() error { _, err := b.inf.AddEventHandler(nil); return err }, "nil"},
		{"Run after stop returns at once", func() error {
			done := make(chan struct{})
			go func() { defer close(done); b.inf.Run(make(chan struct{})) }()
			select {
			case <-done:
				return nil
			case <-time.After(wait.ForeverTestTimeout):
				return errors.New("a second Run did not return")
			}
		}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unexpected error %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got error %v, want one containing %q", err, tc.want)
			}
		})
	}
	// The stopped informer still serves its last state.
	if diff := cmp.Diff([]string{"ns/a"}, b.storeKeys()); diff != "" {
		t.Errorf("store after stop (-want +got):\n%s", diff)
	}
}

func TestBadInput_RunWithAStopChannelAlreadyClosed(t *testing.T) {
	src := framework.NewFakeControllerSource()
	defer src.Shutdown()
	src.Add(badPod("a", ""))
	inf := NewSharedIndexInformer(src, &v1.Pod{}, 0, Indexers{})
	stop := make(chan struct{})
	close(stop)
	done := make(chan struct{})
	go func() { defer close(done); inf.Run(stop) }()
	select {
	case <-done:
	case <-time.After(wait.ForeverTestTimeout):
		t.Fatal("Run with a closed stop channel did not return")
	}
	if !inf.IsStopped() {
		t.Error("IsStopped() = false")
	}
	if _, err := inf.AddEventHandler(newBadRecorder()); err == nil {
		t.Error("AddEventHandler after the run: no error")
	}
}

// A transform that returns nothing for an object behaves as in client-go.
// A nil keeps that object out of the cache and the handlers: a watched
// object is just skipped; a listed one reaches the replacement without a
// key and the whole replacement is refused (see processReplacedAll), so the
// informer syncs without the list and goes on serving the watch. A nil
// pointer of the object's type has a type but no metadata: computing its
// key panics where the controller applies it (here with ReallyCrash false,
// so the panic handlers see it and the informer goes on), and a listed one
// takes its replacement down with it. Transforms may be given their own
// output (a streaming list transforms twice), so these accept nil.
func TestBadInput_TransformsReturningNothingLeaveOutTheirObject(t *testing.T) {
	transforms := map[string]TransformFunc{
		"nil": func(obj interface{}) (interface{}, error) {
			if p, ok := obj.(*v1.Pod); ok && p != nil && p.Name == "bad" {
				return nil, nil
			}
			return obj, nil
		},
		"typed nil": func(obj interface{}) (interface{}, error) {
			if p, ok := obj.(*v1.Pod); ok && p != nil && p.Name == "bad" {
				return (*v1.Pod)(nil), nil
			}
			return obj, nil
		},
	}
	all, refused := []string{"ns/a", "ns/b"}, []string{"ns/b"}
	tests := []struct {
		transform, mode string
		listed          bool
		want            []string
		wantPanic       bool
	}{
		{"nil", "streaming", false, all, false},
		{"nil", "paged", false, all, false},
		{"typed nil", "streaming", false, all, true},
		{"typed nil", "paged", false, all, true},
		{"nil", "streaming", true, refused, false},
		{"nil", "paged", true, refused, false},
		{"typed nil", "streaming", true, refused, true},
		{"typed nil", "paged", true, refused, true},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s/%s/listed=%v", tc.transform, tc.mode, tc.listed), func(t *testing.T) {
			src := framework.NewFakeControllerSource()
			defer src.Shutdown()
			src.Add(badPod("a", ""))
			if tc.listed {
				src.Add(badPod("bad", ""))
			}
			var lw ListerWatcher = src
			if tc.mode == "paged" {
				lw = pagedOnly{src}
			}
			panics := keepServing(t)
			b := startBadInformer(t, lw, func(inf *sharedIndexInformer) { mustOK(t, inf.SetTransform(transforms[tc.transform])) })
			badWait(t, "sync", b.reg.HasSynced)
			if !tc.listed {
				src.Add(badPod("bad", ""))
			}
			if tc.wantPanic {
				// Changes popped together share a fate: wait until the
				// panic took the bad one, so that b is popped on its own.
				badWait(t, "the panic", func() bool { return len(panics.all()) > 0 })
			}
			src.Add(badPod("b", ""))
			badWait(t, "the served objects stored and delivered", func() bool {
				return slices.Equal(tc.want, b.storeKeys()) && slices.Equal(tc.want, b.rec.viewKeys())
			})
			b.stop()
			if diff := cmp.Diff(tc.want, b.rec.seenKeys()); diff != "" {
				t.Errorf("keys the handler was told about (-want +got):\n%s", diff)
			}
			var wantPanics []string
			if tc.wantPanic {
				wantPanics = []string{nilDereference}
			}
			if diff := cmp.Diff(wantPanics, panics.all()); diff != "" {
				t.Errorf("panics (-want +got):\n%s", diff)
			}
		})
	}
}

// Adding, to a running informer, an index whose function fails on a cached
// object panics in the caller, as in client-go, naming the object and the
// index.
func TestBadInput_AddIndexersFailingOnACachedObjectPanics(t *testing.T) {
	src := framework.NewFakeControllerSource()
	defer src.Shutdown()
	src.Add(badPod("a", ""))
	src.Add(badPod("bad", ""))
	b := startBadInformer(t, src, nil)
	badWait(t, "sync", b.reg.HasSynced)
	for name, tc := range map[string]struct {
		fn   IndexFunc
		want string
	}{
		"error": {func(obj interface{}) ([]string, error) {
			if obj.(*v1.Pod).Name == "bad" {
				return nil, errors.New("cannot index bad")
			}
			return []string{"v"}, nil
		}, `unable to calculate an index entry for key "ns/bad" on index "error": cannot index bad`},
		"panic": {func(obj interface{}) ([]string, error) {
			if obj.(*v1.Pod).Name == "bad" {
				panic("cannot index bad")
			}
			return []string{"v"}, nil
		}, "cannot index bad"},
	} {
		t.Run(name, func(t *testing.T) {
			p := capturePanic(func() { _ = b.inf.AddIndexers(Indexers{name: tc.fn}) })
			if got := fmt.Sprint(p); got != tc.want {
				t.Fatalf("AddIndexers panicked with %q, want %q", got, tc.want)
			}
		})
	}
}
