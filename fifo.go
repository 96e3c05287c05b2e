package cache

import (
	"errors"
	"sync"
	"time"

	"k8s.io/klog/v2"
)

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

// ring is the ordered backlog under every queue: push at the back, pop at
// the front, read by position. It has no lock; the owning queue guards it.
//
// Invariants:
//   - len(buf) is zero or a power of two, so positions wrap with a mask;
//   - the n live values are buf[(head+i)&(len(buf)-1)] for 0 <= i < n;
//   - every other slot holds the zero T, so a popped object can be freed
//     as soon as its consumer drops it.
//
// The buffer grows by doubling and shrinks by halving once it is at most a
// quarter full, so the memory of a relist burst is given back after the
// burst is drained.
type ring[T any] struct {
	buf  []T
	head int
	n    int
}

const (
	// ringMinCap is the capacity of the first allocation.
	ringMinCap = 16
	// ringKeepCap is the capacity below which the buffer never shrinks:
	// small buffers are not worth reallocating.
	ringKeepCap = 1024
)

// len returns the number of values in the ring.
func (r *ring[T]) len() int { return r.n }

// push appends v at the back.
func (r *ring[T]) push(v T) {
	if r.n == len(r.buf) {
		r.resize(max(ringMinCap, 2*len(r.buf)))
	}
	r.buf[(r.head+r.n)&(len(r.buf)-1)] = v
	r.n++
}

// at returns the value at position i, counted from the front. The caller
// ensures 0 <= i < r.len().
func (r *ring[T]) at(i int) T {
	return r.buf[(r.head+i)&(len(r.buf)-1)]
}

// popFront removes and returns the value at the front. The caller ensures
// the ring is not empty.
func (r *ring[T]) popFront() T {
	var zero T
	v := r.buf[r.head]
	r.buf[r.head] = zero
	r.head = (r.head + 1) & (len(r.buf) - 1)
	r.n--
	if r.n == 0 {
		r.head = 0
	}
	if c := len(r.buf); c > ringKeepCap && r.n <= c/4 {
		r.resize(c / 2)
	}
	return v
}

// resize moves the live values to the front of a new buffer of capacity c,
// a power of two no smaller than r.n.
func (r *ring[T]) resize(c int) {
	buf := make([]T, c)
	if r.n > 0 {
		tail := min(r.n, len(r.buf)-r.head)
		copy(buf, r.buf[r.head:r.head+tail])
		copy(buf[tail:], r.buf[:r.n-tail])
	}
	r.buf = buf
	r.head = 0
}

// callProcess runs fn, a call of the user's process function. A panic is
// not recovered, as in client-go: it leaves Pop (the queue's lock released
// and the popped item counted as consumed) and reaches the consumer's
// goroutine, where the controller hands it to utilruntime.HandleCrash.
func callProcess(fn func() error) error {
	return fn()
}

// knownObjectForSync returns the object knownObjects holds under key for a
// resync, and whether there is one. Failures are logged and skip the key.
// Lock order as for lastKnownState.
func knownObjectForSync(logger klog.Logger, knownObjects KeyGetter, key string) (interface{}, bool) {
	obj, exists, err := knownObjects.GetByKey(key)
	switch {
	case err != nil:
		logger.Error(err, "Lookup in known objects failed; the object is not resynced", "key", key)
		return nil, false
	case !exists:
		logger.V(2).Info("Key vanished from known objects; the object is not resynced", "key", key)
		return nil, false
	}
	return obj, true
}

const (
	// slowDepth is the backlog above which slow processing is reported: a
	// slow process function then delays many waiting items.
	slowDepth = 10
	// slowPerItem is how long processing one item may take before it is
	// reported, when the backlog is deeper than slowDepth.
	slowPerItem = 100 * time.Millisecond
	// slowBatchCap caps the allowance of a batch.
	slowBatchCap = time.Second
)

// reportSlowProcessing logs a process call that took longer than
// its allowance while more than slowDepth items were waiting behind it.
func reportSlowProcessing(logger klog.Logger, key string, items, depth int, took time.Duration) {
	if depth <= slowDepth {
		return
	}
	allowance := min(slowPerItem*time.Duration(items), slowBatchCap)
	if took <= allowance {
		return
	}
	logger.Info("Slow processing is holding up the queue", "key", key, "items", items, "depth", depth, "took", took)
}

// transformEntering applies transformer (nil: none) to obj, the object of
// key, as it enters a queue. A tombstone is left as is: its object came
// from the queue or from the known objects and was transformed on its way
// in. A panic in transformer is not recovered (callTransform).
func transformEntering(transformer TransformFunc, key string, obj interface{}) (interface{}, error) {
	if transformer == nil {
		return obj, nil
	}
	if _, ok := obj.(DeletedFinalStateUnknown); ok {
		return obj, nil
	}
	out, err := callTransform(transformer, obj)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// stageObject readies obj to enter a queue: it computes obj's key with
// keyOf, a failure being a KeyError, then applies transform (nil: none),
// see transformEntering. Both steps run user code, so queues stage objects
// before taking their lock; the error names the failing step.
func stageObject(keyOf func(interface{}) (string, error), transform TransformFunc, obj interface{}) (string, interface{}, error) {
	key, err := keyOf(obj)
	if err != nil {
		return "", nil, KeyError{Obj: obj, Err: err}
	}
	out, err := transformEntering(transform, key, obj)
	return key, out, err
}

// stagePrefix stages the objects of list in order, as stageObject does,
// until one fails: it returns the objects staged before the failure and
// the failure, or every object and nil. keyFailed tells a key failure (a
// KeyError) from a transform failure. Queues stage before taking their
// lock, so user code runs unlocked, then queue what client-go would have
// queued before the failure.
func stagePrefix(list []interface{}, keyOf func(interface{}) (string, error), transform TransformFunc) (staged []keyedObject, keyFailed bool, err error) {
	staged = make([]keyedObject, 0, len(list))
	for _, obj := range list {
		key, err := keyOf(obj)
		if err != nil {
			return staged, true, KeyError{Obj: obj, Err: err}
		}
		out, err := transformEntering(transform, key, obj)
		if err != nil {
			return staged, false, err
		}
		staged = append(staged, keyedObject{key: key, obj: out})
	}
	return staged, false, nil
}

// listPreparer is implemented by the queues (DeltaFIFO and RealFIFO). A
// Reflector feeding one hands it every listed object as it arrives, then the
// prepared list.
type listPreparer interface {
	// prepareListed returns what the queue's Replace would queue for obj:
	// obj transformed by the queue's transformer, or, when the objects
	// cached by the queue's consumer hold the same version of it, the cached
	// object. It fails where Replace would fail because of obj, with
	// Replace's error.
	prepareListed(obj interface{}) (interface{}, error)
	// replaceTransformed is Replace for a list of prepared objects: it does
	// not transform them again.
	replaceTransformed(list []interface{}, resourceVersion string) error
	// preparesListed reports whether the queue's objects may be prepared
	// one by one as a list arrives. It is false where client-go's Replace
	// can fail partway and leave part of the list queued (DeltaFIFO, and
	// RealFIFO without AtomicEvents or dedup): the Reflector then
	// hands such a queue the list as listed, and its Replace does exactly
	// what client-go's does, failures included.
	preparesListed() bool
	// streamTransformer is the transform a streaming list applies to each
	// object as it arrives, before prepareListed transforms the result
	// again: the transform the queue's owner gave, or nil.
	streamTransformer() TransformFunc
	// preparesInPage reports whether prepareListed keeps no reference to
	// the object it is given other than by returning it (no transform of
	// the queue's owner sees it, and value sharing copies what it keeps).
	// A paginated list then prepares each item where it lies in its page,
	// and copies out only the items prepareListed returns as they are.
	preparesInPage() bool
}
