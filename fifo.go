package cache

import (
	"errors"
	"fmt"
	"sync"

	"k8s.io/klog/v2"
)

// ErrFIFOClosed is returned by Pop and PopBatch once the queue is closed.
var ErrFIFOClosed = errors.New("DeltaFIFO: manipulating with closed queue")

// PopProcessFunc handles one popped item. isInInitialList is true for items
// that came from the queue's first Replace.
type PopProcessFunc func(obj interface{}, isInInitialList bool) error

// ProcessBatchFunc handles a batch of popped deltas at once. isInInitialList
// is true when the batch came from the queue's first Replace.
type ProcessBatchFunc func(deltas []Delta, isInInitialList bool) error

// Queue is a ReflectorStore that hands its items, one at a time, to a
// process function.
type Queue interface {
	ReflectorStore

	// Pop waits until an item is available, removes it and passes it to
	// process. It returns ErrFIFOClosed once the queue is closed.
	Pop(PopProcessFunc) (interface{}, error)

	// HasSynced reports whether the items of the first Replace were all
	// popped, or whether an Add/Update/Delete came before any Replace.
	HasSynced() bool

	// HasSyncedChecker returns a DoneChecker for the same condition.
	HasSyncedChecker() DoneChecker

	// Close stops the queue: waiting and later Pops return ErrFIFOClosed.
	Close()
}

// QueueWithBatch is a Queue that can hand several items at once.
type QueueWithBatch interface {
	Queue

	// PopBatch waits for items and passes up to a batch of them to
	// processBatch, or a single one to processSingle.
	PopBatch(processBatch ProcessBatchFunc, processSingle PopProcessFunc) error
}

// KeyLister lists the keys of a store.
type KeyLister interface {
	ListKeys() []string
}

// KeyGetter looks up objects by key.
type KeyGetter interface {
	// GetByKey returns the object stored under key.
	GetByKey(key string) (value interface{}, exists bool, err error)
}

// KeyListerGetter is what a queue needs of the store it feeds (its
// "known objects"): to list the keys and fetch by key.
type KeyListerGetter interface {
	KeyLister
	KeyGetter
}

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
type queueSyncedChecker struct {
	name string
	done <-chan struct{}
}

// Name returns the name of the queue.
func (c *queueSyncedChecker) Name() string { return c.name }

// Done returns a channel closed when the queue's initial sync is over.
func (c *queueSyncedChecker) Done() <-chan struct{} { return c.done }

// FIFO is a Queue that keeps only the newest object per key and hands each
// queued key out once, oldest first. Adding an object whose key is already
// queued replaces the object in place without moving the key; Delete drops
// the object, so a deleted object is never popped; Resync does nothing.
// Use it to process each object once, at its latest state, with no interest
// in deletions. DeltaFIFO and RealFIFO keep the history instead.
//
// Keys are computed with the KeyFunc given to NewFIFO. A FIFO must be made
// by NewFIFO; it is safe for concurrent use, with a single consumer calling
// Pop.
type FIFO struct {
	// mu guards every field up to keyFunc; cond, on mu, wakes Pop when a key
	// is queued or the queue is closed.
	mu   sync.Mutex
	cond sync.Cond
	// slots holds, per queued key, the newest object, or a mark that it was
	// deleted after its key was queued. A deleted slot keeps its place: if
	// the key is added again before the slot reaches the front, the object
	// is popped at that place; otherwise the slot is skipped.
	// Invariant: a key is in slots if and only if it is in order, once.
	slots  map[string]fifoSlot
	order  ring[string]
	sync   initialSync
	closed bool

	keyFunc KeyFunc
	checker *queueSyncedChecker
}

// fifoSlot is the content queued under one FIFO key.
type fifoSlot struct {
	obj     interface{}
	deleted bool
}

var (
	_ Queue       = (*FIFO)(nil)
	_ DoneChecker = (*FIFO)(nil)
)

// fifoName is the name every FIFO reports.
const fifoName = "FIFO"

// NewFIFO returns an empty FIFO that files objects under keyFunc's keys.
func NewFIFO(keyFunc KeyFunc) *FIFO {
	f := &FIFO{
		slots:   map[string]fifoSlot{},
		sync:    newInitialSync(),
		keyFunc: keyFunc,
	}
	f.cond.L = &f.mu
	f.checker = &queueSyncedChecker{name: fifoName, done: f.sync.done}
	return f
}

// keyOf computes obj's key, wrapping a failure in a KeyError.
func (f *FIFO) keyOf(obj interface{}) (string, error) {
	key, err := callKeyFunc(f.keyFunc, obj)
	if err != nil {
		return "", KeyError{Obj: obj, Err: err}
	}
	return key, nil
}

// Add queues obj's key unless it is already queued, and makes obj the
// object popped for that key.
func (f *FIFO) Add(obj interface{}) error {
	key, err := f.keyOf(obj)
	if err != nil {
		return fmt.Errorf("fifo add: %w", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sync.markPopulated()
	if _, queued := f.slots[key]; !queued {
		f.order.push(key)
		f.cond.Signal()
	}
	f.slots[key] = fifoSlot{obj: obj}
	return nil
}

// Update does what Add does.
func (f *FIFO) Update(obj interface{}) error {
	return f.Add(obj)
}

// Delete drops the object queued under obj's key, if any; nothing is popped
// for it. An unknown key is not an error.
func (f *FIFO) Delete(obj interface{}) error {
	key, err := f.keyOf(obj)
	if err != nil {
		return fmt.Errorf("fifo delete: %w", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sync.markPopulated()
	if _, queued := f.slots[key]; queued {
		f.slots[key] = fifoSlot{deleted: true}
	}
	return nil
}

// Replace makes list the queue's whole content: the queued objects are
// dropped and list's objects are queued in list order (the last object wins
// for a repeated key). The resource version is ignored. If any key cannot
// be computed nothing changes. The FIFO takes no reference to list itself.
func (f *FIFO) Replace(list []interface{}, resourceVersion string) error {
	slots := make(map[string]fifoSlot, len(list))
	order := ring[string]{}
	for _, obj := range list {
		key, err := f.keyOf(obj)
		if err != nil {
			return fmt.Errorf("fifo replace: %w", err)
		}
		if _, seen := slots[key]; !seen {
			order.push(key)
		}
		slots[key] = fifoSlot{obj: obj}
	}

	f.mu.Lock()
	defer f.mu.Unlock()
	f.slots, f.order = slots, order
	f.sync.firstReplace(order.len())
	if order.len() > 0 {
		f.cond.Broadcast()
	}
	return nil
}

// Resync does nothing: every object a FIFO holds is already queued.
func (f *FIFO) Resync() error {
	return nil
}

// Pop waits until an object is queued or the FIFO is closed, removes the
// oldest queued object and calls process with it; it returns the object and
// process's error. Once the FIFO is closed and empty it returns
// ErrFIFOClosed.
//
// process runs with the FIFO's lock held, so it must not call the FIFO; in
// exchange it sees no concurrent change to the FIFO. A panic in process is
// recovered and returned as an error; the object is not queued again.
// isInInitialList is true while the initial sync is not over.
func (f *FIFO) Pop(process PopProcessFunc) (interface{}, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for {
		for f.order.len() == 0 {
			if f.closed {
				return nil, ErrFIFOClosed
			}
			f.cond.Wait()
		}
		isInInitialList := !f.sync.synced()
		key := f.order.popFront()
		slot := f.slots[key]
		delete(f.slots, key)
		f.sync.take(1)
		if slot.deleted {
			f.sync.settle()
			continue
		}
		err := callProcess(klog.Background(), func() error { return process(slot.obj, isInInitialList) })
		f.sync.settle()
		return slot.obj, err
	}
}

// Close wakes every waiting Pop; Pop returns ErrFIFOClosed once the queued
// objects are drained. Add, Update, Delete and Replace still work.
func (f *FIFO) Close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	f.cond.Broadcast()
}

// IsClosed reports whether Close was called.
func (f *FIFO) IsClosed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.closed
}

// HasSynced reports whether the initial sync is over: the objects of the
// first Replace were all popped, or an Add, Update or Delete came before any
// Replace.
func (f *FIFO) HasSynced() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sync.synced()
}

// HasSyncedChecker returns a DoneChecker that is done when HasSynced turns
// true.
func (f *FIFO) HasSyncedChecker() DoneChecker { return f.checker }

// Name returns "FIFO", the name of the initial sync for DoneChecker.
func (f *FIFO) Name() string { return fifoName }

// Done returns a channel closed when HasSynced turns true.
func (f *FIFO) Done() <-chan struct{} { return f.checker.done }
