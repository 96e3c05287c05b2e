package cache

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	framework "github.com/kcache/cache/testing"
)

// soakFlag selects the soak test's length: "short" (the default, part of
// every test run) or "long" (make soak). SOAK=long in the environment does
// the same.
var soakFlag = flag.String("soak", "", `soak test length: "short" (default) or "long"; SOAK=long also selects long`)

// soakConfig sizes a soak run.
type soakConfig struct {
	name string
	// objects is the number of live objects the workload hovers around.
	objects int
	// changes is the number of changes the workload applies.
	changes int
	// window is the size of the simulated watch cache, in changes.
	window int
	// quiesceTimeout bounds the wait for the informers to settle.
	quiesceTimeout time.Duration
	// heapSlack bounds the live heap after the run, above the one before;
	// zero leaves the heap unchecked. A heap bound depends on the garbage
	// collector, so only the long soak (make soak, outside make test) has
	// one; the short one relies on goleak for leaked goroutines.
	heapSlack uint64
}

func soakConfigFor(t *testing.T) soakConfig {
	mode := *soakFlag
	if mode == "" {
		mode = os.Getenv("SOAK")
	}
	switch mode {
	case "", "short":
		return soakConfig{name: "short", objects: 1000, changes: 20_000, window: 2000, quiesceTimeout: time.Minute}
	case "long":
		return soakConfig{name: "long", objects: 10_000, changes: 200_000, window: 10_000, quiesceTimeout: 5 * time.Minute, heapSlack: 256 << 20}
	}
	t.Fatalf("unknown soak length %q: want short or long", mode)
	return soakConfig{}
}

// soakFaults is the fault mix each informer's ListerWatcher injects.
func soakFaults(rng *rand.Rand) framework.FaultConfig {
	return framework.FaultConfig{
		Rand:               rng,
		ListGone:           0.05,
		ContinueGone:       0.1,
		ListInternalError:  0.05,
		ListTimeout:        0.05,
		WatchGone:          0.05,
		WatchInternalError: 0.05,
		WatchTimeout:       0.05,
		StreamClosed:       0.05,
		StreamDropped:      0.001,
		ErrorEvent:         0.0005,
		Bookmark:           0.01,
		Delay:              0.01,
		MaxDelay:           200 * time.Microsecond,
	}
}

// soakNoWatchList hides the server's streaming lists from an informer, so
// that it lists page by page.
type soakNoWatchList struct {
	*framework.FakeControllerSource
}

func (soakNoWatchList) IsWatchListSemanticsUnSupported() bool { return true }

// soakInformer is one informer under test, with its handlers.
type soakInformer struct {
	// errMu guards watchErrors, counts of the errors told to the watch
	// error handler, by kind.
	errMu       sync.Mutex
	watchErrors map[string]int

	name     string
	informer *sharedIndexInformer
	faults   *framework.FaultyListerWatcher
	handlers []*soakHandler
	// late is registered half-way through the workload.
	late *soakHandler
}

// soakByNode indexes pods by node, to keep index maintenance in the loop.
func soakByNode(obj interface{}) ([]string, error) {
	return []string{obj.(*v1.Pod).Spec.NodeName}, nil
}

// slowBacklogLimit is the backlog limit of the slow handlers: small, so
// that their backlogs merge.
const slowBacklogLimit = 32

func newSoakInformer(t *testing.T, name string, lw *framework.FaultyListerWatcher, resync time.Duration, clk warpClock) *soakInformer {
	inf := newSharedIndexInformer(lw, &v1.Pod{}, SharedIndexInformerOptions{
		ResyncPeriod: resync,
		Indexers:     Indexers{"node": soakByNode},
	}, clk)
	si := &soakInformer{name: name, informer: inf, faults: lw, watchErrors: map[string]int{}}
	if err := inf.SetWatchErrorHandlerWithContext(si.countWatchError); err != nil {
		t.Fatal(err)
	}
	si.add(t, newSoakHandler(name+"/fast", 0))
	previous := SetListenerBacklogLimit(slowBacklogLimit)
	si.add(t, newSoakHandler(name+"/slow", time.Millisecond))
	SetListenerBacklogLimit(previous)
	return si
}

func (si *soakInformer) add(t *testing.T, h *soakHandler) {
	t.Helper()
	reg, err := si.informer.AddEventHandler(h)
	if err != nil {
		t.Fatalf("%s: adding handler %s: %v", si.name, h.name, err)
	}
	h.setRegistration(reg)
	si.handlers = append(si.handlers, h)
}

// countWatchError replaces the default watch error handler: it counts the
// errors that ended list-and-watch cycles instead of logging them.
func (si *soakInformer) countWatchError(_ context.Context, _ *Reflector, err error) {
	si.errMu.Lock()
	defer si.errMu.Unlock()
	kind := "other"
	switch {
	case isExpiredError(err):
		kind = "expired"
	case isTooLargeResourceVersionError(err):
		kind = "tooLarge"
	default:
		if s, ok := err.(interface{ Status() metav1.Status }); ok {
			kind = string(s.Status().Reason)
		}
	}
	si.watchErrors[kind]++
}

// soakWorkload drives random changes into the server and remembers what
// it created.
type soakWorkload struct {
	s       *framework.FakeControllerSource
	rng     *rand.Rand
	target  int
	live    []int
	at      map[int]int // id → index in live
	current map[int]*v1.Pod
	gen     map[int]int // id → incarnation
	nextID  int
	applied int
}

func newSoakWorkload(s *framework.FakeControllerSource, rng *rand.Rand, target int) *soakWorkload {
	return &soakWorkload{s: s, rng: rng, target: target, at: map[int]int{}, current: map[int]*v1.Pod{}, gen: map[int]int{}}
}

func (w *soakWorkload) create(id int) {
	w.gen[id]++
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: fmt.Sprint("ns", id%7),
			Name:      fmt.Sprint("pod-", id),
			UID:       types.UID(fmt.Sprintf("uid-%d-%d", id, w.gen[id])),
			Labels:    map[string]string{"app": fmt.Sprint("app", id%11)},
		},
		Spec: v1.PodSpec{NodeName: fmt.Sprint("node-", w.rng.IntN(20))},
	}
	w.s.Add(p)
	w.current[id] = p
	w.at[id] = len(w.live)
	w.live = append(w.live, id)
	w.applied++
}

func (w *soakWorkload) update(id int) {
	p := w.current[id].DeepCopy()
	p.Spec.NodeName = fmt.Sprint("node-", w.rng.IntN(20))
	w.s.Modify(p)
	w.current[id] = p
	w.applied++
}

func (w *soakWorkload) remove(id int) {
	p := w.current[id].DeepCopy()
	w.s.Delete(p)
	delete(w.current, id)
	i := w.at[id]
	last := w.live[len(w.live)-1]
	w.live[i], w.at[last] = last, i
	w.live = w.live[:len(w.live)-1]
	delete(w.at, id)
	w.applied++
}

func (w *soakWorkload) randomLive() (int, bool) {
	if len(w.live) == 0 {
		return 0, false
	}
	return w.live[w.rng.IntN(len(w.live))], true
}

func (w *soakWorkload) newID() int {
	w.nextID++
	return w.nextID
}

// step applies one random operation: a create, update or delete, or now
// and then a burst (one object updated many times in a row, objects
// deleted and recreated under the same name, a batch created and half of
// it deleted at once).
func (w *soakWorkload) step() {
	id, ok := w.randomLive()
	switch r := w.rng.IntN(100); {
	case !ok || r < 25 && len(w.live) < w.target+w.target/10 || len(w.live) < w.target-w.target/10:
		w.create(w.newID())
	case r < 65:
		w.update(id)
	case r < 90:
		w.remove(id)
	case r < 95:
		for range 1 + w.rng.IntN(20) {
			w.update(id)
		}
	case r < 98:
		for range 1 + w.rng.IntN(3) {
			w.remove(id)
			w.create(id)
		}
	default:
		fresh := make([]int, 0, 50)
		for range 10 + w.rng.IntN(40) {
			fresh = append(fresh, w.newID())
			w.create(fresh[len(fresh)-1])
		}
		for _, id := range fresh[:len(fresh)/2] {
			w.remove(id)
		}
	}
}

// soakFigures are what a run reports.
type soakFigures struct {
	maxLag     map[string]int64
	maxBacklog map[string]int
	merged     map[string]uint64
	peakHeap   uint64
}

func TestSoak_InformersUnderFaultsMatchTheServer(t *testing.T) {
	cfg := soakConfigFor(t)
	seed := uint64(testSeed(t))
	leaks := goleak.IgnoreCurrent()
	heapBefore := liveHeap()
	began := time.Now()

	server := framework.NewFakeControllerSourceWithOptions(framework.FakeControllerSourceOptions{Paging: true, WatchCacheSize: cfg.window})
	work := newSoakWorkload(server, rand.New(rand.NewPCG(seed, 0)), cfg.objects)
	for range cfg.objects / 2 {
		work.create(work.newID())
	}

	clk := newWarpClock(1000)
	streaming := newSoakInformer(t, "streaming",
		framework.NewFaultyListerWatcher(server, soakFaults(rand.New(rand.NewPCG(seed, 1)))), 0, clk)
	paged := newSoakInformer(t, "paged",
		framework.NewFaultyListerWatcher(soakNoWatchList{server}, soakFaults(rand.New(rand.NewPCG(seed, 2)))), 10*time.Minute, clk)
	informers := []*soakInformer{streaming, paged}

	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Logger{}))
	var wg sync.WaitGroup
	for _, si := range informers {
		wg.Go(func() { si.informer.RunWithContext(ctx) })
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			wg.Wait()
			server.Shutdown()
		}
	}
	defer stop()

	figures := runSoakWorkload(t, cfg, work, server, informers)
	for _, si := range informers {
		si.faults.SetEnabled(false)
	}
	settled := time.Now()
	quiesce(t, cfg, server, informers)
	settleTime := time.Since(settled)
	endRV, endObjs := soakServerState(t, server)
	stop()

	divergences := checkSoakEnd(t, endObjs, informers)
	reportSoak(t, cfg, work, endRV, endObjs, informers, figures, divergences, settleTime, time.Since(began))
	if divergences != 0 {
		t.Errorf("%d divergences, want 0", divergences)
	}

	goleak.VerifyNone(t, leaks)
	if cfg.heapSlack == 0 {
		return
	}
	// Drop what the run built, so that only leaks stay on the heap.
	informers, streaming, paged, work = nil, nil, nil, nil
	if after := liveHeap(); after > heapBefore+cfg.heapSlack {
		t.Errorf("live heap after the run is %d MiB, more than %d MiB above the %d MiB before", after>>20, cfg.heapSlack>>20, heapBefore>>20)
	} else {
		t.Logf("live heap: %d MiB before, %d MiB after, peak %d MiB", heapBefore>>20, after>>20, figures.peakHeap>>20)
	}
}

// runSoakWorkload applies the workload, keeping the watch consumers within
// half the watch cache except during a storm at each quarter of the run
// (more changes at once than the watch cache keeps, so that resuming from
// before it fails with 410 and the informers relist),
// registering the late handlers half-way, and sampling lags, backlogs and
// the heap.
func runSoakWorkload(t *testing.T, cfg soakConfig, work *soakWorkload, server *framework.FakeControllerSource, informers []*soakInformer) soakFigures {
	t.Helper()
	fig := soakFigures{maxLag: map[string]int64{}, maxBacklog: map[string]int{}, merged: map[string]uint64{}}
	lateAdded := false
	nextStorm := cfg.changes / 4
	for work.applied < cfg.changes {
		work.step()
		if work.applied >= nextStorm {
			nextStorm += cfg.changes / 4
			for range cfg.window * 3 / 2 {
				if id, ok := work.randomLive(); ok {
					work.update(id)
				}
			}
		}
		if !lateAdded && work.applied >= cfg.changes/2 {
			lateAdded = true
			for _, si := range informers {
				si.late = newSoakHandler(si.name+"/late", 0)
				si.add(t, si.late)
			}
		}
		if work.applied%500 < 20 {
			sampleSoak(&fig, server, informers)
		}
	}
	sampleSoak(&fig, server, informers)
	return fig
}

// sampleSoak records how far behind each handler is, the size of each
// listener's backlog, and the heap.
func sampleSoak(fig *soakFigures, server *framework.FakeControllerSource, informers []*soakInformer) {
	rv, _ := soakServerState(nil, server)
	for _, si := range informers {
		for _, h := range si.handlers {
			if seen := h.maxRV.Load(); seen > 0 {
				fig.maxLag[h.name] = max(fig.maxLag[h.name], rv-seen)
			}
			if l, ok := h.registration().(*processorListener); ok {
				l.mu.Lock()
				n, merged := l.pending.len(), l.pending.merged
				l.mu.Unlock()
				fig.maxBacklog[h.name] = max(fig.maxBacklog[h.name], n)
				fig.merged[h.name] = max(fig.merged[h.name], merged)
			}
		}
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fig.peakHeap = max(fig.peakHeap, ms.HeapAlloc)
}

// quiesce waits until every informer's store and every handler's view
// equal the server's state, and every registration has synced.
func quiesce(t *testing.T, cfg soakConfig, server *framework.FakeControllerSource, informers []*soakInformer) {
	t.Helper()
	_, objs := soakServerState(t, server)
	truth := soakTruth(objs)
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, cfg.quiesceTimeout, true, func(context.Context) (bool, error) {
		for _, si := range informers {
			if got := storeRVs(si.informer.GetStore()); !maps.Equal(truth, got) {
				last = fmt.Sprintf("%s store (-server +store):\n%s", si.name, clip(cmp.Diff(truth, got)))
				return false, nil
			}
			for _, h := range si.handlers {
				if !h.registration().HasSynced() {
					last = h.name + " has not synced"
					return false, nil
				}
				if got := h.snapshot(); !maps.Equal(truth, got) {
					last = fmt.Sprintf("%s view (-server +handler):\n%s", h.name, clip(cmp.Diff(truth, got)))
					return false, nil
				}
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("informers did not settle within %v: %s", cfg.quiesceTimeout, last)
	}
}

func clip(s string) string {
	if len(s) > 2000 {
		return s[:2000] + "\n..."
	}
	return s
}

func soakTruth(objs []*v1.Pod) map[string]string {
	out := make(map[string]string, len(objs))
	for _, p := range objs {
		out[soakKey(p)] = p.ResourceVersion
	}
	return out
}

func storeRVs(s Store) map[string]string {
	out := map[string]string{}
	for _, obj := range s.List() {
		p := obj.(*v1.Pod)
		out[soakKey(p)] = p.ResourceVersion
	}
	return out
}

// checkSoakEnd checks the final state once everything stopped: stores,
// indexes and views equal the server, and no handler call diverged. It
// returns the number of divergences.
func checkSoakEnd(t *testing.T, objs []*v1.Pod, informers []*soakInformer) int64 {
	t.Helper()
	truth := soakTruth(objs)
	byNode := map[string][]string{}
	for _, p := range objs {
		byNode[p.Spec.NodeName] = append(byNode[p.Spec.NodeName], soakKey(p))
	}
	var total int64
	for _, si := range informers {
		if diff := cmp.Diff(truth, storeRVs(si.informer.GetStore())); diff != "" {
			total++
			t.Errorf("%s: store (-server +store):\n%s", si.name, clip(diff))
		}
		for node, want := range byNode {
			got, err := si.informer.GetIndexer().IndexKeys("node", node)
			slices.Sort(got)
			slices.Sort(want)
			if err != nil || !slices.Equal(want, got) {
				total++
				t.Errorf("%s: index node=%s: got %d keys (%v), want %d", si.name, node, len(got), err, len(want))
			}
		}
		if got, want := len(si.informer.GetIndexer().ListIndexFuncValues("node")), len(byNode); got != want {
			total++
			t.Errorf("%s: %d node index values, want %d", si.name, got, want)
		}
		for _, h := range si.handlers {
			_, _, divergences, messages := h.result()
			total += divergences
			for _, m := range messages {
				t.Error(m)
			}
			if diff := cmp.Diff(truth, h.snapshot()); diff != "" {
				total++
				t.Errorf("%s: view (-server +handler):\n%s", h.name, clip(diff))
			}
		}
	}
	return total
}

func reportSoak(t *testing.T, cfg soakConfig, work *soakWorkload, rv int64, objs []*v1.Pod, informers []*soakInformer, fig soakFigures, divergences int64, settle, total time.Duration) {
	t.Helper()
	t.Logf("soak %s: %d changes applied (resource version %d), %d objects at the end, in %v (settled in %v)",
		cfg.name, work.applied, rv, len(objs), total.Round(time.Millisecond), settle.Round(time.Millisecond))
	for _, si := range informers {
		t.Logf("%s faults: %v", si.name, si.faults.Stats())
		si.errMu.Lock()
		t.Logf("%s errors reported to the watch error handler: %v", si.name, si.watchErrors)
		si.errMu.Unlock()
		for _, h := range si.handlers {
			calls, initial, _, _ := h.result()
			t.Logf("%s: %d calls (%d initial adds), max lag %d changes, max backlog %d, %d notifications merged", h.name, calls, initial, fig.maxLag[h.name], fig.maxBacklog[h.name], fig.merged[h.name])
		}
	}
	t.Logf("divergences: %d", divergences)
}

// liveHeap returns the heap in use after a collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// soakServerState returns the server's resource version and objects; a
// failure to list fails the test when t is set.
func soakServerState(t *testing.T, server *framework.FakeControllerSource) (int64, []*v1.Pod) {
	list, err := server.List(metav1.ListOptions{})
	if err != nil {
		if t != nil {
			t.Fatalf("listing the server: %v", err)
		}
		return 0, nil
	}
	pods := list.(*v1.List).Items
	out := make([]*v1.Pod, len(pods))
	for i, item := range pods {
		out[i] = item.Object.(*v1.Pod)
	}
	rv, _ := strconv.ParseInt(list.(*v1.List).ResourceVersion, 10, 64)
	return rv, out
}
