package cache

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	testingclock "k8s.io/utils/clock/testing"

	fcache "github.com/kcache/cache/testing"
)

// Most tests here run the informer inside a synctest bubble: after
// synctest.Wait every goroutine of the informer, the fake source and the
// handlers is blocked, so "everything that can happen has happened" without
// a single sleep or poll.

// infEvent is one handler call, reduced to what the tests compare.
type infEvent struct {
	Kind      string // "add", "update" or "delete"
	Key       string
	RV        string // of the new object (add, update) or the deleted one
	OldRV     string // update only
	Initial   bool   // add only: isInInitialList
	Tombstone bool   // delete only: the object was a DeletedFinalStateUnknown
}

func (e infEvent) String() string {
	switch e.Kind {
	case "add":
		return fmt.Sprintf("add %s@%s initial=%t", e.Key, e.RV, e.Initial)
	case "update":
		return fmt.Sprintf("update %s@%s->%s", e.Key, e.OldRV, e.RV)
	default:
		return fmt.Sprintf("delete %s@%s tombstone=%t", e.Key, e.RV, e.Tombstone)
	}
}

// infRV returns obj's resource version; a tombstone's is that of the object
// it carries, "" when it carries none.
func infRV(obj interface{}) string {
	if t, ok := obj.(DeletedFinalStateUnknown); ok {
		if t.Obj == nil {
			return ""
		}
		obj = t.Obj
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	return m.GetResourceVersion()
}

// infKey returns obj's store key, "" when it has none.
func infKey(obj interface{}) string {
	key, err := DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return ""
	}
	return key
}

// infRecorder is a ResourceEventHandler that records its calls. before, if
// set, runs at the start of every call: tests use it to block or panic (a
// call that panics in before is not recorded).
type infRecorder struct {
	before func(infEvent)

	// mu guards events.
	mu     sync.Mutex
	events []infEvent
}

var _ ResourceEventHandler = (*infRecorder)(nil)

func (r *infRecorder) OnAdd(obj interface{}, isInInitialList bool) {
	r.record(infEvent{Kind: "add", Key: infKey(obj), RV: infRV(obj), Initial: isInInitialList})
}

func (r *infRecorder) OnUpdate(oldObj, newObj interface{}) {
	r.record(infEvent{Kind: "update", Key: infKey(newObj), RV: infRV(newObj), OldRV: infRV(oldObj)})
}

func (r *infRecorder) OnDelete(obj interface{}) {
	_, tombstone := obj.(DeletedFinalStateUnknown)
	r.record(infEvent{Kind: "delete", Key: infKey(obj), RV: infRV(obj), Tombstone: tombstone})
}

func (r *infRecorder) record(e infEvent) {
	if r.before != nil {
		r.before(e)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

// snapshot returns a copy of the calls recorded so far.
func (r *infRecorder) snapshot() []infEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]infEvent(nil), r.events...)
}

// count returns how many calls of kind were recorded.
func (r *infRecorder) count(kind string) int {
	n := 0
	for _, e := range r.snapshot() {
		if e.Kind == kind {
			n++
		}
	}
	return n
}

// infReplay applies a handler's calls to a key -> resource version map,
// as a handler mirroring the cache would, and notes every call that does
// not fit: an add of a present key, an update or delete of an absent one,
// an update whose old object is not the one the handler holds, or a
// resource version older than one already seen for the key.
type infReplay struct {
	state    map[string]string
	newest   map[string]int
	problems []string
}

func newInfReplay() *infReplay {
	return &infReplay{state: map[string]string{}, newest: map[string]int{}}
}

// replayAll replays events into a fresh state.
func replayAll(events []infEvent) *infReplay {
	p := newInfReplay()
	for _, e := range events {
		p.apply(e)
	}
	return p
}

func (p *infReplay) apply(e infEvent) {
	cur, present := p.state[e.Key]
	switch e.Kind {
	case "add":
		if present {
			p.notef(e, "add of a key the handler holds at %s", cur)
		}
		p.state[e.Key] = e.RV
	case "update":
		if !present {
			p.notef(e, "update of a key the handler does not hold")
		} else if e.OldRV != cur {
			p.notef(e, "old object is at %s, the handler holds %s", e.OldRV, cur)
		}
		p.state[e.Key] = e.RV
	case "delete":
		if !present {
			p.notef(e, "delete of a key the handler does not hold")
		}
		delete(p.state, e.Key)
	}
	if e.RV == "" {
		return
	}
	rv, err := strconv.Atoi(e.RV)
	if err != nil {
		p.notef(e, "resource version is not a number")
		return
	}
	if rv < p.newest[e.Key] {
		p.notef(e, "resource version goes back from %d", p.newest[e.Key])
	}
	p.newest[e.Key] = rv
}

func (p *infReplay) notef(e infEvent, format string, args ...interface{}) {
	p.problems = append(p.problems, e.String()+": "+fmt.Sprintf(format, args...))
}

// infStoreState returns the store's content as key -> resource version.
func infStoreState(s Store) map[string]string {
	out := map[string]string{}
	for _, obj := range s.List() {
		out[infKey(obj)] = infRV(obj)
	}
	return out
}

// infTruth returns the fake source's content as key -> resource version.
func infTruth(t *testing.T, src *fcache.FakeControllerSource) map[string]string {
	t.Helper()
	list, err := src.List(metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing the fake source: %v", err)
	}
	objs, err := meta.ExtractList(list)
	if err != nil {
		t.Fatalf("reading the fake source's list: %v", err)
	}
	out := map[string]string{}
	for _, obj := range objs {
		out[infKey(obj)] = infRV(obj)
	}
	return out
}

// infSource returns a fake source holding pods named p0, p1, ... in
// namespace ns; it is shut down when the test ends.
func infSource(t *testing.T, pods int) *fcache.FakeControllerSource {
	src := fcache.NewFakeControllerSource()
	t.Cleanup(src.Shutdown)
	for i := range pods {
		src.Add(testPod("ns", fmt.Sprint("p", i), ""))
	}
	return src
}

// infRunner is an informer or a controller.
type infRunner interface{ RunWithContext(ctx context.Context) }

// infRun runs inf until the returned stop is called or the test ends; stop
// waits for Run to return.
func infRun(t testing.TB, inf infRunner) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		inf.RunWithContext(ctx)
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			<-done
		})
	}
	t.Cleanup(stop)
	return stop
}

// infLatch holds handlers back until it is opened; opening it again does
// nothing. Tests open it in a cleanup registered after infRun's, so that a
// failing test does not leave Run waiting for a blocked handler.
type infLatch struct {
	ch   chan struct{}
	once sync.Once
}

func newInfLatch() *infLatch { return &infLatch{ch: make(chan struct{})} }

func (l *infLatch) wait() { <-l.ch }

func (l *infLatch) open() { l.once.Do(func() { close(l.ch) }) }

// infAdd registers h and fails the test on error.
func infAdd(t *testing.T, inf SharedInformer, h ResourceEventHandler) ResourceEventHandlerRegistration {
	t.Helper()
	reg, err := inf.AddEventHandler(h)
	if err != nil {
		t.Fatalf("AddEventHandler: %v", err)
	}
	return reg
}

// infNewPodInformer returns a pod informer over src, without resync.
func infNewPodInformer(src *fcache.FakeControllerSource) SharedIndexInformer {
	return NewSharedIndexInformer(src, &v1.Pod{}, 0, Indexers{})
}

// infChurn makes n random changes through src to pods named q0..q(names-1)
// in namespace ns: changes to present pods (most often), deletions, and
// (re)creations. present tracks which pods exist; after is called after
// every change with its index.
func infChurn(r *rand.Rand, src *fcache.FakeControllerSource, present map[string]bool, names, n int, after func(i int)) {
	for i := range n {
		name := fmt.Sprint("q", r.Intn(names))
		pod := testPod("ns", name, "", "gen", strconv.Itoa(i))
		switch {
		case !present[name]:
			src.Add(pod)
			present[name] = true
		case r.Intn(4) == 0:
			src.Delete(pod)
			present[name] = false
		default:
			src.Modify(pod)
		}
		if after != nil {
			after(i)
		}
	}
}

func TestSharedInformer_LateHandlerSeesTheCacheThenEveryLaterChangeExactlyOnce(t *testing.T) {
	const (
		names  = 300
		writes = 4000
		joins  = 8
	)
	seed := testSeed(t)
	synctest.Test(t, func(t *testing.T) {
		src := infSource(t, 0)
		present := map[string]bool{}
		r := rand.New(rand.NewSource(seed))
		infChurn(r, src, present, names, names, nil)

		inf := infNewPodInformer(src)
		early := &infRecorder{}
		infAdd(t, inf, early)
		infRun(t, inf)
		<-inf.HasSyncedChecker().Done()

		// Late handlers join, one after another, while a writer keeps
		// changing pods.
		joinNow := make(chan struct{})
		written := make(chan struct{})
		go func() {
			defer close(written)
			infChurn(r, src, present, names, writes, func(i int) {
				if i%(writes/joins) == 0 {
					joinNow <- struct{}{}
				}
			})
		}()
		var late []*infRecorder
		for range joins {
			<-joinNow
			rec := &infRecorder{}
			infAdd(t, inf, rec)
			late = append(late, rec)
		}
		<-written
		synctest.Wait()

		truth := infTruth(t, src)
		earlyEvents := early.snapshot()
		checkInfReplay(t, "early handler", truth, earlyEvents)
		for i, rec := range late {
			checkLateHandler(t, fmt.Sprint("late handler ", i), truth, earlyEvents, rec.snapshot())
		}
		if diff := cmp.Diff(truth, infStoreState(inf.GetStore())); diff != "" {
			t.Errorf("store differs from the source (-source +store):\n%s", diff)
		}
	})
}

// checkInfReplay checks that events fit a handler's state throughout and
// leave it equal to truth.
func checkInfReplay(t *testing.T, who string, truth map[string]string, events []infEvent) {
	t.Helper()
	got := replayAll(events)
	if len(got.problems) > 0 {
		t.Errorf("%s: calls do not fit its state:\n%s", who, strings.Join(got.problems, "\n"))
	}
	if diff := cmp.Diff(truth, got.state); diff != "" {
		t.Errorf("%s ends out of step with the source (-source +handler):\n%s", who, diff)
	}
}

// checkLateHandler checks that a handler that joined a running informer
// got the cache of the moment it joined as initial adds, then exactly the
// calls the early handler got from that moment on.
func checkLateHandler(t *testing.T, who string, truth map[string]string, early, late []infEvent) {
	t.Helper()
	split := 0
	for split < len(late) && late[split].Kind == "add" && late[split].Initial {
		split++
	}
	initial, live := late[:split], late[split:]
	for _, e := range live {
		if e.Initial {
			t.Errorf("%s: initial-list add %v after its live calls began", who, e)
			return
		}
	}
	cut := len(early) - len(live)
	if cut < 0 {
		t.Errorf("%s: got %d live calls, the early handler %d calls in all", who, len(live), len(early))
		return
	}
	if diff := cmp.Diff(early[cut:], live); diff != "" {
		t.Errorf("%s: live calls differ from the early handler's last calls (-early +late):\n%s", who, diff)
		return
	}
	if diff := cmp.Diff(replayAll(early[:cut]).state, replayAll(initial).state); diff != "" {
		t.Errorf("%s: initial adds are not the cache at the time it joined (-cache +initial):\n%s", who, diff)
	}
	checkInfReplay(t, who, truth, late)
}

func TestSharedInformer_ShutDownEventHandlerWaitsForTheCallInProgress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := infSource(t, 3)
		inf := infNewPodInformer(src)
		entered := make(chan struct{}, 1)
		release := newInfLatch()
		var shutDown atomic.Bool
		var callsAfterShutdown atomic.Int32
		victim := &infRecorder{before: func(e infEvent) {
			if shutDown.Load() {
				callsAfterShutdown.Add(1)
			}
			if e.Kind == "update" {
				select {
				case entered <- struct{}{}:
				default:
				}
				release.wait()
			}
		}}
		witness := &infRecorder{}
		reg := infAdd(t, inf, victim)
		infAdd(t, inf, witness)
		infRun(t, inf)
		t.Cleanup(release.open)
		<-inf.HasSyncedChecker().Done()

		src.Modify(testPod("ns", "p0", ""))
		<-entered
		returned := make(chan error)
		go func() { returned <- ShutDownEventHandler(inf, reg) }()
		synctest.Wait()
		select {
		case err := <-returned:
			t.Fatalf("ShutDownEventHandler returned (%v) while the handler was still in OnUpdate", err)
		default:
		}
		release.open()
		if err := <-returned; err != nil {
			t.Fatalf("ShutDownEventHandler: %v", err)
		}
		shutDown.Store(true)
		for i := range 3 {
			src.Modify(testPod("ns", fmt.Sprint("p", i), ""))
		}
		src.Delete(testPod("ns", "p1", ""))
		synctest.Wait()
		if n := callsAfterShutdown.Load(); n != 0 {
			t.Errorf("handler called %d times after ShutDownEventHandler returned", n)
		}
		if got := witness.count("update"); got != 4 {
			t.Errorf("other handler got %d updates, want 4", got)
		}
		if got := witness.count("delete"); got != 1 {
			t.Errorf("other handler got %d deletes, want 1", got)
		}
	})
}

func TestSharedInformer_RemovalWhileEventsFlow(t *testing.T) {
	cases := map[string]struct {
		remove func(SharedInformer, ResourceEventHandlerRegistration) error
		// maxLate is how many calls may start after remove returned: the
		// listener checks for removal before each call, so after
		// RemoveEventHandler the call it had already begun may still
		// start; ShutDownEventHandler waits for that one.
		maxLate int32
	}{
		"RemoveEventHandler": {
			remove: func(inf SharedInformer, reg ResourceEventHandlerRegistration) error {
				return inf.RemoveEventHandler(reg)
			},
			maxLate: 1,
		},
		"ShutDownEventHandler": {remove: ShutDownEventHandler, maxLate: 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				src := infSource(t, 20)
				inf := infNewPodInformer(src)
				var removed atomic.Bool
				var late atomic.Int32
				victim := &infRecorder{before: func(infEvent) {
					if removed.Load() {
						late.Add(1)
					}
				}}
				witness := &infRecorder{}
				reg := infAdd(t, inf, victim)
				infAdd(t, inf, witness)
				infRun(t, inf)
				<-inf.HasSyncedChecker().Done()

				halfway := make(chan struct{})
				written := make(chan struct{})
				go func() {
					defer close(written)
					for i := range 2000 {
						src.Modify(testPod("ns", fmt.Sprint("p", i%20), ""))
						if i == 500 {
							close(halfway)
						}
					}
				}()
				<-halfway
				if err := tc.remove(inf, reg); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				removed.Store(true)
				<-written
				synctest.Wait()
				if n := late.Load(); n > tc.maxLate {
					t.Errorf("handler called %d times after %s returned, want at most %d", n, name, tc.maxLate)
				}
				if got := victim.count("update"); got == 2000 {
					t.Errorf("removed handler got every update")
				}
				if got := witness.count("update"); got != 2000 {
					t.Errorf("other handler got %d updates, want 2000", got)
				}
				select {
				case <-reg.(interface{ ShutdownChan() <-chan struct{} }).ShutdownChan():
				default:
					t.Errorf("removed registration's shutdown channel still open once its listener went quiet")
				}
			})
		})
	}
}

// infForeignRegistration is a registration no informer made.
type infForeignRegistration struct{}

func (infForeignRegistration) HasSynced() bool               { return true }
func (infForeignRegistration) HasSyncedChecker() DoneChecker { return nil }

func TestSharedInformer_RemoveEventHandler(t *testing.T) {
	cases := map[string]struct {
		// when is "before Run", "running" or "after stop".
		when string
		// handle picks the handle to remove, given the handler's own.
		handle  func(own ResourceEventHandlerRegistration, other SharedInformer) ResourceEventHandlerRegistration
		twice   bool
		wantErr bool
	}{
		"own handle before Run":    {when: "before Run"},
		"own handle while running": {when: "running"},
		"own handle after stop":    {when: "after stop"},
		"own handle twice":         {when: "running", twice: true},
		"handle of another informer is ignored": {when: "running", handle: func(_ ResourceEventHandlerRegistration, other SharedInformer) ResourceEventHandlerRegistration {
			reg, _ := other.AddEventHandler(&infRecorder{})
			return reg
		}},
		"registration of a foreign type fails": {when: "running", wantErr: true, handle: func(ResourceEventHandlerRegistration, SharedInformer) ResourceEventHandlerRegistration {
			return infForeignRegistration{}
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				src := infSource(t, 2)
				inf := infNewPodInformer(src)
				rec := &infRecorder{}
				own := infAdd(t, inf, rec)
				handle := own
				if tc.handle != nil {
					handle = tc.handle(own, infNewPodInformer(src))
				}
				stop := func() {}
				if tc.when != "before Run" {
					stop = infRun(t, inf)
					<-inf.HasSyncedChecker().Done()
					synctest.Wait()
				}
				if tc.when == "after stop" {
					stop()
				}
				callsBefore := len(rec.snapshot())
				err := inf.RemoveEventHandler(handle)
				if tc.twice && err == nil {
					err = inf.RemoveEventHandler(handle)
				}
				if (err != nil) != tc.wantErr {
					t.Fatalf("RemoveEventHandler error = %v, want error %t", err, tc.wantErr)
				}
				if tc.when == "before Run" {
					infRun(t, inf)
					<-inf.HasSyncedChecker().Done()
				}
				if tc.when != "after stop" {
					src.Modify(testPod("ns", "p0", ""))
				}
				synctest.Wait()
				got := len(rec.snapshot()) - callsBefore
				wantCalls := 0
				if tc.handle != nil && tc.when == "running" {
					wantCalls = 1 // the handler was not removed
				}
				if got != wantCalls {
					t.Errorf("handler got %d calls after the removal, want %d", got, wantCalls)
				}
				if tc.handle == nil {
					// ShutDownEventHandler must not block on a removed
					// handler, whatever state the informer is in.
					if err := ShutDownEventHandler(inf, own); err != nil {
						t.Errorf("ShutDownEventHandler of a removed handler: %v", err)
					}
				}
			})
		})
	}
}

func TestSharedInformer_ResyncPeriodRules(t *testing.T) {
	dur := func(d time.Duration) *time.Duration { return &d }
	cases := map[string]struct {
		defaultResync time.Duration
		// requests are the handlers' periods, in registration order; nil
		// means the informer's default.
		requests []*time.Duration
		// startAfter registers the handlers from this index on after Run.
		startAfter  int
		wantPeriods []time.Duration
		wantCheck   time.Duration
	}{
		"informer without resync ignores handler periods": {
			requests: []*time.Duration{nil, dur(5 * time.Second)}, startAfter: 2,
			wantPeriods: []time.Duration{0, 0}, wantCheck: 0,
		},
		"default period": {
			defaultResync: 10 * time.Second, requests: []*time.Duration{nil}, startAfter: 1,
			wantPeriods: []time.Duration{10 * time.Second}, wantCheck: 10 * time.Second,
		},
		"zero opts out": {
			defaultResync: 10 * time.Second, requests: []*time.Duration{dur(0), dur(-time.Second)}, startAfter: 2,
			wantPeriods: []time.Duration{0, 0}, wantCheck: 10 * time.Second,
		},
		"below the minimum is raised to one second": {
			defaultResync: 10 * time.Second, requests: []*time.Duration{dur(10 * time.Millisecond)}, startAfter: 1,
			wantPeriods: []time.Duration{time.Second}, wantCheck: time.Second,
		},
		"a shorter period before Run lowers the check period": {
			defaultResync: 10 * time.Second,
			requests:      []*time.Duration{nil, dur(4 * time.Second), dur(0), dur(30 * time.Second)}, startAfter: 4,
			wantPeriods: []time.Duration{10 * time.Second, 4 * time.Second, 0, 30 * time.Second}, wantCheck: 4 * time.Second,
		},
		"a shorter period after Run is raised to the check period": {
			defaultResync: 10 * time.Second,
			requests:      []*time.Duration{dur(4 * time.Second), dur(500 * time.Millisecond)}, startAfter: 0,
			wantPeriods: []time.Duration{10 * time.Second, 10 * time.Second}, wantCheck: 10 * time.Second,
		},
		"a longer period after Run is kept": {
			defaultResync: 10 * time.Second,
			requests:      []*time.Duration{nil, dur(time.Minute)}, startAfter: 0,
			wantPeriods: []time.Duration{10 * time.Second, time.Minute}, wantCheck: 10 * time.Second,
		},
		"after Run, a check period lowered before Run applies": {
			defaultResync: 10 * time.Second,
			requests:      []*time.Duration{dur(2 * time.Second), dur(time.Second), dur(3 * time.Second)}, startAfter: 1,
			wantPeriods: []time.Duration{2 * time.Second, 2 * time.Second, 3 * time.Second}, wantCheck: 2 * time.Second,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				src := infSource(t, 1)
				clk := testingclock.NewFakeClock(time.Unix(1000, 0))
				inf := newSharedIndexInformer(src, &v1.Pod{}, SharedIndexInformerOptions{ResyncPeriod: tc.defaultResync}, clk)
				regs := make([]ResourceEventHandlerRegistration, len(tc.requests))
				for i, req := range tc.requests {
					if i == tc.startAfter {
						infRun(t, inf)
						<-inf.HasSyncedChecker().Done()
					}
					var err error
					regs[i], err = inf.AddEventHandlerWithOptions(&infRecorder{}, HandlerOptions{ResyncPeriod: req})
					if err != nil {
						t.Fatalf("adding handler %d: %v", i, err)
					}
				}
				got := make([]time.Duration, len(regs))
				for i, reg := range regs {
					l := reg.(*processorListener)
					l.resyncMu.Lock()
					got[i] = l.resyncPeriod
					l.resyncMu.Unlock()
				}
				if diff := cmp.Diff(tc.wantPeriods, got); diff != "" {
					t.Errorf("handler resync periods (-want +got):\n%s", diff)
				}
				inf.mu.Lock()
				check := inf.resyncCheckPeriod
				inf.mu.Unlock()
				if check != tc.wantCheck {
					t.Errorf("resync check period = %v, want %v", check, tc.wantCheck)
				}
			})
		})
	}
}

func TestSharedInformer_ResyncReachesOnlyTheHandlersWhosePeriodElapsed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := infSource(t, 3)
		clk := testingclock.NewFakeClock(time.Unix(1000, 0))
		inf := newSharedIndexInformer(src, &v1.Pod{}, SharedIndexInformerOptions{ResyncPeriod: 3 * time.Second}, clk)
		everySecond, everyThree, never := &infRecorder{}, &infRecorder{}, &infRecorder{}
		// One second lowers the informer's check period from three.
		if _, err := inf.AddEventHandlerWithResyncPeriod(everySecond, time.Second); err != nil {
			t.Fatal(err)
		}
		infAdd(t, inf, everyThree)
		if _, err := inf.AddEventHandlerWithResyncPeriod(never, 0); err != nil {
			t.Fatal(err)
		}
		infRun(t, inf)
		<-inf.HasSyncedChecker().Done()
		synctest.Wait()

		resyncs := func(r *infRecorder) int {
			n := 0
			for _, e := range r.snapshot() {
				if e.Kind == "update" && e.OldRV == e.RV {
					n++
				}
			}
			return n
		}
		want := [][3]int{{3, 0, 0}, {6, 0, 0}, {9, 3, 0}, {12, 3, 0}, {15, 3, 0}, {18, 6, 0}}
		for step, w := range want {
			if !clk.HasWaiters() {
				t.Fatalf("step %d: nothing waits on the clock; the resync loop is not running", step)
			}
			clk.Step(time.Second)
			synctest.Wait()
			got := [3]int{resyncs(everySecond), resyncs(everyThree), resyncs(never)}
			if got != w {
				t.Errorf("after %ds: resync updates (1s, 3s, none) = %v, want %v", step+1, got, w)
			}
		}
		// A real change still reaches everybody, as an update with a new
		// resource version.
		src.Modify(testPod("ns", "p0", ""))
		synctest.Wait()
		for name, r := range map[string]*infRecorder{"1s": everySecond, "3s": everyThree, "none": never} {
			if got := r.count("update") - resyncs(r); got != 1 {
				t.Errorf("%s handler got %d real updates, want 1", name, got)
			}
		}
	})
}

func TestSharedInformer_RegistrationSyncsOnlyAfterItsHandlerProcessedItsInitialList(t *testing.T) {
	for _, late := range []bool{false, true} {
		name := "registered before Run"
		if late {
			name = "registered after the informer synced"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				src := infSource(t, 5)
				inf := infNewPodInformer(src)
				// The handler is held in its first call, then in its last
				// initial one.
				first, last := newInfLatch(), newInfLatch()
				var calls atomic.Int32
				stuck := &infRecorder{before: func(infEvent) {
					switch calls.Add(1) {
					case 1:
						first.wait()
					case 5:
						last.wait()
					}
				}}
				quick := &infRecorder{}
				var stuckReg, quickReg ResourceEventHandlerRegistration
				register := func() {
					stuckReg = infAdd(t, inf, stuck)
					quickReg = infAdd(t, inf, quick)
				}
				if !late {
					register()
				}
				infRun(t, inf)
				t.Cleanup(first.open)
				t.Cleanup(last.open)
				<-inf.HasSyncedChecker().Done()
				if late {
					register()
				}
				synctest.Wait()
				if !inf.HasSynced() {
					t.Errorf("informer not synced")
				}
				if !quickReg.HasSynced() {
					t.Errorf("registration of the handler that processed everything is not synced")
				}
				if stuckReg.HasSynced() {
					t.Errorf("registration synced while its handler is stuck in its first OnAdd")
				}
				first.open()
				synctest.Wait()
				if stuckReg.HasSynced() {
					t.Errorf("registration synced while its handler is still in its last initial OnAdd")
				}
				last.open()
				<-stuckReg.HasSyncedChecker().Done()
				if got := stuck.count("add"); got != 5 {
					t.Errorf("registration synced after %d of 5 initial adds", got)
				}
				if !strings.Contains(stuckReg.HasSyncedChecker().Name(), "infRecorder") {
					t.Errorf("checker name %q does not name the handler", stuckReg.HasSyncedChecker().Name())
				}
			})
		})
	}
}

func TestSharedInformer_TransformRunsOnceBeforeTheStoreAndTheHandlers(t *testing.T) {
	for _, streaming := range []bool{false, true} {
		name := "paginated list"
		if streaming {
			name = "streaming list"
		}
		t.Run(name, func(t *testing.T) {
			defer setFeatureForTesting(featureWatchListClient, streaming)()
			testTransformRunsOnce(t)
		})
	}
}

func testTransformRunsOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := infSource(t, 3)
		inf := infNewPodInformer(src)
		var calls atomic.Int32
		// The transform counts, in an annotation, how often it ran on the
		// object, and drops the labels.
		transform := func(obj interface{}) (interface{}, error) {
			pod, ok := obj.(*v1.Pod)
			if !ok {
				return obj, nil
			}
			calls.Add(1)
			out := pod.DeepCopy()
			n, _ := strconv.Atoi(out.Annotations["transforms"])
			out.Annotations = map[string]string{"transforms": strconv.Itoa(n + 1)}
			out.Labels = nil
			return out, nil
		}
		if err := inf.SetTransform(transform); err != nil {
			t.Fatalf("SetTransform before Run: %v", err)
		}
		var seenMu sync.Mutex
		var seen []string
		note := func(obj interface{}) {
			pod := obj.(*v1.Pod)
			seenMu.Lock()
			defer seenMu.Unlock()
			seen = append(seen, fmt.Sprintf("%s transforms=%s labels=%d", pod.Name, pod.Annotations["transforms"], len(pod.Labels)))
		}
		infAdd(t, inf, ResourceEventHandlerFuncs{
			AddFunc:    note,
			UpdateFunc: func(_, obj interface{}) { note(obj) },
			DeleteFunc: note,
		})
		infRun(t, inf)
		<-inf.HasSyncedChecker().Done()
		src.Modify(testPod("ns", "p1", "", "app", "web"))
		src.Add(testPod("ns", "p3", "", "app", "web"))
		src.Delete(testPod("ns", "p2", "", "app", "web"))
		synctest.Wait()

		if err := inf.SetTransform(func(obj interface{}) (interface{}, error) { return nil, errors.New("not this one") }); err == nil {
			t.Errorf("SetTransform on a running informer succeeded")
		}
		src.Modify(testPod("ns", "p0", "", "app", "web"))
		synctest.Wait()

		want := []string{
			"p0 transforms=1 labels=0", "p1 transforms=1 labels=0", "p2 transforms=1 labels=0",
			"p1 transforms=1 labels=0", "p3 transforms=1 labels=0", "p2 transforms=1 labels=0",
			"p0 transforms=1 labels=0",
		}
		seenMu.Lock()
		got := append([]string(nil), seen...)
		seenMu.Unlock()
		sort.Strings(got[:3]) // the initial list's order is the store's business
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("objects handed to the handler (-want +got):\n%s", diff)
		}
		if n := calls.Load(); n != 7 {
			t.Errorf("transform ran %d times for 7 object states, want once each", n)
		}
		for _, obj := range inf.GetStore().List() {
			if pod := obj.(*v1.Pod); pod.Annotations["transforms"] != "1" || pod.Labels != nil {
				t.Errorf("stored %s was not transformed exactly once: %v %v", pod.Name, pod.Annotations, pod.Labels)
			}
		}
	})
}

// With the keep-serving opt-in (utilruntime.ReallyCrash false), a
// panicking handler misses only the calls that panicked, and the other
// handlers miss nothing.
func TestSharedInformer_WithoutReallyCrashAPanickingHandlerKeepsReceiving(t *testing.T) {
	keepServing(t)
	synctest.Test(t, func(t *testing.T) {
		src := infSource(t, 3)
		inf := infNewPodInformer(src)
		panicky := &infRecorder{before: func(e infEvent) {
			if e.Key == "ns/p1" {
				panic("handler bug on " + e.Key)
			}
		}}
		calm := &infRecorder{}
		panickyReg := infAdd(t, inf, panicky)
		infAdd(t, inf, calm)
		infRun(t, inf)
		// The initial add of p1 panicked; it still counts as processed
		// (client-go's registration would never sync:
		// kubernetes/kubernetes#129024).
		<-panickyReg.HasSyncedChecker().Done()
		for i := range 3 {
			src.Modify(testPod("ns", fmt.Sprint("p", i), ""))
		}
		src.Delete(testPod("ns", "p1", ""))
		src.Modify(testPod("ns", "p2", ""))
		synctest.Wait()

		all := calm.snapshot()
		if len(all) != 3+3+1+1 {
			t.Fatalf("calm handler got %d calls, want 8: %v", len(all), all)
		}
		var wantPanicky []infEvent
		for _, e := range all {
			if e.Key != "ns/p1" {
				wantPanicky = append(wantPanicky, e)
			}
		}
		if diff := cmp.Diff(wantPanicky, panicky.snapshot()); diff != "" {
			t.Errorf("panicking handler's completed calls (-want +got):\n%s", diff)
		}
	})
}

// infGauge is a GaugeMetric that keeps its last value.
type infGauge struct{ bits atomic.Uint64 }

func (g *infGauge) Set(v float64) { g.bits.Store(uint64(v)) }
func (g *infGauge) value() int    { return int(g.bits.Load()) }

// infCounter is a CounterMetric.
type infCounter struct{ n atomic.Int64 }

func (c *infCounter) Inc() { c.n.Add(1) }

// infListenerMetrics provides listener metrics (and no-op informer ones).
type infListenerMetrics struct {
	noopInformerMetricsProvider
	// mu guards backlog and merged, keyed by handler name.
	mu      sync.Mutex
	backlog map[string]*infGauge
	merged  map[string]*infCounter
}

var _ ListenerMetricsProvider = (*infListenerMetrics)(nil)

func (m *infListenerMetrics) NewListenerBacklogMetric(_ InformerNameAndResource, handler string) GaugeMetric {
	m.mu.Lock()
	defer m.mu.Unlock()
	g := &infGauge{}
	m.backlog[handler] = g
	return g
}

func (m *infListenerMetrics) NewListenerMergedMetric(_ InformerNameAndResource, handler string) CounterMetric {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := &infCounter{}
	m.merged[handler] = c
	return c
}

// infStuckHandler is a distinctly named handler for the metrics test.
type infStuckHandler struct{ *infRecorder }

func TestSharedInformer_StuckHandlerBacklogIsBoundedByTheNumberOfObjects(t *testing.T) {
	const (
		limit   = 10
		objects = 50
		updates = 10000
	)
	defer SetListenerBacklogLimit(SetListenerBacklogLimit(-1)) // the default for the quick handler
	synctest.Test(t, func(t *testing.T) {
		name, err := NewInformerName("stuck-handler-test")
		if err != nil {
			t.Fatal(err)
		}
		defer name.Release()
		metrics := &infListenerMetrics{backlog: map[string]*infGauge{}, merged: map[string]*infCounter{}}
		src := infSource(t, objects)
		inf := NewSharedIndexInformerWithOptions(src, &v1.Pod{}, SharedIndexInformerOptions{
			Identifier:              name.WithResource(schema.GroupVersionResource{Version: "v1", Resource: "pods"}),
			InformerMetricsProvider: metrics,
		})
		release := newInfLatch()
		stuck := infStuckHandler{&infRecorder{before: func(infEvent) { release.wait() }}}
		quick := &infRecorder{}
		// Only the stuck handler's listener gets the small limit.
		prev := SetListenerBacklogLimit(limit)
		stuckReg := infAdd(t, inf, stuck)
		SetListenerBacklogLimit(prev)
		infAdd(t, inf, quick)
		infRun(t, inf)
		t.Cleanup(release.open)
		<-inf.HasSyncedChecker().Done()
		for i := range updates {
			src.Modify(testPod("ns", fmt.Sprint("p", i%objects), ""))
		}
		synctest.Wait()

		if got := quick.count("update"); got != updates {
			t.Fatalf("the other handler got %d updates, want %d: the stuck one held it back", got, updates)
		}
		l := stuckReg.(*processorListener)
		l.mu.Lock()
		pending, merged := l.pending.len(), l.pending.merged
		l.mu.Unlock()
		if pending > objects {
			t.Errorf("stuck handler has %d notifications pending for %d objects", pending, objects)
		}
		// All but the ones the listener took before blocking, and at most
		// one pending per object, were merged.
		if minMerged := uint64(objects + updates - objects - listenerBatchSize); merged < minMerged {
			t.Errorf("%d notifications merged, want at least %d", merged, minMerged)
		}
		handlerName := nameForHandler(stuck)
		metrics.mu.Lock()
		gauge, counter := metrics.backlog[handlerName], metrics.merged[handlerName]
		metrics.mu.Unlock()
		if gauge == nil || counter == nil {
			t.Fatalf("no listener metrics for %q; have %v", handlerName, metrics.backlog)
		}
		if got := gauge.value(); got != pending {
			t.Errorf("backlog gauge = %d, pending = %d", got, pending)
		}
		if counter.n.Load() == 0 {
			t.Errorf("merged counter never incremented")
		}

		release.open()
		synctest.Wait()
		if got := gauge.value(); got != 0 {
			t.Errorf("backlog gauge = %d once the handler caught up, want 0", got)
		}
		replay := replayAll(stuck.snapshot())
		if len(replay.problems) > 0 {
			t.Errorf("merged calls do not fit the handler's state:\n%s", strings.Join(replay.problems, "\n"))
		}
		if diff := cmp.Diff(infStoreState(inf.GetStore()), replay.state); diff != "" {
			t.Errorf("stuck handler ends out of step with the store (-store +handler):\n%s", diff)
		}
	})
}

func TestSharedInformer_RunReturnsOnlyOnceABlockedHandlerReturns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := infSource(t, 1)
		inf := infNewPodInformer(src)
		entered := make(chan struct{})
		release := make(chan struct{})
		infAdd(t, inf, &infRecorder{before: func(infEvent) {
			close(entered)
			<-release
		}})
		ctx, cancel := context.WithCancel(context.Background())
		returned := make(chan struct{})
		go func() {
			defer close(returned)
			inf.RunWithContext(ctx)
		}()
		<-entered
		cancel()
		synctest.Wait()
		select {
		case <-returned:
			t.Fatalf("Run returned while a handler was still running")
		default:
		}
		if !inf.IsStopped() {
			t.Errorf("IsStopped false once the informer's context ended")
		}
		close(release)
		<-returned
	})
}

// infFailingListWatch fails its first list and serves an empty pod list
// after; its watches never deliver anything.
type infFailingListWatch struct{ lists atomic.Int32 }

func (lw *infFailingListWatch) List(metav1.ListOptions) (runtime.Object, error) {
	if lw.lists.Add(1) == 1 {
		return nil, errors.New("list refused")
	}
	return &v1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "7"}}, nil
}

func (lw *infFailingListWatch) Watch(metav1.ListOptions) (watch.Interface, error) {
	return watch.NewFake(), nil
}

// IsWatchListSemanticsUnSupported keeps the reflector on plain lists.
func (lw *infFailingListWatch) IsWatchListSemanticsUnSupported() bool { return true }

func TestSharedInformer_Lifecycle(t *testing.T) {
	t.Run("setters fail once started and keep the old values", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			inf := infNewPodInformer(infSource(t, 1))
			if err := inf.SetWatchErrorHandler(func(*Reflector, error) {}); err != nil {
				t.Errorf("SetWatchErrorHandler before Run: %v", err)
			}
			infRun(t, inf)
			<-inf.HasSyncedChecker().Done()
			if err := inf.SetTransform(nil); err == nil {
				t.Errorf("SetTransform after Run succeeded")
			}
			if err := inf.SetWatchErrorHandler(func(*Reflector, error) {}); err == nil {
				t.Errorf("SetWatchErrorHandler after Run succeeded")
			}
			if err := inf.SetWatchErrorHandlerWithContext(func(context.Context, *Reflector, error) {}); err == nil {
				t.Errorf("SetWatchErrorHandlerWithContext after Run succeeded")
			}
		})
	})

	t.Run("watch error handler set before Run is told about list errors", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			lw := &infFailingListWatch{}
			inf := NewSharedIndexInformer(lw, &v1.Pod{}, 0, Indexers{})
			var told []string
			if err := inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *Reflector, err error) {
				told = append(told, err.Error())
			}); err != nil {
				t.Fatal(err)
			}
			infRun(t, inf)
			<-inf.HasSyncedChecker().Done()
			if len(told) != 1 || !strings.Contains(told[0], "list refused") {
				t.Errorf("watch error handler told %q, want the one list error", told)
			}
			if got := inf.LastSyncResourceVersion(); got != "7" {
				t.Errorf("LastSyncResourceVersion = %q after the second list, want 7", got)
			}
		})
	})

	t.Run("second Run returns at once and the first keeps serving", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			src := infSource(t, 1)
			inf := infNewPodInformer(src)
			rec := &infRecorder{}
			infAdd(t, inf, rec)
			infRun(t, inf)
			<-inf.HasSyncedChecker().Done()
			inf.Run(make(chan struct{})) // must return although its channel never closes
			src.Modify(testPod("ns", "p0", ""))
			synctest.Wait()
			if got := rec.count("update"); got != 1 {
				t.Errorf("after a second Run the handler got %d updates, want 1", got)
			}
		})
	})

	t.Run("stopped informer refuses handlers and indexers and does not run again", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			src := infSource(t, 1)
			inf := infNewPodInformer(src)
			if inf.IsStopped() {
				t.Errorf("IsStopped before Run")
			}
			stop := infRun(t, inf)
			<-inf.HasSyncedChecker().Done()
			if inf.IsStopped() {
				t.Errorf("IsStopped while running")
			}
			stop()
			if !inf.IsStopped() {
				t.Errorf("not IsStopped after Run returned")
			}
			if _, err := inf.AddEventHandler(&infRecorder{}); err == nil {
				t.Errorf("AddEventHandler after stop succeeded")
			}
			if _, err := inf.AddEventHandlerWithResyncPeriod(&infRecorder{}, time.Minute); err == nil {
				t.Errorf("AddEventHandlerWithResyncPeriod after stop succeeded")
			}
			if err := inf.AddIndexers(Indexers{"by-node": byNodeIndex}); err == nil {
				t.Errorf("AddIndexers after stop succeeded")
			}
			inf.Run(make(chan struct{})) // must return at once
			if !inf.IsStopped() {
				t.Errorf("not IsStopped after a Run following the stop")
			}
		})
	})

	t.Run("indexers added while running index the cached objects", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			src := fcache.NewFakeControllerSource()
			t.Cleanup(src.Shutdown)
			src.Add(podOnNode("ns", "a", "n1", 0))
			src.Add(podOnNode("ns", "b", "n2", 0))
			inf := infNewPodInformer(src)
			infRun(t, inf)
			<-inf.HasSyncedChecker().Done()
			if err := inf.AddIndexers(Indexers{"by-node": byNodeIndex}); err != nil {
				t.Fatalf("AddIndexers while running: %v", err)
			}
			if err := inf.AddIndexers(Indexers{"by-node": byNodeIndex}); err == nil {
				t.Errorf("adding an index name twice succeeded")
			}
			src.Add(podOnNode("ns", "c", "n1", 0))
			synctest.Wait()
			got, err := inf.GetIndexer().ByIndex("by-node", "n1")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{"ns/a", "ns/c"}, keysOf(got)); diff != "" {
				t.Errorf("ByIndex(by-node, n1) (-want +got):\n%s", diff)
			}
		})
	})

	t.Run("resource version, store and controller view follow the source", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			src := infSource(t, 2)
			inf := infNewPodInformer(src)
			ctrl := inf.GetController()
			if got := inf.LastSyncResourceVersion(); got != "" {
				t.Errorf("LastSyncResourceVersion before Run = %q, want empty", got)
			}
			if ctrl.HasSynced() {
				t.Errorf("controller view synced before Run")
			}
			infRun(t, inf)
			<-inf.HasSyncedChecker().Done()
			synctest.Wait()
			if got := inf.LastSyncResourceVersion(); got != "2" {
				t.Errorf("LastSyncResourceVersion after syncing = %q, want 2", got)
			}
			src.Modify(testPod("ns", "p0", ""))
			synctest.Wait()
			if got := inf.LastSyncResourceVersion(); got != "3" {
				t.Errorf("LastSyncResourceVersion after a change = %q, want 3", got)
			}
			if got := ctrl.LastSyncResourceVersion(); got != "3" {
				t.Errorf("controller view's LastSyncResourceVersion = %q, want 3", got)
			}
			if !ctrl.HasSynced() {
				t.Errorf("controller view not synced")
			}
			if ctrl.HasSyncedChecker().Done() != inf.HasSyncedChecker().Done() {
				t.Errorf("controller view's checker is not the informer's")
			}
			// Running the view does nothing and returns at once.
			ctrl.Run(make(chan struct{}))
			ctrl.RunWithContext(context.Background())
			if inf.GetStore() != inf.GetIndexer() {
				t.Errorf("GetStore and GetIndexer return different caches")
			}
		})
	})
}
