package cache

import (
	"fmt"
	"math/rand"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"
)

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
