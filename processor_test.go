package cache

import (
	"context"
	"fmt"
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
// panicking call is dropped and delivery goes on. An initial add that
// panicked still counts as processed, unlike client-go, whose registration
// then never syncs (kubernetes/kubernetes#129024).
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
