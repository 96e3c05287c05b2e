package clientgo

import (
	// Under -race on Go 1.26 the tests run on one processor: its race
	// runtime crashes on synctest bubbles otherwise (golang/go#78156).
	_ "github.com/kcache/cache/internal/racesafe"

	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	toolscache "k8s.io/client-go/tools/cache"

	kcache "github.com/kcache/cache"
)

// This file is the fake-clientset matrix: an informer over client-go's
// fake clientsets, built each way a unit test builds one, must sync within
// fakeSyncBudget with the WatchListClient gate at its default (on), and
// see the same objects and events as an informer made to list page by
// page. It runs on every client-go minor the bridge supports
// (tools/minors.sh). With KCACHE_FAKE_SYNC_CLIENTGO=1,
// TestFakeClientset_ClientGoComparison also times client-go's own
// informer each way, for the report.

// fakeSyncBudget is the longest a fake-backed informer may take to sync.
const fakeSyncBudget = time.Second

// fakePods is how many pods each fake clientset starts with: the most that
// client-go's object tracker can replay into one watch (its buffer), which
// a streaming list over a fake does.
const fakePods = 100

// fakeClient is a fake clientset constructor.
type fakeClient struct {
	name string
	make func(objects ...runtime.Object) kubernetes.Interface
}

var fakeClients = []fakeClient{
	{"NewSimpleClientset", func(o ...runtime.Object) kubernetes.Interface {
		//lint:ignore SA1019 the deprecated constructor is one of the two fakes users sync informers on
		return fake.NewSimpleClientset(o...)
	}},
	{"NewClientset", func(o ...runtime.Object) kubernetes.Interface { return fake.NewClientset(o...) }},
}

// informerWay builds a started-later informer over a clientset, the way a
// unit test would; sharedInformer is what every way yields.
type informerWay struct {
	name string
	// kcache builds the informer on kcache.
	kcache func(c kubernetes.Interface) sharedInformer
	// clientGo builds the same informer on client-go, for the comparison;
	// nil when the way has no client-go form.
	clientGo func(c kubernetes.Interface) sharedInformer
}

// sharedInformer is what the matrix needs of either library's informer,
// in terms that do not name either library's registration type (kcache's
// and client-go's differ from v0.36 on).
type sharedInformer struct {
	run        func(ctx context.Context)
	hasSynced  func() bool
	keys       func() []string
	addHandler func(h *eventLog) (synced func() bool, err error)
}

// fromKcache presents a kcache informer to the matrix.
func fromKcache(inf kcache.SharedIndexInformer) sharedInformer {
	return sharedInformer{
		run: inf.RunWithContext, hasSynced: inf.HasSynced, keys: inf.GetStore().ListKeys,
		addHandler: func(h *eventLog) (func() bool, error) {
			reg, err := inf.AddEventHandler(h)
			if err != nil {
				return nil, err
			}
			return reg.HasSynced, nil
		},
	}
}

// fromClientGo presents a client-go (or bridge) informer to the matrix.
func fromClientGo(inf toolscache.SharedIndexInformer) sharedInformer {
	return sharedInformer{
		run: inf.RunWithContext, hasSynced: inf.HasSynced, keys: inf.GetStore().ListKeys,
		addHandler: func(h *eventLog) (func() bool, error) {
			reg, err := inf.AddEventHandler(h)
			if err != nil {
				return nil, err
			}
			return reg.HasSynced, nil
		},
	}
}

// podFuncs are the list and watch functions a test writes by hand.
func podFuncs(c kubernetes.Interface) (func(context.Context, metav1.ListOptions) (runtime.Object, error), func(context.Context, metav1.ListOptions) (watch.Interface, error)) {
	return func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return c.CoreV1().Pods("").List(ctx, o)
		}, func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return c.CoreV1().Pods("").Watch(ctx, o)
		}
}

func kcacheListWatch(c kubernetes.Interface) *kcache.ListWatch {
	list, watchFn := podFuncs(c)
	return &kcache.ListWatch{ListWithContextFunc: list, WatchFuncWithContext: watchFn}
}

func clientGoListWatch(c kubernetes.Interface) *toolscache.ListWatch {
	list, watchFn := podFuncs(c)
	return &toolscache.ListWatch{ListWithContextFunc: list, WatchFuncWithContext: watchFn}
}

var informerWays = []informerWay{
	{
		name: "hand-made ListWatch",
		kcache: func(c kubernetes.Interface) sharedInformer {
			return fromKcache(kcache.NewSharedIndexInformer(kcacheListWatch(c), &v1.Pod{}, 0, kcache.Indexers{}))
		},
		clientGo: func(c kubernetes.Interface) sharedInformer {
			return fromClientGo(toolscache.NewSharedIndexInformer(clientGoListWatch(c), &v1.Pod{}, 0, toolscache.Indexers{}))
		},
	},
	{
		name: "ToListWatcherWithWatchListSemantics",
		kcache: func(c kubernetes.Interface) sharedInformer {
			lw := kcache.ToListWatcherWithWatchListSemantics(kcacheListWatch(c), c)
			return fromKcache(kcache.NewSharedIndexInformer(lw, &v1.Pod{}, 0, kcache.Indexers{}))
		},
		clientGo: func(c kubernetes.Interface) sharedInformer {
			lw := toolscache.ToListWatcherWithWatchListSemantics(clientGoListWatch(c), c)
			return fromClientGo(toolscache.NewSharedIndexInformer(lw, &v1.Pod{}, 0, toolscache.Indexers{}))
		},
	},
	{
		name: "bridge, hand-made client-go ListWatch",
		kcache: func(c kubernetes.Interface) sharedInformer {
			return fromClientGo(NewSharedIndexInformer(clientGoListWatch(c), &v1.Pod{}, 0, toolscache.Indexers{}))
		},
	},
	{
		name: "bridge, generated factory",
		kcache: func(c kubernetes.Interface) sharedInformer {
			return fromClientGo(NewSharedInformerFactory(c, 0).Core().V1().Pods().Informer())
		},
	},
}

// pagedOnly makes an informer list page by page: it says its client cannot
// serve streaming lists. It is the matrix's reference.
type pagedOnly struct{ *kcache.ListWatch }

func (pagedOnly) IsWatchListSemanticsUnSupported() bool { return true }

// eventLog records an informer's events as lines.
type eventLog struct {
	mu    sync.Mutex // guards lines
	lines []string
}

func (l *eventLog) add(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, line)
}

func (l *eventLog) snapshot() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.lines)
}

func (l *eventLog) OnAdd(obj interface{}, initial bool) {
	l.add(fmt.Sprintf("add %s initial=%v", objectKey(obj), initial))
}

func (l *eventLog) OnUpdate(_, obj interface{}) { l.add("update " + objectKey(obj)) }

func (l *eventLog) OnDelete(obj interface{}) { l.add("delete " + objectKey(obj)) }

func objectKey(obj interface{}) string {
	if m, err := meta.Accessor(obj); err == nil {
		return m.GetNamespace() + "/" + m.GetName()
	}
	return fmt.Sprintf("%T", obj)
}

// fakeRun is what one informer did over one fake clientset.
type fakeRun struct {
	// synced is whether HasSynced turned true within the wait.
	synced bool
	// syncedAfter is how long HasSynced took to turn true.
	syncedAfter time.Duration
	// keysAtSync are the store's keys when HasSynced turned true.
	keysAtSync []string
	// initial are the handler's events up to its registration's HasSynced,
	// sorted (a fake lists in no fixed order).
	initial []string
	// live are the handler's events for the changes made after the sync,
	// in order.
	live []string
}

// seedPods returns the fake's starting pods.
func seedPods() []runtime.Object {
	out := make([]runtime.Object, 0, fakePods)
	for i := range fakePods {
		out = append(out, newPod(fmt.Sprintf("ns%d", i%3), fmt.Sprintf("pod-%03d", i)))
	}
	return out
}

// runOverFake starts the informer build makes over a fresh fake clientset
// of newClient, times its sync (waiting at most waitAtMost), and, once
// synced, records the initial events. With settle set, it then waits for
// settle (synctest.Wait: the informer's watch is open and idle; client-go
// v0.35's fake tracker drops the changes made before a watch opens),
// creates, updates and deletes a pod and records the events.
func runOverFake(t *testing.T, newClient fakeClient, build func(kubernetes.Interface) sharedInformer, waitAtMost time.Duration, settle func()) fakeRun {
	t.Helper()
	c := newClient.make(seedPods()...)
	inf := build(c)
	log := &eventLog{}
	regSynced, err := inf.addHandler(log)
	if err != nil {
		t.Fatalf("AddEventHandler: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { inf.run(ctx) })
	defer func() { cancel(); wg.Wait() }()

	var out fakeRun
	start := time.Now()
	err = wait.PollUntilContextTimeout(ctx, time.Millisecond, waitAtMost, true, func(context.Context) (bool, error) {
		return inf.hasSynced(), nil
	})
	if err != nil {
		return out
	}
	out.synced, out.syncedAfter = true, time.Since(start)
	out.keysAtSync = inf.keys()
	slices.Sort(out.keysAtSync)
	if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, wait.ForeverTestTimeout, true, func(context.Context) (bool, error) {
		return regSynced(), nil
	}); err != nil {
		t.Fatalf("the handler's registration did not sync")
	}
	out.initial = log.snapshot()
	slices.Sort(out.initial)
	if settle == nil {
		return out
	}
	settle()

	pods := c.CoreV1().Pods("ns0")
	if _, err := pods.Create(ctx, newPod("ns0", "late"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create: %v", err)
	}
	changed := newPod("ns0", "pod-000")
	changed.Labels["changed"] = "yes"
	if _, err := pods.Update(ctx, changed, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update: %v", err)
	}
	if err := pods.Delete(ctx, "pod-003", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	want := len(out.initial) + 3
	if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, wait.ForeverTestTimeout, true, func(context.Context) (bool, error) {
		return len(log.snapshot()) >= want, nil
	}); err != nil {
		t.Fatalf("the changes after the sync did not arrive: %q", log.snapshot()[len(out.initial):])
	}
	out.live = log.snapshot()[len(out.initial):]
	return out
}

// TestFakeClientset_InformersSyncAtOnce is the matrix: each way of building
// an informer over each fake clientset syncs within fakeSyncBudget, with the
// objects, initial events and later events of an informer that lists page
// by page. Each informer runs in a synctest bubble, where time passes only
// while every goroutine waits: the budget bounds what the informer waits
// for (the 90 s fallback would show as 90 s), not a busy machine's CPU.
func TestFakeClientset_InformersSyncAtOnce(t *testing.T) {
	for _, client := range fakeClients {
		var ref fakeRun
		synctest.Test(t, func(t *testing.T) {
			ref = runOverFake(t, client, func(c kubernetes.Interface) sharedInformer {
				return fromKcache(kcache.NewSharedIndexInformer(pagedOnly{kcacheListWatch(c)}, &v1.Pod{}, 0, kcache.Indexers{}))
			}, wait.ForeverTestTimeout, synctest.Wait)
		})
		if !ref.synced || len(ref.keysAtSync) != fakePods {
			t.Fatalf("%s: the paged reference did not sync with %d pods: %+v", client.name, fakePods, ref)
		}
		for _, way := range informerWays {
			t.Run(client.name+"/"+way.name, func(t *testing.T) {
				var got fakeRun
				synctest.Test(t, func(t *testing.T) { got = runOverFake(t, client, way.kcache, fakeSyncBudget, synctest.Wait) })
				if !got.synced {
					t.Fatalf("not synced within %v", fakeSyncBudget)
				}
				if diff := cmp.Diff(ref.keysAtSync, got.keysAtSync); diff != "" {
					t.Errorf("store at sync, -paged +this way:\n%s", diff)
				}
				if diff := cmp.Diff(ref.initial, got.initial); diff != "" {
					t.Errorf("initial events, -paged +this way:\n%s", diff)
				}
				if diff := cmp.Diff(ref.live, got.live); diff != "" {
					t.Errorf("events after the sync, -paged +this way:\n%s", diff)
				}
			})
		}
	}
}

// TestFakeClientset_ClientGoComparison times client-go's informer and
// kcache's over the fakes, each way, and logs a table. It only runs with
// KCACHE_FAKE_SYNC_CLIENTGO=1: client-go's informer over a hand-made
// ListWatch does not sync, and each such row waits out its limit.
func TestFakeClientset_ClientGoComparison(t *testing.T) {
	if os.Getenv("KCACHE_FAKE_SYNC_CLIENTGO") != "1" {
		t.Skip("set KCACHE_FAKE_SYNC_CLIENTGO=1 to time client-go's informers too")
	}
	const limit = 5 * time.Second
	show := func(r fakeRun) string {
		if !r.synced {
			return fmt.Sprintf("not synced in %v", limit)
		}
		return r.syncedAfter.Round(time.Millisecond).String()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-20s | %-40s | %-22s | %s\n", "fake", "way", "client-go", "kcache")
	for _, client := range fakeClients {
		for _, way := range informerWays {
			cg := "(no client-go form)"
			if way.clientGo != nil {
				cg = show(runOverFake(t, client, way.clientGo, limit, nil))
			}
			kc := show(runOverFake(t, client, way.kcache, limit, nil))
			fmt.Fprintf(&b, "%-20s | %-40s | %-22s | %s\n", client.name, way.name, cg, kc)
		}
	}
	t.Logf("sync of an informer over a fake clientset with %d pods:\n%s", fakePods, b.String())
}
