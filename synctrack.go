package cache

import (
	"errors"
	"sync"
	"sync/atomic"
)

// handlerSyncTracker answers, for one handler registration, "has this
// handler seen the informer's whole initial state?". That is true once both
//
//   - the informer upstream reports synced (its store holds the initial
//     list), and
//   - the handler has finished processing every initial-list item that was
//     handed to it (add notifications with isInInitialList set).
//
// It is a DoneChecker, so a registration can hand it out as its
// HasSyncedChecker and WaitFor can wait on it without polling: Done is
// closed exactly once, at the moment both conditions first hold, and never
// reopens.
//
// Use, by the informer's listener for one registration:
//
//  1. startInitialItem when an initial-list item is queued for the handler;
//  2. finishInitialItem after the handler returned from OnAdd for it (also
//     when the handler panicked: the item is over either way);
//  3. upstreamHasSynced once the informer has synced, typically from
//     followUpstream running on its own goroutine.
//
// Ordering rule: every startInitialItem for the registration's initial items
// must happen before upstreamHasSynced is called. Otherwise the count could
// touch zero between two items while upstream is already synced, and Done
// would close early. For a handler registered before the informer starts,
// the informer only reports synced after it distributed the initial list;
// for a handler joining a running informer, queue its snapshot of the cache
// first and only then start followUpstream.
//
// All methods are safe for concurrent use and lock-free except the one-time
// close.
type handlerSyncTracker struct {
	// name is what Name reports; fixed at construction.
	name string

	// pending counts initial-list items started and not finished.
	// Invariant: never negative (finishInitialItem refuses to go below 0).
	pending atomic.Int64

	// upstreamSynced turns true once, in upstreamHasSynced, and stays true.
	upstreamSynced atomic.Bool

	// closeDone closes done; the Once makes the close happen exactly once
	// even when finishInitialItem and upstreamHasSynced both see the
	// conditions met.
	closeDone sync.Once
	done      chan struct{}
}

var _ DoneChecker = (*handlerSyncTracker)(nil)

// errSyncTrackerUnderflow reports a finishInitialItem without a matching
// startInitialItem: a bookkeeping bug in the caller.
var errSyncTrackerUnderflow = errors.New("finish initial item: no initial item is pending")

// newHandlerSyncTracker returns a tracker, not synced, that Name describes
// as name.
func newHandlerSyncTracker(name string) *handlerSyncTracker {
	return &handlerSyncTracker{name: name, done: make(chan struct{})}
}

// Name describes the registration being tracked.
func (t *handlerSyncTracker) Name() string {
	return t.name
}

// Done returns a channel closed once upstream has synced and the handler
// has finished every initial item it was given.
func (t *handlerSyncTracker) Done() <-chan struct{} {
	return t.done
}

// HasSynced reports, without blocking, whether Done is closed.
func (t *handlerSyncTracker) HasSynced() bool {
	return isClosed(t.done)
}

// startInitialItem records one more initial-list item handed to the
// handler. Once the tracker is done it stays done; a late start is counted
// but does not reopen it.
func (t *handlerSyncTracker) startInitialItem() {
	t.pending.Add(1)
}

// finishInitialItem records that the handler finished one initial-list
// item, and closes Done if that was the last one and upstream has synced.
// Without a pending item it changes nothing and returns
// errSyncTrackerUnderflow, which the caller should log.
func (t *handlerSyncTracker) finishInitialItem() error {
	for {
		pending := t.pending.Load()
		if pending == 0 {
			return errSyncTrackerUnderflow
		}
		if !t.pending.CompareAndSwap(pending, pending-1) {
			continue
		}
		// The order matters: pending is lowered before upstreamSynced is
		// read, while upstreamHasSynced sets upstreamSynced before reading
		// pending. Atomics being sequentially consistent, at least one of
		// the two calls sees both conditions met, so Done cannot be missed.
		if pending == 1 && t.upstreamSynced.Load() {
			t.markDone()
		}
		return nil
	}
}

// upstreamHasSynced records that the informer has synced, and closes Done
// if no initial item is pending. Calling it again has no further effect.
func (t *handlerSyncTracker) upstreamHasSynced() {
	t.upstreamSynced.Store(true)
	if t.pending.Load() == 0 {
		t.markDone()
	}
}

// followUpstream blocks until upstream is closed, then records that the
// informer has synced, or until stop is closed, then returns without
// recording anything. Run it on its own goroutine per registration, with
// the informer's HasSyncedChecker().Done() as upstream and a channel that
// closes when the registration is removed or the informer stops as stop.
func (t *handlerSyncTracker) followUpstream(upstream, stop <-chan struct{}) {
	select {
	case <-upstream:
		t.upstreamHasSynced()
	case <-stop:
	}
}

func (t *handlerSyncTracker) markDone() {
	t.closeDone.Do(func() { close(t.done) })
}
