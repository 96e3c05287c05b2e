package cache

import (
	"errors"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"
)

// lifecycleUnderTest is a queueLifecycle with the mutex a queue would own.
type lifecycleUnderTest struct {
	mu sync.Mutex
	queueLifecycle
}

func newLifecycleUnderTest(name string) *lifecycleUnderTest {
	l := &lifecycleUnderTest{}
	l.setUp(&l.mu, name)
	return l
}

// syncStep changes the initial sync as a queue would, holding its lock.
func syncStep(change func(s *initialSync)) func(l *lifecycleUnderTest) {
	return func(l *lifecycleUnderTest) {
		l.mu.Lock()
		defer l.mu.Unlock()
		change(&l.sync)
	}
}

var (
	closeStep      = func(l *lifecycleUnderTest) { l.Close() }
	addStep        = syncStep(func(s *initialSync) { s.markPopulated() })
	replaceTwoStep = syncStep(func(s *initialSync) { s.firstReplace(2) })
	popOneStep     = syncStep(func(s *initialSync) { s.take(1); s.settle() })
)

// lifecycleState is what the lifecycle reports from outside, plus what a
// pop would get from waitLocked with nothing queued (only asked once
// closed: otherwise it blocks).
type lifecycleState struct {
	Closed, Synced, DoneClosed, CheckerDone bool
	WaitOnEmpty                             string
}

func TestQueueLifecycle_ClosedAndSyncedTransitions(t *testing.T) {
	tests := map[string]struct {
		steps []func(l *lifecycleUnderTest)
		want  lifecycleState
	}{
		"new queue is open and not synced": {
			want: lifecycleState{},
		},
		"close": {
			steps: []func(*lifecycleUnderTest){closeStep},
			want:  lifecycleState{Closed: true, WaitOnEmpty: ErrFIFOClosed.Error()},
		},
		"second close keeps it closed": {
			steps: []func(*lifecycleUnderTest){closeStep, closeStep},
			want:  lifecycleState{Closed: true, WaitOnEmpty: ErrFIFOClosed.Error()},
		},
		"add before any replace syncs": {
			steps: []func(*lifecycleUnderTest){addStep},
			want:  lifecycleState{Synced: true, DoneClosed: true, CheckerDone: true},
		},
		"first replace owes its items": {
			steps: []func(*lifecycleUnderTest){replaceTwoStep, popOneStep},
			want:  lifecycleState{},
		},
		"first replace drained syncs": {
			steps: []func(*lifecycleUnderTest){replaceTwoStep, popOneStep, popOneStep},
			want:  lifecycleState{Synced: true, DoneClosed: true, CheckerDone: true},
		},
		"close does not end the initial sync": {
			steps: []func(*lifecycleUnderTest){replaceTwoStep, closeStep},
			want:  lifecycleState{Closed: true, WaitOnEmpty: ErrFIFOClosed.Error()},
		},
		"sync survives close": {
			steps: []func(*lifecycleUnderTest){addStep, closeStep},
			want:  lifecycleState{Closed: true, Synced: true, DoneClosed: true, CheckerDone: true, WaitOnEmpty: ErrFIFOClosed.Error()},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			l := newLifecycleUnderTest("q")
			for _, step := range tc.steps {
				step(l)
			}
			got := lifecycleState{
				Closed:      l.IsClosed(),
				Synced:      l.HasSynced(),
				DoneClosed:  isClosed(l.Done()),
				CheckerDone: IsDone(l.HasSyncedChecker()),
			}
			if got.Closed {
				l.mu.Lock()
				if err := l.waitLocked(func() int { return 0 }); err != nil {
					got.WaitOnEmpty = err.Error()
				}
				l.mu.Unlock()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("state (-want +got):\n%s", diff)
			}
		})
	}
}

func TestQueueLifecycle_NameIsSharedWithTheChecker(t *testing.T) {
	l := newLifecycleUnderTest("pods")
	checker := l.HasSyncedChecker()
	got := []string{l.Name(), checker.Name()}
	if diff := cmp.Diff([]string{"pods", "pods"}, got); diff != "" {
		t.Errorf("names of the queue and its checker (-want +got):\n%s", diff)
	}
	if checker.Done() != l.Done() {
		t.Error("the checker's Done channel is not the queue's")
	}
}

func TestQueueLifecycle_WaitReturnsItemsBeforeClosed(t *testing.T) {
	tests := map[string]struct {
		queued  int
		closed  bool
		wantErr error
	}{
		"items queued, open":   {queued: 1},
		"items queued, closed": {queued: 1, closed: true},
		"empty, closed":        {closed: true, wantErr: ErrFIFOClosed},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			l := newLifecycleUnderTest("q")
			if tc.closed {
				l.Close()
			}
			l.mu.Lock()
			defer l.mu.Unlock()
			if err := l.waitLocked(func() int { return tc.queued }); !errors.Is(err, tc.wantErr) {
				t.Errorf("waitLocked = %v, want %v", err, tc.wantErr)
			}
		})
	}
}

func TestQueueLifecycle_CloseWakesEveryWaiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLifecycleUnderTest("q")
		const waiters = 3
		errs := make(chan error, waiters)
		for range waiters {
			go func() {
				l.mu.Lock()
				defer l.mu.Unlock()
				errs <- l.waitLocked(func() int { return 0 })
			}()
		}
		synctest.Wait()
		if len(errs) != 0 {
			t.Fatalf("%d waiters returned before Close", len(errs))
		}
		l.Close()
		for range waiters {
			if err := <-errs; !errors.Is(err, ErrFIFOClosed) {
				t.Errorf("waiter got %v, want ErrFIFOClosed", err)
			}
		}
	})
}
