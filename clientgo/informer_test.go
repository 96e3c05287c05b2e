package clientgo

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	corelisters "k8s.io/client-go/listers/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	fcache "k8s.io/client-go/tools/cache/testing"

	kcache "github.com/kcache/cache"
)

// newSource returns client-go's fake ListerWatcher holding pods, shut down
// when the test ends (after the informers, whose stops are registered
// later and so run first).
func newSource(t *testing.T, pods ...*v1.Pod) *fcache.FakeControllerSource {
	src := fcache.NewFakeControllerSource()
	t.Cleanup(src.Shutdown)
	for _, p := range pods {
		src.Add(p)
	}
	return src
}

func namespaceIndexers() toolscache.Indexers {
	return toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc}
}

// TestNewSharedIndexInformer_HandlersSeeClientGoTypes drives adds, an
// update, a delete and a delete the watch missed (a tombstone on relist)
// through each kind of client-go handler.
func TestNewSharedIndexInformer_HandlersSeeClientGoTypes(t *testing.T) {
	tests := map[string]addHandler{
		"handler type": func(inf toolscache.SharedIndexInformer, rec *recorder) (toolscache.ResourceEventHandlerRegistration, error) {
			return inf.AddEventHandler(rec)
		},
		"detailed funcs": func(inf toolscache.SharedIndexInformer, rec *recorder) (toolscache.ResourceEventHandlerRegistration, error) {
			return inf.AddEventHandler(toolscache.ResourceEventHandlerDetailedFuncs{AddFunc: rec.OnAdd, UpdateFunc: rec.OnUpdate, DeleteFunc: rec.OnDelete})
		},
		"filtering": func(inf toolscache.SharedIndexInformer, rec *recorder) (toolscache.ResourceEventHandlerRegistration, error) {
			return inf.AddEventHandler(toolscache.FilteringResourceEventHandler{
				FilterFunc: func(interface{}) bool { return true },
				Handler:    rec,
			})
		},
		"with resync period": func(inf toolscache.SharedIndexInformer, rec *recorder) (toolscache.ResourceEventHandlerRegistration, error) {
			return inf.AddEventHandlerWithResyncPeriod(rec, 0)
		},
		"with options": func(inf toolscache.SharedIndexInformer, rec *recorder) (toolscache.ResourceEventHandlerRegistration, error) {
			return inf.AddEventHandlerWithOptions(rec, toolscache.HandlerOptions{})
		},
	}
	for name, add := range tests {
		t.Run(name, func(t *testing.T) { checkHandlerSeesClientGoTypes(t, add) })
	}
}

// addHandler adds rec to inf in one of the ways client-go offers.
type addHandler func(inf toolscache.SharedIndexInformer, rec *recorder) (toolscache.ResourceEventHandlerRegistration, error)

// checkHandlerSeesClientGoTypes adds a handler with add, and checks it sees
// an initial add, an update, a delete, a live add and a delete the watch
// missed (a client-go tombstone on relist).
func checkHandlerSeesClientGoTypes(t *testing.T, add addHandler) {
	t.Helper()
	a, b := newPod("ns", "a"), newPod("ns", "b")
	src := newSource(t, a)
	inf := NewSharedIndexInformer(src, &v1.Pod{}, 0, namespaceIndexers())
	rec := newRecorder()
	reg, err := add(inf, rec)
	if err != nil {
		t.Fatalf("add handler: %v", err)
	}
	run(t, inf)
	waitSynced(t, inf.HasSynced, reg.HasSynced)

	src.Modify(a.DeepCopy())
	src.Delete(a.DeepCopy())
	src.Add(b)
	got := rec.next(t, 4)
	// b is deleted behind the watch's back; the relist that follows the
	// broken watch finds it gone.
	src.DeleteDropWatch(b.DeepCopy())
	src.ResetWatch()
	got = append(got, rec.next(t, 1)...)
	want := []string{
		"add ns/a initial=true",
		"update ns/a",
		"delete ns/a",
		"add ns/b initial=false",
		"delete client-go tombstone ns/b",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// TestNewSharedIndexInformer_ListerReadsTheKcacheCache checks that a
// generated lister over GetIndexer reads what kcache cached, and that
// GetStore and GetIndexer are one view, not copies.
func TestNewSharedIndexInformer_ListerReadsTheKcacheCache(t *testing.T) {
	src := newSource(t, newPod("ns1", "a"), newPod("ns2", "b"))
	inf := NewSharedIndexInformer(src, &v1.Pod{}, 0, namespaceIndexers())
	kc, ok := Unwrap(inf)
	if !ok {
		t.Fatal("Unwrap: not a kcache informer")
	}
	run(t, inf)
	waitSynced(t, inf.HasSynced)

	lister := corelisters.NewPodLister(inf.GetIndexer())
	pods, err := lister.Pods("ns1").List(labelsEverything())
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	if len(pods) != 1 || pods[0].Name != "a" {
		t.Errorf("ns1 pods = %v, want [a]", pods)
	}
	if got, want := len(kc.GetIndexer().List()), 2; got != want {
		t.Errorf("kcache holds %d pods, want %d", got, want)
	}
	if inf.GetStore() != toolscache.Store(inf.GetIndexer()) {
		t.Error("GetStore and GetIndexer return different views")
	}
	if got, want := inf.LastSyncResourceVersion(), kc.LastSyncResourceVersion(); got == "" || got != want {
		t.Errorf("LastSyncResourceVersion = %q, kcache says %q", got, want)
	}
}

// TestRemoveEventHandler covers the handles RemoveEventHandler accepts and
// refuses, and that a removed handler is shut down (client-go v0.37's
// ShutDownEventHandler on a kcache handle is tested in testdata/minors).
func TestRemoveEventHandler(t *testing.T) {
	other := NewSharedIndexInformer(&toolscache.ListWatch{}, &v1.Pod{}, 0, nil)
	otherReg, err := other.AddEventHandler(newRecorder())
	if err != nil {
		t.Fatal(err)
	}
	clientGoReg, err := toolscache.NewSharedIndexInformer(&toolscache.ListWatch{}, &v1.Pod{}, 0, nil).AddEventHandler(newRecorder())
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		handle  func(own toolscache.ResourceEventHandlerRegistration) toolscache.ResourceEventHandlerRegistration
		wantErr bool
	}{
		"own handle": {handle: func(own toolscache.ResourceEventHandlerRegistration) toolscache.ResourceEventHandlerRegistration {
			return own
		}},
		"another kcache handle": {handle: func(toolscache.ResourceEventHandlerRegistration) toolscache.ResourceEventHandlerRegistration {
			return otherReg
		}},
		"client-go handle": {handle: func(toolscache.ResourceEventHandlerRegistration) toolscache.ResourceEventHandlerRegistration {
			return clientGoReg
		}, wantErr: true},
		"nil handle": {handle: func(toolscache.ResourceEventHandlerRegistration) toolscache.ResourceEventHandlerRegistration {
			return nil
		}, wantErr: true},
		"nil registration value": {handle: func(toolscache.ResourceEventHandlerRegistration) toolscache.ResourceEventHandlerRegistration {
			return (*registration)(nil)
		}, wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			inf := NewSharedIndexInformer(&toolscache.ListWatch{}, &v1.Pod{}, 0, nil)
			own, err := inf.AddEventHandler(newRecorder())
			if err != nil {
				t.Fatal(err)
			}
			err = inf.RemoveEventHandler(tc.handle(own))
			if (err != nil) != tc.wantErr {
				t.Errorf("RemoveEventHandler error = %v, want error %v", err, tc.wantErr)
			}
		})
	}

	t.Run("removal on a running informer ends the handler", func(t *testing.T) {
		checkRemovalEndsHandler(t, func(inf toolscache.SharedIndexInformer, reg toolscache.ResourceEventHandlerRegistration) error {
			if err := inf.RemoveEventHandler(reg); err != nil {
				return err
			}
			sc, ok := reg.(interface{ ShutdownChan() <-chan struct{} })
			if !ok {
				return fmt.Errorf("%T has no ShutdownChan", reg)
			}
			<-sc.ShutdownChan()
			return nil
		})
	})
}

// TestAddEventHandler_Refusals checks the errors kcache's rules give, seen
// through the adapter.
func TestAddEventHandler_Refusals(t *testing.T) {
	tests := map[string]struct {
		handler toolscache.ResourceEventHandler
		stopped bool
	}{
		"stopped informer": {handler: newRecorder(), stopped: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			src := newSource(t)
			inf := NewSharedIndexInformer(src, &v1.Pod{}, 0, nil)
			if tc.stopped {
				stop := run(t, inf)
				waitSynced(t, inf.HasSynced)
				stop()
				if !inf.IsStopped() {
					t.Fatal("IsStopped = false after stop")
				}
			}
			reg, err := inf.AddEventHandler(tc.handler)
			if err == nil || reg != nil {
				t.Errorf("AddEventHandler = %v, %v; want nil and an error", reg, err)
			}
			if tc.stopped {
				if err := inf.AddIndexers(toolscache.Indexers{"x": toolscache.MetaNamespaceIndexFunc}); err == nil {
					t.Error("AddIndexers after stop: no error")
				}
			}
		})
	}
}

// TestSetters_BeforeAndAfterRun checks SetTransform and both watch error
// handler setters: accepted (nil too) before Run, refused after.
func TestSetters_BeforeAndAfterRun(t *testing.T) {
	setters := map[string]func(toolscache.SharedIndexInformer) error{
		"SetTransform": func(i toolscache.SharedIndexInformer) error {
			return i.SetTransform(func(o interface{}) (interface{}, error) { return o, nil })
		},
		"SetTransform nil": func(i toolscache.SharedIndexInformer) error { return i.SetTransform(nil) },
		"SetWatchErrorHandler": func(i toolscache.SharedIndexInformer) error {
			return i.SetWatchErrorHandler(func(*toolscache.Reflector, error) {})
		},
		"SetWatchErrorHandler nil": func(i toolscache.SharedIndexInformer) error { return i.SetWatchErrorHandler(nil) },
		"SetWatchErrorHandlerWithContext": func(i toolscache.SharedIndexInformer) error {
			return i.SetWatchErrorHandlerWithContext(func(context.Context, *toolscache.Reflector, error) {})
		},
		"SetWatchErrorHandlerWithContext nil": func(i toolscache.SharedIndexInformer) error {
			return i.SetWatchErrorHandlerWithContext(nil)
		},
	}
	for name, set := range setters {
		t.Run(name, func(t *testing.T) {
			inf := NewSharedIndexInformer(newSource(t), &v1.Pod{}, 0, nil)
			if err := set(inf); err != nil {
				t.Errorf("before Run: %v", err)
			}
			run(t, inf)
			waitSynced(t, inf.HasSynced)
			if err := set(inf); err == nil {
				t.Error("after Run: no error")
			}
		})
	}
}

// TestSetTransform_AppliesToCachedObjects checks a client-go TransformFunc
// runs on what kcache caches.
func TestSetTransform_AppliesToCachedObjects(t *testing.T) {
	inf := NewSharedIndexInformer(newSource(t, newPod("ns", "a")), &v1.Pod{}, 0, nil)
	var transform toolscache.TransformFunc = func(obj interface{}) (interface{}, error) {
		p := obj.(*v1.Pod).DeepCopy()
		p.Labels = nil
		return p, nil
	}
	if err := inf.SetTransform(transform); err != nil {
		t.Fatal(err)
	}
	run(t, inf)
	waitSynced(t, inf.HasSynced)
	obj, ok, err := inf.GetStore().GetByKey("ns/a")
	if err != nil || !ok {
		t.Fatalf("GetByKey = %v, %v", ok, err)
	}
	if labels := obj.(*v1.Pod).Labels; labels != nil {
		t.Errorf("labels = %v, want none (transformed away)", labels)
	}
}

// failingLister is a ListerWatcher whose List always fails.
func failingLister(err error) *toolscache.ListWatch {
	return &toolscache.ListWatch{
		ListWithContextFunc:  func(context.Context, metav1.ListOptions) (runtime.Object, error) { return nil, err },
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) { return nil, err },
	}
}

// TestWatchErrorHandler_GetsReflectorNamingTheResource checks that both
// client-go handler forms receive the error and a client-go Reflector with
// the kcache Reflector's name and client-go's type description.
func TestWatchErrorHandler_GetsReflectorNamingTheResource(t *testing.T) {
	errList := errors.New("list failed")

	// What kcache's own Reflector calls itself, and what client-go's
	// informer describes the type as, for the same ListerWatcher.
	kcacheName := firstWatchError(t, func(report func(name, desc string, err error)) func(context.Context) {
		kc := kcache.NewSharedIndexInformer(failingLister(errList), &v1.Pod{}, 0, nil)
		_ = kc.SetWatchErrorHandlerWithContext(func(_ context.Context, r *kcache.Reflector, err error) {
			report(r.Name(), r.TypeDescription(), err)
		})
		return kc.RunWithContext
	})
	clientGoDesc := firstWatchError(t, func(report func(name, desc string, err error)) func(context.Context) {
		cg := toolscache.NewSharedIndexInformer(failingLister(errList), &v1.Pod{}, 0, nil)
		_ = cg.SetWatchErrorHandlerWithContext(func(_ context.Context, r *toolscache.Reflector, err error) {
			report(r.Name(), r.TypeDescription(), err)
		})
		return cg.RunWithContext
	})

	forms := map[string]func(toolscache.SharedIndexInformer, func(r *toolscache.Reflector, err error)) error{
		"plain": func(inf toolscache.SharedIndexInformer, h func(*toolscache.Reflector, error)) error {
			return inf.SetWatchErrorHandler(h)
		},
		"with context": func(inf toolscache.SharedIndexInformer, h func(*toolscache.Reflector, error)) error {
			return inf.SetWatchErrorHandlerWithContext(func(_ context.Context, r *toolscache.Reflector, err error) { h(r, err) })
		},
	}
	for name, set := range forms {
		t.Run(name, func(t *testing.T) {
			got := firstWatchError(t, func(report func(name, desc string, err error)) func(context.Context) {
				inf := NewSharedIndexInformer(failingLister(errList), &v1.Pod{}, 0, nil)
				if err := set(inf, func(r *toolscache.Reflector, err error) { report(r.Name(), r.TypeDescription(), err) }); err != nil {
					t.Fatal(err)
				}
				return inf.RunWithContext
			})
			want := watchError{name: kcacheName.name, desc: clientGoDesc.desc, err: errList}
			if got.name != want.name || got.desc != want.desc || !errors.Is(got.err, want.err) {
				t.Errorf("handler got %+v, want %+v", got, want)
			}
		})
	}
}

type watchError struct {
	name, desc string
	err        error
}

// firstWatchError runs the informer start builds until its watch error
// handler reports once, and returns the report.
func firstWatchError(t *testing.T, start func(report func(name, desc string, err error)) func(context.Context)) watchError {
	t.Helper()
	reports := make(chan watchError, 1)
	runFn := start(func(name, desc string, err error) {
		select {
		case reports <- watchError{name, desc, err}:
		default:
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { runFn(ctx) })
	defer func() { cancel(); wg.Wait() }()
	select {
	case r := <-reports:
		return r
	case <-time.After(30 * time.Second):
		t.Fatal("watch error handler never called")
	}
	return watchError{}
}

// TestReflectorNames_OneStandInPerReflector checks the stand-in is built
// once per kcache Reflector and carries its name and description.
func TestReflectorNames_OneStandInPerReflector(t *testing.T) {
	n := &reflectorNames{objType: &v1.Pod{}}
	newReflector := func(name, desc string) *kcache.Reflector {
		return kcache.NewReflectorWithOptions(&kcache.ListWatch{}, &v1.Pod{}, kcache.NewStore(kcache.MetaNamespaceKeyFunc),
			kcache.ReflectorOptions{Name: name, TypeDescription: desc})
	}
	r1, r2 := newReflector("one", "pods"), newReflector("two", "more pods")
	a, b, c := n.forKcache(r1), n.forKcache(r1), n.forKcache(r2)
	if a != b {
		t.Error("two stand-ins for one Reflector")
	}
	if a == c {
		t.Error("one stand-in for two Reflectors")
	}
	for _, tc := range []struct {
		got        *toolscache.Reflector
		name, desc string
	}{{a, "one", "pods"}, {c, "two", "more pods"}} {
		if tc.got.Name() != tc.name || tc.got.TypeDescription() != tc.desc {
			t.Errorf("stand-in = %q %q, want %q %q", tc.got.Name(), tc.got.TypeDescription(), tc.name, tc.desc)
		}
	}
	if n.forKcache(nil) != nil {
		t.Error("stand-in for a nil Reflector")
	}
}

// TestGetController_ReportsTheInformer checks the Controller view.
func TestGetController_ReportsTheInformer(t *testing.T) {
	inf := NewSharedIndexInformer(newSource(t, newPod("ns", "a")), &v1.Pod{}, 0, nil)
	ctrl := inf.GetController()
	if ctrl.HasSynced() {
		t.Error("HasSynced before Run")
	}
	run(t, inf)
	waitSynced(t, ctrl.HasSynced)
	if !ctrl.HasSynced() {
		t.Error("HasSynced = false after sync")
	}
	if got, want := ctrl.LastSyncResourceVersion(), inf.LastSyncResourceVersion(); got != want {
		t.Errorf("LastSyncResourceVersion = %q, informer says %q", got, want)
	}
}

// TestAddIndexers_VisibleThroughBothViews adds an index through the
// informer and reads it through the client-go indexer.
func TestAddIndexers_VisibleThroughBothViews(t *testing.T) {
	inf := NewSharedIndexInformer(newSource(t, newPod("ns", "a"), newPod("ns", "b")), &v1.Pod{}, 0, namespaceIndexers())
	byApp := func(obj interface{}) ([]string, error) { return []string{obj.(*v1.Pod).Labels["app"]}, nil }
	if err := inf.AddIndexers(toolscache.Indexers{"app": byApp}); err != nil {
		t.Fatal(err)
	}
	run(t, inf)
	waitSynced(t, inf.HasSynced)
	got, err := inf.GetIndexer().ByIndex("app", "b")
	if err != nil || len(got) != 1 || describe(got[0]) != "ns/b" {
		t.Errorf("ByIndex(app, b) = %v, %v", got, err)
	}
	names := inf.GetIndexer().GetIndexers()
	if _, ok := names["app"]; !ok || len(names) != 2 {
		t.Errorf("GetIndexers = %v, want app and namespace", names)
	}
}

// checkRemovalEndsHandler removes a handler of a running informer with
// remove, and checks it sees nothing afterwards.
func checkRemovalEndsHandler(t *testing.T, remove func(toolscache.SharedIndexInformer, toolscache.ResourceEventHandlerRegistration) error) {
	t.Helper()
	src := newSource(t, newPod("ns", "a"))
	inf := NewSharedIndexInformer(src, &v1.Pod{}, 0, nil)
	rec := newRecorder()
	reg, err := inf.AddEventHandler(rec)
	if err != nil {
		t.Fatal(err)
	}
	run(t, inf)
	waitSynced(t, reg.HasSynced)
	rec.next(t, 1)
	if err := remove(inf, reg); err != nil {
		t.Fatalf("removing the handler: %v", err)
	}
	// A removed handler sees nothing more; a second handler added now
	// proves later events were delivered.
	rec2 := newRecorder()
	if _, err := inf.AddEventHandler(rec2); err != nil {
		t.Fatal(err)
	}
	src.Add(newPod("ns", "b"))
	rec2.next(t, 2)
	if len(rec.events) != 0 {
		t.Errorf("removed handler got %q", <-rec.events)
	}
}
