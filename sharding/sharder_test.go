package sharding

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	kcache "github.com/kcache/cache"
	"github.com/kcache/cache/clientgo"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	toolscache "k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crfake "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// emptyReader is an API reader that finds nothing.
func emptyReader() client.Reader { return crfake.NewClientBuilder().Build() }

// testOptions are valid Options for identity, keeping Leases in leases.
func testOptions(leases *fake.Clientset, identity string) Options {
	return Options{
		Client:        leases.CoordinationV1(),
		Namespace:     testNamespace,
		Group:         testGroup,
		Identity:      identity,
		LeaseDuration: testLeaseDuration,
		RenewDeadline: testRenewDeadline,
		RetryPeriod:   testRetryPeriod,
		Objects:       []runtime.Object{&corev1.Pod{}},
	}
}

func TestNew_RejectsInvalidOptions(t *testing.T) {
	leases := fake.NewClientset()
	for name, tc := range map[string]func(*Options){
		"no sharded kind":          func(o *Options) { o.Objects = nil },
		"a nil sharded kind":       func(o *Options) { o.Objects = []runtime.Object{nil} },
		"no lease client":          func(o *Options) { o.Client = nil },
		"no identity":              func(o *Options) { o.Identity = "" },
		"renew deadline too long":  func(o *Options) { o.RenewDeadline = o.LeaseDuration },
		"lease in fractional secs": func(o *Options) { o.LeaseDuration = 2500 * time.Millisecond },
	} {
		t.Run(name, func(t *testing.T) {
			opts := testOptions(leases, "replica-a")
			tc(&opts)
			if _, err := New(opts); !errors.Is(err, ErrInvalidOptions) {
				t.Fatalf("New: got %v, want an error wrapping ErrInvalidOptions", err)
			}
		})
	}
}

// countingReconciler counts the requests it is given.
type countingReconciler struct {
	mu    sync.Mutex
	calls []reconcile.Request
}

func (c *countingReconciler) Reconcile(_ context.Context, req reconcile.Request) (reconcile.Result, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, req)
	return reconcile.Result{}, nil
}

func (c *countingReconciler) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.calls)
}

// A replica that claims no range reconciles nothing: requests are held
// back (requeued after RetryPeriod), before its first range and after its
// renewals failed for RenewDeadline.
func TestReconciler_HoldsRequestsBackWhileClaimingNoRange(t *testing.T) {
	for name, tc := range map[string]struct {
		// start runs the replica's membership, if at all, and waits
		// until it claims no range.
		start func(t *testing.T, s *Sharder, faults *leaseFaults)
	}{
		"before its first range": {start: func(*testing.T, *Sharder, *leaseFaults) {}},
		"after its renewals failed": {start: func(t *testing.T, s *Sharder, faults *leaseFaults) {
			runSharder(t, s)
			eventually(t, settleTimeout, "the first range", func() error { return claims(s, true) })
			faults.cutOff("replica-a")
			eventually(t, settleTimeout, "letting go", func() error { return claims(s, false) })
		}},
	} {
		t.Run(name, func(t *testing.T) {
			leases, faults := newLeases()
			s, err := New(testOptions(leases, "replica-a"))
			if err != nil {
				t.Fatal(err)
			}
			next := &countingReconciler{}
			r := s.Reconciler(emptyReader(), &corev1.Pod{}, next)
			tc.start(t, s, faults)
			res, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "pod-00"}})
			if err != nil || res.RequeueAfter != testRetryPeriod {
				t.Errorf("Reconcile: got %+v, %v; want a requeue after %v", res, err, testRetryPeriod)
			}
			if n := next.count(); n != 0 {
				t.Errorf("the wrapped reconciler ran %d times, want 0", n)
			}
		})
	}
}

// claims reports an error unless s claims a range exactly when want.
func claims(s *Sharder, want bool) error {
	if got := s.Claiming(); got != want {
		return errors.New("claiming is not as wanted yet")
	}
	return nil
}

// runSharder runs s's membership until the test ends.
func runSharder(t *testing.T, s *Sharder) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.Start(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

// handlerLog records what an informer's handler was told.
type handlerLog struct {
	mu      sync.Mutex
	added   []string
	deleted []string
}

func (h *handlerLog) OnAdd(obj interface{}, _ bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.added = append(h.added, obj.(*corev1.Pod).Name)
}

func (h *handlerLog) OnUpdate(_, _ interface{}) {}

func (h *handlerLog) OnDelete(obj interface{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	key, _ := toolscache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	h.deleted = append(h.deleted, key)
}

func (h *handlerLog) counts() (added, deleted int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.added), len(h.deleted)
}

// runInformer runs inf until the test ends and waits for it to sync.
func runInformer(t *testing.T, inf toolscache.SharedIndexInformer) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		inf.RunWithContext(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	if !toolscache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("the informer did not sync")
	}
}

// When a second replica joins, the first one's informer gives up half its
// Pods: its handlers hear nothing of them (a move is not a deletion) and
// its cache keeps exactly its new range; the newcomer's handlers get them
// as adds. A real deletion still reaches the handlers.
func TestNewInformer_MoveReachesNoHandlerAsADeletion(t *testing.T) {
	pods := newPods(t, 40)
	leases := fake.NewClientset()
	a, err := New(testOptions(leases, "replica-a"))
	if err != nil {
		t.Fatal(err)
	}
	infA := a.NewInformer(pods, &corev1.Pod{}, 0, toolscache.Indexers{})
	logA := &handlerLog{}
	if _, err := infA.AddEventHandler(logA); err != nil {
		t.Fatal(err)
	}
	runSharder(t, a)
	runInformer(t, infA)
	if added, _ := logA.counts(); added != 40 {
		t.Fatalf("replica-a alone: %d adds, want 40", added)
	}

	b, err := New(testOptions(leases, "replica-b"))
	if err != nil {
		t.Fatal(err)
	}
	infB := b.NewInformer(pods, &corev1.Pod{}, 0, toolscache.Indexers{})
	logB := &handlerLog{}
	if _, err := infB.AddEventHandler(logB); err != nil {
		t.Fatal(err)
	}
	runSharder(t, b)
	runInformer(t, infB)
	eventually(t, settleTimeout, "replica-a shrinks", func() error {
		if n, m := len(infA.GetStore().ListKeys()), len(infB.GetStore().ListKeys()); n+m != 40 {
			return errors.New("the caches overlap")
		}
		return nil
	})
	for _, obj := range infA.GetStore().List() {
		if !a.owns(obj.(runtime.Object)) {
			t.Errorf("replica-a holds %s outside its range", obj.(*corev1.Pod).Name)
		}
	}
	addedB, _ := logB.counts()
	if _, deletedA := logA.counts(); deletedA != 0 || addedB != len(infB.GetStore().ListKeys()) || addedB == 0 {
		t.Errorf("after the move: replica-a heard %d deletions (want 0), replica-b %d adds for %d Pods", deletedA, addedB, len(infB.GetStore().ListKeys()))
	}

	gone := infA.GetStore().List()[0].(*corev1.Pod).DeepCopy()
	pods.Delete(gone)
	eventually(t, settleTimeout, "the deletion reaches replica-a", func() error {
		logA.mu.Lock()
		defer logA.mu.Unlock()
		if !slices.Contains(logA.deleted, "ns/"+gone.Name) {
			return errors.New("not yet")
		}
		return nil
	})
}

// Informers of kinds the Sharder does not shard are the bridge's, holding
// every object; those of sharded kinds still run on kcache.
func TestNewInformer_OnlyNamedKindsAreSharded(t *testing.T) {
	s, err := New(testOptions(fake.NewClientset(), "replica-a"))
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		obj     runtime.Object
		sharded bool
	}{
		"a sharded kind":        {obj: &corev1.Pod{}, sharded: true},
		"any other kind":        {obj: &corev1.ConfigMap{}, sharded: false},
		"a cluster-scoped kind": {obj: &corev1.Node{}, sharded: false},
	} {
		t.Run(name, func(t *testing.T) {
			inf := s.NewInformer(&toolscache.ListWatch{}, tc.obj, 0, toolscache.Indexers{})
			if _, sharded := inf.(*shardedInformer); sharded != tc.sharded {
				t.Errorf("sharded: got %v, want %v", sharded, tc.sharded)
			}
			kc, ok := clientgo.Unwrap(inf)
			if !ok {
				t.Fatal("the informer does not run on kcache")
			}
			var _ kcache.SharedIndexInformer = kc
		})
	}
}

// Wiring mistakes are caught when the reconciler is built.
func TestReconciler_PanicsOnWiringMistakes(t *testing.T) {
	s, err := New(testOptions(fake.NewClientset(), "replica-a"))
	if err != nil {
		t.Fatal(err)
	}
	for name, build := range map[string]func(){
		"a kind not sharded": func() { s.Reconciler(emptyReader(), &corev1.ConfigMap{}, &countingReconciler{}) },
		"no reader":          func() { s.Reconciler(nil, &corev1.Pod{}, &countingReconciler{}) },
		"no reconciler":      func() { s.Reconciler(emptyReader(), &corev1.Pod{}, nil) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			build()
		})
	}
}

// Once the replica claims a range, a request reaches the wrapped
// reconciler only for an object of its range, or for one that is gone
// from the server (a deletion); an object that moved away, in the cache or
// not, is dropped.
func TestReconciler_ActsOnlyOnItsRange(t *testing.T) {
	first, _ := kcache.EvenShardSelector(0, 2)
	sel, err := kcache.ParseShardSelector(first)
	if err != nil {
		t.Fatal(err)
	}
	var mine, theirs *corev1.Pod
	for i := 0; mine == nil || theirs == nil; i++ {
		pod := testPod(i)
		if in, _ := sel.Matches(pod); in {
			mine = pod
		} else {
			theirs = pod
		}
	}
	for name, tc := range map[string]struct {
		cached []*corev1.Pod
		live   []*corev1.Pod
		ask    *corev1.Pod
		runs   bool
	}{
		"cached, in range":                 {cached: []*corev1.Pod{mine}, live: []*corev1.Pod{mine}, ask: mine, runs: true},
		"cached, moved away":               {cached: []*corev1.Pod{theirs}, live: []*corev1.Pod{theirs}, ask: theirs, runs: false},
		"not cached, deleted":              {ask: mine, runs: true},
		"not cached, held by another":      {live: []*corev1.Pod{theirs}, ask: theirs, runs: false},
		"not cached yet, on its way in":    {live: []*corev1.Pod{mine}, ask: mine, runs: false},
		"not cached, deleted, other range": {ask: theirs, runs: true},
	} {
		t.Run(name, func(t *testing.T) {
			s, err := New(testOptions(fake.NewClientset(), "replica-a"))
			if err != nil {
				t.Fatal(err)
			}
			if err := s.setShard(first); err != nil {
				t.Fatal(err)
			}
			store := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{})
			for _, p := range tc.cached {
				if err := store.Add(p); err != nil {
					t.Fatal(err)
				}
			}
			s.stores[reflect.TypeFor[*corev1.Pod]()] = []toolscache.Indexer{store}
			live := crfake.NewClientBuilder()
			for _, p := range tc.live {
				live = live.WithObjects(p.DeepCopy())
			}
			next := &countingReconciler{}
			req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: tc.ask.Namespace, Name: tc.ask.Name}}
			res, err := s.Reconciler(live.Build(), &corev1.Pod{}, next).Reconcile(context.Background(), req)
			if err != nil || res != (reconcile.Result{}) {
				t.Errorf("Reconcile: got %+v, %v; want no requeue and no error", res, err)
			}
			if runs := next.count() == 1; runs != tc.runs {
				t.Errorf("the wrapped reconciler ran: %v, want %v", runs, tc.runs)
			}
		})
	}
}

// A move waits for the reconciles of objects leaving the range before the
// informers relist, and for no longer than RetryPeriod; reconciles of
// objects that stay do not hold it up.
func TestSetShard_WaitsForReconcilesOfLeavingObjects(t *testing.T) {
	whole, _ := kcache.EvenShardSelector(0, 1)
	firstHalf, _ := kcache.EvenShardSelector(0, 2)
	sel, err := kcache.ParseShardSelector(firstHalf)
	if err != nil {
		t.Fatal(err)
	}
	var staying, leaving *corev1.Pod
	for i := 0; staying == nil || leaving == nil; i++ {
		if in, _ := sel.Matches(testPod(i)); in {
			staying = testPod(i)
		} else {
			leaving = testPod(i)
		}
	}
	for name, tc := range map[string]struct {
		running *corev1.Pod
		// end ends the running reconcile, or lets RetryPeriod pass.
		end   func(end func(), clk *clocktesting.FakeClock)
		waits bool
	}{
		"a reconcile of an object that stays": {running: staying, waits: false},
		"a reconcile of an object that leaves, ending": {running: leaving, waits: true,
			end: func(end func(), _ *clocktesting.FakeClock) { end() }},
		"a reconcile of an object that leaves, running past RetryPeriod": {running: leaving, waits: true,
			end: func(_ func(), clk *clocktesting.FakeClock) { clk.Step(testRetryPeriod) }},
	} {
		t.Run(name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Now())
			opts := testOptions(fake.NewClientset(), "replica-a")
			opts.Clock = clk
			s, err := New(opts)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.setShard(whole); err != nil {
				t.Fatal(err)
			}
			end, ok := s.admit(tc.running)
			if !ok {
				t.Fatal("a reconcile in the whole range was not admitted")
			}
			moved := make(chan error, 1)
			go func() { moved <- s.setShard(firstHalf) }()
			if !tc.waits {
				if err := <-moved; err != nil {
					t.Fatal(err)
				}
				end()
				return
			}
			eventually(t, settleTimeout, "the move waits", func() error {
				if !clk.HasWaiters() {
					return errors.New("no timer yet")
				}
				return nil
			})
			select {
			case err := <-moved:
				t.Fatalf("the move returned (%v) while a reconcile of a leaving object ran", err)
			default:
			}
			if _, ok := s.admit(leaving); ok {
				t.Error("a new reconcile of a leaving object was admitted during the move")
			}
			tc.end(end, clk)
			if err := <-moved; err != nil {
				t.Fatal(err)
			}
		})
	}
}
