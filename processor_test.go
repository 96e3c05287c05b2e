package cache

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/klog/v2"
)

// procListener returns a listener for h, with the backlog limit in force.
func procListener(h ResourceEventHandler) *processorListener {
	return newProcessorListener(listenerConfig{
		logger:       klog.Background(),
		handler:      h,
		now:          time.Unix(0, 0),
		upstreamName: "test informer",
	})
}

// procPod is pod ns/name at resource version rv.
func procPod(name string, rv int) interface{} { return testPod("ns", name, fmt.Sprint(rv)) }

// procRun runs l.run on its own goroutine; the returned channel closes when
// it returns.
func procRun(l *processorListener) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.run()
	}()
	return done
}

func TestProcessorListener_StopEndsDeliveryAfterTheCallInProgress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		latch := newInfLatch()
		rec := &infRecorder{before: func(infEvent) { latch.wait() }}
		l := procListener(rec)
		// Queued before run starts, all five go into the listener's first
		// batch; it then blocks in the first call.
		for i := range 5 {
			l.add(updateNotification(procPod(fmt.Sprint("p", i), 1), procPod(fmt.Sprint("p", i), 2)))
		}
		done := procRun(l)
		synctest.Wait()
		l.stop()
		l.add(deleteNotification(procPod("p0", 3))) // ignored: stopped
		latch.open()
		<-done
		<-l.ShutdownChan()
		want := []infEvent{{Kind: "update", Key: "ns/p0", RV: "2", OldRV: "1"}}
		if diff := cmp.Diff(want, rec.snapshot()); diff != "" {
			t.Errorf("calls after stop (-want +got):\n%s", diff)
		}
	})
}

// With the keep-serving opt-in (utilruntime.ReallyCrash false), a
// panicking call is dropped and delivery goes on, after a pause. An
// initial add that panicked still counts as processed, unlike client-go,
// whose registration then never syncs (kubernetes/kubernetes#129024).
func TestProcessorListener_WithoutReallyCrashDeliveryGoesOnAfterAPanic(t *testing.T) {
	panics := keepServing(t)
	synctest.Test(t, func(t *testing.T) {
		rec := &infRecorder{before: func(e infEvent) {
			if e.RV == "1" {
				panic("handler bug")
			}
		}}
		l := procListener(rec)
		l.add(addNotification(procPod("a", 1), true))
		l.add(addNotification(procPod("b", 1), true))
		l.add(updateNotification(procPod("a", 1), procPod("a", 2)))
		l.followUpstream(closedChannel())
		done := procRun(l)
		<-l.HasSyncedChecker().Done()
		// The update comes after a panicking call: it waits a second.
		time.Sleep(listenerPanicPause)
		synctest.Wait()
		want := []infEvent{{Kind: "update", Key: "ns/a", RV: "2", OldRV: "1"}}
		if diff := cmp.Diff(want, rec.snapshot()); diff != "" {
			t.Errorf("calls that completed (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"handler bug", "handler bug"}, panics.all()); diff != "" {
			t.Errorf("panic handlers saw (-want +got):\n%s", diff)
		}
		l.stop()
		<-done
	})
}

func TestProcessorListener_InitialAddsCancelledByMergingStillCountAsProcessed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		prev := SetListenerBacklogLimit(1)
		rec := &infRecorder{}
		l := procListener(rec)
		SetListenerBacklogLimit(prev)
		l.add(addNotification(procPod("a", 1), true))
		l.add(addNotification(procPod("b", 1), true))
		// Merging is on: b's add and delete cancel out before delivery.
		l.add(deleteNotification(procPod("b", 2)))
		l.add(updateNotification(procPod("a", 1), procPod("a", 3)))
		l.followUpstream(closedChannel())
		done := procRun(l)
		<-l.HasSyncedChecker().Done()
		synctest.Wait()
		want := []infEvent{{Kind: "add", Key: "ns/a", RV: "3", Initial: true}}
		if diff := cmp.Diff(want, rec.snapshot()); diff != "" {
			t.Errorf("calls (-want +got):\n%s", diff)
		}
		l.stop()
		<-done
	})
}

func TestSharedProcessor_ListenerAddedAfterStopIsFinished(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newSharedProcessor(nil, closedChannel())
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			p.run(ctx)
		}()
		cancel()
		<-done
		l := procListener(&infRecorder{})
		if p.addListener(l, nil) {
			t.Errorf("addListener reported a running processor after it stopped")
		}
		<-l.ShutdownChan()
		l.add(addNotification(procPod("a", 1), false))
		if n := l.pending.len(); n != 0 {
			t.Errorf("stopped listener queued %d notifications", n)
		}
	})
}

func TestSharedProcessor_LateListenerSyncsOnlyAfterItsInitialItems(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newSharedProcessor(nil, closedChannel())
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			p.run(ctx)
		}()
		defer func() {
			cancel()
			<-done
		}()
		synctest.Wait()
		latch := newInfLatch()
		defer latch.open()
		rec := &infRecorder{before: func(infEvent) { latch.wait() }}
		l := procListener(rec)
		if !p.addListener(l, []interface{}{procPod("a", 1), procPod("b", 1)}) {
			t.Fatalf("addListener reported a stopped processor")
		}
		synctest.Wait()
		if l.HasSynced() {
			t.Errorf("listener synced while its handler is stuck in its first initial add")
		}
		latch.open()
		<-l.HasSyncedChecker().Done()
		want := []infEvent{{Kind: "add", Key: "ns/a", RV: "1", Initial: true}, {Kind: "add", Key: "ns/b", RV: "1", Initial: true}}
		if diff := cmp.Diff(want, rec.snapshot()); diff != "" {
			t.Errorf("calls (-want +got):\n%s", diff)
		}
	})
}

// closedChannel returns a closed channel.
func closedChannel() <-chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}

// pauseCall is one notification of a pause scenario: queued at queuedAt
// (on the bubble's clock, from the start), and whether the handler panics
// on it.
type pauseCall struct {
	queuedAt time.Duration
	panics   bool
}

// With utilruntime.ReallyCrash false, a listener waits listenerPanicPause
// before the call that follows a panicking one, and only then; the wait
// starts once that next notification is there, as client-go's sleep does.
func TestProcessorListener_WaitsASecondBeforeTheCallAfterAPanic(t *testing.T) {
	tests := map[string]struct {
		calls []pauseCall
		// wantCalledAt is when each call started, from the start.
		wantCalledAt []time.Duration
	}{
		"no panic, no pause": {
			calls:        []pauseCall{{}, {}, {}},
			wantCalledAt: []time.Duration{0, 0, 0},
		},
		"every call panics: one second between calls": {
			calls:        []pauseCall{{panics: true}, {panics: true}, {panics: true}},
			wantCalledAt: []time.Duration{0, time.Second, 2 * time.Second},
		},
		"only the call after the panic waits": {
			calls:        []pauseCall{{panics: true}, {}, {}},
			wantCalledAt: []time.Duration{0, time.Second, time.Second},
		},
		"a panic on the last call delays nothing": {
			calls:        []pauseCall{{}, {}, {panics: true}},
			wantCalledAt: []time.Duration{0, 0, 0},
		},
		"the wait starts when the next notification arrives": {
			calls:        []pauseCall{{panics: true}, {queuedAt: 5 * time.Second}},
			wantCalledAt: []time.Duration{0, 6 * time.Second},
		},
		"a notification that arrives during the wait is not delayed further": {
			calls:        []pauseCall{{panics: true}, {}, {queuedAt: 500 * time.Millisecond}},
			wantCalledAt: []time.Duration{0, time.Second, time.Second},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			panics := keepServing(t)
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				var mu sync.Mutex
				var calledAt []time.Duration
				l := procListener(ResourceEventHandlerFuncs{AddFunc: func(obj interface{}) {
					mu.Lock()
					i := len(calledAt)
					calledAt = append(calledAt, time.Since(start))
					mu.Unlock()
					if tc.calls[i].panics {
						panic(fmt.Sprint("handler bug on call ", i))
					}
				}})
				done := procRun(l)
				for i, c := range tc.calls {
					time.Sleep(c.queuedAt - time.Since(start))
					l.add(addNotification(procPod(fmt.Sprint("p", i), 1), false))
				}
				time.Sleep(time.Minute)
				synctest.Wait()
				l.stop()
				<-done

				mu.Lock()
				defer mu.Unlock()
				if diff := cmp.Diff(tc.wantCalledAt, calledAt); diff != "" {
					t.Errorf("call start times (-want +got):\n%s", diff)
				}
				wantPanics := 0
				for _, c := range tc.calls {
					if c.panics {
						wantPanics++
					}
				}
				if got := len(panics.all()); got != wantPanics {
					t.Errorf("%d panics seen by the panic handlers, want %d", got, wantPanics)
				}
			})
		})
	}
}

// The wait after a panic belongs to the call it delays, as client-go's
// sleep does: a stop during the wait lets it run out and the notification
// it held is delivered; the ones behind it are dropped.
func TestProcessorListener_StopDuringTheWaitAfterAPanicLetsTheHeldCallRun(t *testing.T) {
	keepServing(t)
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var mu sync.Mutex
		var calls []string
		l := procListener(ResourceEventHandlerFuncs{AddFunc: func(obj interface{}) {
			mu.Lock()
			calls = append(calls, fmt.Sprint(infKey(obj), "@", time.Since(start)))
			mu.Unlock()
			if infKey(obj) == "ns/a" {
				panic("handler bug")
			}
		}})
		l.add(addNotification(procPod("a", 1), false))
		l.add(addNotification(procPod("b", 1), false))
		l.add(addNotification(procPod("c", 1), false))
		done := procRun(l)
		time.Sleep(100 * time.Millisecond)
		l.stop()
		<-done
		if elapsed := time.Since(start); elapsed != listenerPanicPause {
			t.Errorf("run returned %v after the start, want %v (when the held call ran)", elapsed, listenerPanicPause)
		}
		mu.Lock()
		defer mu.Unlock()
		if diff := cmp.Diff([]string{"ns/a@0s", "ns/b@1s"}, calls); diff != "" {
			t.Errorf("calls (-want +got):\n%s", diff)
		}
	})
}

// At the informer level, the wait after a panic holds back only the
// listener whose handler panicked: with every add panicking, its handler
// is called once a second, while another handler gets every add at once.
func TestSharedInformer_PanickingHandlerIsCalledOnceASecond(t *testing.T) {
	keepServing(t)
	synctest.Test(t, func(t *testing.T) {
		const pods = 4
		src := infSource(t, pods)
		inf := infNewPodInformer(src)
		start := time.Now()
		var mu sync.Mutex
		calledAt := map[string][]time.Duration{}
		record := func(who string) {
			mu.Lock()
			defer mu.Unlock()
			calledAt[who] = append(calledAt[who], time.Since(start))
		}
		infAdd(t, inf, ResourceEventHandlerFuncs{AddFunc: func(interface{}) {
			record("panicky")
			panic("handler bug")
		}})
		infAdd(t, inf, ResourceEventHandlerFuncs{AddFunc: func(interface{}) { record("calm") }})
		stop := infRun(t, inf)
		time.Sleep(time.Minute)
		synctest.Wait()
		stop()

		mu.Lock()
		defer mu.Unlock()
		want := map[string][]time.Duration{
			"panicky": {0, time.Second, 2 * time.Second, 3 * time.Second},
			"calm":    {0, 0, 0, 0},
		}
		if diff := cmp.Diff(want, calledAt); diff != "" {
			t.Errorf("call start times per handler (-want +got):\n%s", diff)
		}
	})
}
