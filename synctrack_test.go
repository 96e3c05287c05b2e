package cache

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

// trackerStep is one call on a handlerSyncTracker and the state expected
// after it.
type trackerStep struct {
	op         string // "start", "finish" or "upstream"
	wantErr    error  // for "finish"
	wantSynced bool
}

func TestHandlerSyncTracker_SyncedOnlyWhenUpstreamSyncedAndNothingPending(t *testing.T) {
	tests := map[string][]trackerStep{
		"upstream synced with nothing pending": {
			{op: "upstream", wantSynced: true},
		},
		"items finished before upstream syncs": {
			{op: "start"},
			{op: "start"},
			{op: "finish"},
			{op: "finish"},
			{op: "upstream", wantSynced: true},
		},
		"last item finished after upstream synced": {
			{op: "start"},
			{op: "start"},
			{op: "finish"},
			{op: "upstream"},
			{op: "finish", wantSynced: true},
		},
		"upstream never syncs": {
			{op: "start"},
			{op: "finish"},
		},
		"a pending item holds the sync back": {
			{op: "start"},
			{op: "upstream"},
		},
		"finish without start is refused and changes nothing": {
			{op: "finish", wantErr: errSyncTrackerUnderflow},
			{op: "start"},
			{op: "upstream"},
			{op: "finish", wantSynced: true},
		},
		"a late start does not reopen a synced tracker": {
			{op: "upstream", wantSynced: true},
			{op: "start", wantSynced: true},
			{op: "finish", wantSynced: true},
		},
		"upstream reported twice": {
			{op: "start"},
			{op: "upstream"},
			{op: "upstream"},
			{op: "finish", wantSynced: true},
			{op: "upstream", wantSynced: true},
		},
	}
	for name, steps := range tests {
		t.Run(name, func(t *testing.T) {
			tracker := newHandlerSyncTracker("informer + handler")
			for i, step := range steps {
				var err error
				switch step.op {
				case "start":
					tracker.startInitialItem()
				case "finish":
					err = tracker.finishInitialItem()
				case "upstream":
					tracker.upstreamHasSynced()
				default:
					t.Fatalf("unknown op %q", step.op)
				}
				if !errors.Is(err, step.wantErr) {
					t.Errorf("step %d (%s): error %v, want %v", i, step.op, err, step.wantErr)
				}
				if got := tracker.HasSynced(); got != step.wantSynced {
					t.Errorf("step %d (%s): HasSynced() = %v, want %v", i, step.op, got, step.wantSynced)
				}
				if got := IsDone(tracker); got != step.wantSynced {
					t.Errorf("step %d (%s): IsDone() = %v, want %v", i, step.op, got, step.wantSynced)
				}
			}
		})
	}
}

func TestHandlerSyncTracker_Name(t *testing.T) {
	tracker := newHandlerSyncTracker("pods + event handler example.com/ctrl.(*Controller)")
	if diff := cmp.Diff("pods + event handler example.com/ctrl.(*Controller)", tracker.Name()); diff != "" {
		t.Errorf("name (-want +got):\n%s", diff)
	}
}

func TestHandlerSyncTracker_FollowUpstream(t *testing.T) {
	tests := map[string]struct {
		closeUpstream bool
		closeStop     bool
		pending       int
		wantSynced    bool
	}{
		"upstream syncs":                   {closeUpstream: true, wantSynced: true},
		"upstream syncs with item pending": {closeUpstream: true, pending: 1},
		"stopped before upstream syncs":    {closeStop: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tracker := newHandlerSyncTracker("t")
				for range tc.pending {
					tracker.startInitialItem()
				}
				upstream, stop := make(chan struct{}), make(chan struct{})
				returned := make(chan struct{})
				go func() {
					defer close(returned)
					tracker.followUpstream(upstream, stop)
				}()
				synctest.Wait()
				if tracker.HasSynced() {
					t.Fatal("synced before upstream did")
				}
				if tc.closeUpstream {
					close(upstream)
				}
				if tc.closeStop {
					close(stop)
				}
				<-returned
				if got := tracker.HasSynced(); got != tc.wantSynced {
					t.Errorf("HasSynced() = %v, want %v", got, tc.wantSynced)
				}
			})
		})
	}
}

// TestHandlerSyncTracker_LastFinishRacingUpstreamIsNeverLost runs the one
// race that matters many times: the final finishInitialItem and
// upstreamHasSynced on different goroutines. Whichever runs second must
// close Done.
func TestHandlerSyncTracker_LastFinishRacingUpstreamIsNeverLost(t *testing.T) {
	for range 500 {
		tracker := newHandlerSyncTracker("race")
		tracker.startInitialItem()
		begin := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			<-begin
			if err := tracker.finishInitialItem(); err != nil {
				t.Errorf("finishInitialItem: %v", err)
			}
		})
		wg.Go(func() {
			<-begin
			tracker.upstreamHasSynced()
		})
		close(begin)
		wg.Wait()
		if !tracker.HasSynced() {
			t.Fatal("both conditions met, but the tracker is not synced")
		}
	}
}

// TestHandlerSyncTracker_ConcurrentFinishersAndWaiters has many goroutines
// finish items while upstream syncs and waiters block in WaitFor: every
// waiter must return true, and Done must be closed exactly once (a second
// close would panic).
func TestHandlerSyncTracker_ConcurrentFinishersAndWaiters(t *testing.T) {
	const finishers, itemsEach, waiters = 8, 200, 4
	tracker := newHandlerSyncTracker("concurrent")
	for range finishers * itemsEach {
		tracker.startInitialItem()
	}
	var wg sync.WaitGroup
	results := make(chan bool, waiters)
	for range waiters {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			results <- WaitFor(ctx, "", tracker)
		})
	}
	begin := make(chan struct{})
	for range finishers {
		wg.Go(func() {
			<-begin
			for range itemsEach {
				if err := tracker.finishInitialItem(); err != nil {
					t.Errorf("finishInitialItem: %v", err)
					return
				}
			}
		})
	}
	wg.Go(func() {
		<-begin
		tracker.upstreamHasSynced()
	})
	close(begin)
	wg.Wait()
	close(results)
	for ok := range results {
		if !ok {
			t.Error("a waiter gave up before the tracker synced")
		}
	}
	if err := tracker.finishInitialItem(); !errors.Is(err, errSyncTrackerUnderflow) {
		t.Errorf("extra finishInitialItem: error %v, want %v", err, errSyncTrackerUnderflow)
	}
}

func TestHandlerSyncTracker_WaitForWakesAtTheLastItem(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tracker := newHandlerSyncTracker("pods + handler")
		tracker.startInitialItem()
		tracker.startInitialItem()
		tracker.upstreamHasSynced()
		time.AfterFunc(time.Second, func() { _ = tracker.finishInitialItem() })
		time.AfterFunc(3*time.Second, func() { _ = tracker.finishInitialItem() })

		start := time.Now()
		if !WaitFor(t.Context(), "", tracker) {
			t.Fatal("WaitFor() = false, want true")
		}
		if elapsed := time.Since(start); elapsed != 3*time.Second {
			t.Errorf("WaitFor returned after %v, want 3s", elapsed)
		}
	})
}

func BenchmarkHandlerSyncTracker_StartFinish(b *testing.B) {
	tracker := newHandlerSyncTracker("bench")
	tracker.upstreamHasSynced()
	tracker.startInitialItem() // keep one pending so the tracker stays open
	b.ReportAllocs()
	for b.Loop() {
		tracker.startInitialItem()
		_ = tracker.finishInitialItem()
	}
}
