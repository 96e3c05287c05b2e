package cache

import "sync"

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

// FIFO is a Queue that keeps only the newest object per key and hands each
// queued key out once, oldest first. Adding an object whose key is already
// queued replaces the object in place without moving the key; Delete drops
// the object, so a deleted object is never popped; Resync does nothing.
// Use it to process each object once, at its latest state, with no interest
// in deletions. DeltaFIFO and RealFIFO keep the history instead.
//
// Keys are computed with the KeyFunc given to NewFIFO. A FIFO must be made
// by NewFIFO; it is safe for concurrent use, with a single consumer calling
// Pop. Every FIFO is named "FIFO", in Name and in its HasSyncedChecker.
type FIFO struct {
	// mu guards slots, order and the embedded queueLifecycle's closed flag
	// and initial sync; the lifecycle's cond, on mu, wakes Pop when a key is
	// queued or the FIFO is closed.
	mu sync.Mutex
	queueLifecycle
	// slots holds, per queued key, the newest object, or a mark that it was
	// deleted after its key was queued. A deleted slot keeps its place: if
	// the key is added again before the slot reaches the front, the object
	// is popped at that place; otherwise the slot is skipped.
	// Invariant: a key is in slots if and only if it is in order, once.
	slots map[string]fifoSlot
	order ring[string]

	// keyFunc is set by NewFIFO and never changes.
	keyFunc KeyFunc
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
	f := &FIFO{slots: map[string]fifoSlot{}, keyFunc: keyFunc}
	f.setUp(&f.mu, fifoName)
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
		return err
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
		return err
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
			return err
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
// exchange it sees no concurrent change to the FIFO. A panic in process
// propagates, as in client-go; the object is not queued again.
// isInInitialList is true while the initial sync is not over.
func (f *FIFO) Pop(process PopProcessFunc) (interface{}, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for {
		if err := f.waitLocked(f.order.len); err != nil {
			return nil, err
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
		defer f.sync.settle()
		return slot.obj, callProcess(func() error { return process(slot.obj, isInInitialList) })
	}
}
