package cache

import (
	"errors"
	"sync"
)

// ErrFIFOClosed is returned by Pop and PopBatch once the queue is closed.
// Its text is client-go's and names DeltaFIFO whatever the queue; only the
// text names it: this file, below the queues, refers to none of them.
var ErrFIFOClosed = errors.New("DeltaFIFO: manipulating with closed queue")

// queueLifecycle is what FIFO, DeltaFIFO and RealFIFO have in common apart
// from their items: being closed, the initial sync and the queue's name.
// Each queue embeds it, so its exported methods are the queues' Close,
// IsClosed, HasSynced, HasSyncedChecker, Name and Done, written once.
//
// It has no lock of its own: cond.L is the owning queue's mu, and that lock
// guards sync and closed. Close, IsClosed and HasSynced take it; waitLocked
// and the queue's own methods use the fields with it held. setUp must be
// called once, in the queue's constructor, before the queue is shared. The
// receiver is named f, as on the queues, because go doc shows these methods
// as the queues' own.
type queueLifecycle struct {
	// cond, on the owning queue's mu, wakes the queue's consumers when an
	// item is queued or the queue is closed.
	cond sync.Cond
	// sync tracks the initial sync. Guarded by cond.L.
	sync initialSync
	// closed records Close. Guarded by cond.L. Invariant: once true, it
	// stays true.
	closed bool
	// checker is what HasSyncedChecker returns: the queue's name and the
	// initial sync's done channel. Set by setUp, never changed.
	checker *queueSyncedChecker
}

// setUp prepares f for a queue named name whose lock is mu.
func (f *queueLifecycle) setUp(mu *sync.Mutex, name string) {
	f.cond.L = mu
	f.sync = newInitialSync()
	f.checker = &queueSyncedChecker{name: name, done: f.sync.done}
}

// waitLocked waits until queued, which counts the queue's items, is above
// zero, or returns ErrFIFOClosed once the queue is closed with nothing
// queued. The caller holds the queue's mu; it is released while waiting.
func (f *queueLifecycle) waitLocked(queued func() int) error {
	for queued() == 0 {
		if f.closed {
			return ErrFIFOClosed
		}
		f.cond.Wait()
	}
	return nil
}

// Close marks the queue closed and wakes every goroutine waiting to pop:
// once the queued items are drained, popping returns ErrFIFOClosed.
// Producers may still queue items.
func (f *queueLifecycle) Close() {
	f.cond.L.Lock()
	defer f.cond.L.Unlock()
	f.closed = true
	f.cond.Broadcast()
}

// IsClosed reports whether Close was called.
func (f *queueLifecycle) IsClosed() bool {
	f.cond.L.Lock()
	defer f.cond.L.Unlock()
	return f.closed
}

// HasSynced reports whether the initial sync is over: every item queued by
// the first Replace was popped and processed, or an Add, Update or Delete
// came before any Replace.
func (f *queueLifecycle) HasSynced() bool {
	f.cond.L.Lock()
	defer f.cond.L.Unlock()
	return f.sync.synced()
}

// HasSyncedChecker returns a DoneChecker, named after the queue, that is
// done when HasSynced turns true.
func (f *queueLifecycle) HasSyncedChecker() DoneChecker { return f.checker }

// Name returns the queue's name, which also names its HasSyncedChecker.
func (f *queueLifecycle) Name() string { return f.checker.name }

// Done returns a channel closed when HasSynced turns true.
func (f *queueLifecycle) Done() <-chan struct{} { return f.checker.done }

// initialSync tracks a queue's initial sync: it is over once every item
// queued by the first Replace has been popped and processed, or at once if
// an Add, Update or Delete came before any Replace. It has no lock; every
// method except through done runs under the owning queue's lock.
//
// Invariants: owed > 0 only while populated; done is closed exactly when
// finished is true, and both stay so.
type initialSync struct {
	// populated turns true at the first Replace, Add, Update or Delete.
	populated bool
	// owed counts the items of the first Replace not yet taken by a pop.
	owed int
	// processing counts items of the first Replace that were claimed by a
	// pop processing them without the queue's lock (RealFIFO with
	// UnlockWhileProcessing) and not yet released: the sync is not over
	// while any is, whatever changes arrive meanwhile.
	processing int
	// finished records that done was closed.
	finished bool
	done     chan struct{}
}

func newInitialSync() initialSync {
	return initialSync{done: make(chan struct{})}
}

// synced reports whether the initial sync is over.
func (s *initialSync) synced() bool { return s.finished }

// markPopulated records an Add, Update or Delete: before any Replace it
// ends the initial sync with nothing owed.
func (s *initialSync) markPopulated() {
	s.populated = true
	s.settle()
}

// firstReplace records a Replace after which queued items wait in the
// queue. Only the first call (before any Add, Update or Delete) counts:
// those items are what the initial sync waits for.
func (s *initialSync) firstReplace(queued int) {
	if s.populated {
		return
	}
	s.populated = true
	s.owed = queued
	s.settle()
}

// take records that n items left the queue. It does not end the initial
// sync: call settle once they are processed, so that a waiter on done sees
// their effects.
func (s *initialSync) take(n int) {
	s.owed = max(0, s.owed-n)
}

// claim is take for a pop that processes the n items unlocked: the owed
// ones among them keep the sync open until release. It returns how many
// were owed, to pass to release.
func (s *initialSync) claim(n int) int {
	owed := min(n, s.owed)
	s.owed -= owed
	s.processing += owed
	return owed
}

// release records that the claimed items were processed, and ends the
// initial sync if nothing is owed any more.
func (s *initialSync) release(claimed int) {
	s.processing -= claimed
	s.settle()
}

// settle ends the initial sync if nothing is owed any more.
func (s *initialSync) settle() {
	if s.populated && s.owed == 0 && s.processing == 0 && !s.finished {
		s.finished = true
		close(s.done)
	}
}

// queueSyncedChecker is the DoneChecker every queue returns from
// HasSyncedChecker: named after the queue, done when its initial sync is.
// It is a value of its own, not the queue, so that holding it neither keeps
// the queue's items alive nor gives access to the queue.
type queueSyncedChecker struct {
	name string
	done <-chan struct{}
}

// Name returns the name of the queue.
func (c *queueSyncedChecker) Name() string { return c.name }

// Done returns a channel closed when the queue's initial sync is over.
func (c *queueSyncedChecker) Done() <-chan struct{} { return c.done }
