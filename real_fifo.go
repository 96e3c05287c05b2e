package cache

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// RealFIFOOptions configures NewRealFIFOWithOptions. The combinations are
// checked: AtomicEvents requires KnownObjects to be nil; without
// AtomicEvents, KnownObjects is required and UnlockWhileProcessing and
// EmitDeltaTypeBookmark must be false. A wrong combination is a programming
// error and makes the constructor panic.
type RealFIFOOptions struct {
	// Logger receives the queue's log output, under the queue's name.
	// Default: klog.Background().
	Logger *klog.Logger

	// Name names the queue in logs and in HasSyncedChecker when Identifier
	// has no name. Default: "RealFIFO".
	Name string

	// KeyFunction computes the key of an object. Default:
	// MetaNamespaceKeyFunc. Deltas, Delta and DeletedFinalStateUnknown are
	// unwrapped around it.
	KeyFunction KeyFunc

	// KnownObjects is the store the queue's consumer keeps up to date. It is
	// required without AtomicEvents: Replace reports known keys missing from
	// the list as deleted, and Resync requeues known objects. It must be nil
	// with AtomicEvents, where the consumer does that work.
	KnownObjects KeyListerGetter

	// Transformer, if set, is applied once to every object entering the
	// queue through Add, Update, Delete and Replace, before it is queued.
	// Tombstones are not transformed (except inside an atomic Replace's list,
	// which is transformed whole), nor are the objects Resync takes from
	// KnownObjects.
	Transformer TransformFunc

	// AtomicEvents makes Replace queue a single ReplacedAll change carrying
	// the whole list (a ReplacedAllInfo), and Resync a single SyncAll
	// change, instead of one change per object.
	AtomicEvents bool

	// UnlockWhileProcessing makes Pop and PopBatch release the queue's lock
	// while the process function runs, so producers are not held up by it;
	// see RealFIFO. Requires AtomicEvents.
	UnlockWhileProcessing bool

	// Identifier names the queue for metrics; its name, if any, also
	// replaces Name. Metrics are published only when it is Reserved.
	Identifier InformerNameAndResource

	// MetricsProvider creates the queue's metrics (queued items, processing
	// latency). Default: the provider set by SetInformerMetricsProvider.
	MetricsProvider InformerMetricsProvider

	// EmitDeltaTypeBookmark makes Bookmark queue a Bookmark change; otherwise
	// Bookmark does nothing. Requires AtomicEvents, so that bookmarks cannot
	// overtake the objects of a Replace or Resync.
	EmitDeltaTypeBookmark bool
}

// realFIFOBatchSize is the most changes PopBatch hands out at once. It also
// sets the backlog (two batches) above which UnlockWhileProcessing keeps
// the lock while processing.
const realFIFOBatchSize = 1000

// RealFIFO is a queue that hands out every change it receives, one entry
// per change, in arrival order: unlike DeltaFIFO, changes to one object are
// not merged, and deleted objects are still delivered. Pop hands out one
// change (as a one-element Deltas); PopBatch hands out runs of changes to
// distinct objects.
//
// Without AtomicEvents, KnownObjects is the consumer's store: Replace first
// reports, as a Deleted change with a DeletedFinalStateUnknown, every queued
// or known key missing from the new list, then queues a Replaced change per
// listed object; Resync queues a Sync change per known object with no queued
// change. With AtomicEvents, Replace and Resync each queue a single change
// (ReplacedAll with a ReplacedAllInfo, SyncAll with a SyncAllInfo) and the
// consumer compares with its store itself.
//
// With UnlockWhileProcessing the process function runs without the queue's
// lock, so producers keep queueing while the consumer works; there must be a
// single consumer. As backpressure, the lock is kept while processing once
// two full batches are waiting: producers then block until the consumer
// catches up, instead of growing the queue without bound.
//
// Lock order: the queue's lock, then KnownObjects' lock, never the reverse.
// Without UnlockWhileProcessing, Pop and PopBatch run the process function
// with the queue's lock held, so it must not call the queue.
//
// A RealFIFO must be made by NewRealFIFO or NewRealFIFOWithOptions. It is
// safe for concurrent use. Objects handed out are shared with the producer
// and must be treated as read-only.
type RealFIFO struct {
	// mu guards queue and the embedded queueLifecycle's closed flag and
	// initial sync; the lifecycle's cond, on mu, wakes Pop and PopBatch when
	// a change is queued or the queue is closed. Lock order: mu, then
	// KnownObjects. mu may be released while processing, see processLocked.
	mu sync.Mutex
	queueLifecycle
	queue ring[queuedDelta]

	// The fields below are set by the constructor and never change, except
	// batchSize and clock, which tests set before use.
	logger                klog.Logger
	keyFunc               KeyFunc
	knownObjects          KeyListerGetter
	transformer           TransformFunc
	atomicEvents          bool
	unlockWhileProcessing bool
	emitDeltaTypeBookmark bool
	batchSize             int
	metrics               queueMetrics
	// clock times the process function for the latency metric and to report
	// slow processing. Reading it costs, so it is read only when
	// timeProcessing (the latency metric is published) or when a backlog
	// waits behind the processed item.
	clock          clock.PassiveClock
	timeProcessing bool
	// consumerCache holds the objects the consumer has processed, for
	// prepareListed to reuse: KnownObjects, or, with AtomicEvents, the
	// store an informer gives the queue right after building it (see
	// newInformerQueue); nil when unknown.
	consumerCache KeyGetter
	// ownerTransform is the transform an informer gave, before the value
	// sharing it adds (see newInformerQueue); dedup says it is set,
	// transformer being then ownerTransform followed by the sharing.
	ownerTransform TransformFunc
	dedup          bool
	// sharing is the informer's value sharing (dedup_switch.go), whose
	// guard re-checks the shared values of the informer's cache and whose
	// compactor shares the parts of its updated objects once they are
	// quiet; nil without value sharing.
	sharing *valueSharing
}

var (
	_ QueueWithBatch         = (*RealFIFO)(nil)
	_ TransformingStore      = (*RealFIFO)(nil)
	_ ReflectorBookmarkStore = (*RealFIFO)(nil)
	_ DoneChecker            = (*RealFIFO)(nil)
	_ listPreparer           = (*RealFIFO)(nil)
)

// NewRealFIFO returns a RealFIFO keyed by keyFunc, with the required
// knownObjects and an optional transformer, without AtomicEvents. It panics
// if knownObjects is nil.
//
// Deprecated: use NewRealFIFOWithOptions.
func NewRealFIFO(keyFunc KeyFunc, knownObjects KeyListerGetter, transformer TransformFunc) *RealFIFO {
	return NewRealFIFOWithOptions(RealFIFOOptions{KeyFunction: keyFunc, KnownObjects: knownObjects, Transformer: transformer})
}

// NewRealFIFOWithOptions returns an empty RealFIFO configured by opts. It
// panics on a combination of options RealFIFOOptions rules out.
func NewRealFIFOWithOptions(opts RealFIFOOptions) *RealFIFO {
	if err := opts.validate(); err != nil {
		panic(fmt.Sprintf("NewRealFIFOWithOptions: %v", err))
	}
	f := &RealFIFO{
		logger:                klog.Background(),
		keyFunc:               opts.KeyFunction,
		knownObjects:          opts.KnownObjects,
		transformer:           opts.Transformer,
		atomicEvents:          opts.AtomicEvents,
		unlockWhileProcessing: opts.UnlockWhileProcessing,
		emitDeltaTypeBookmark: opts.EmitDeltaTypeBookmark,
		batchSize:             realFIFOBatchSize,
		metrics:               newQueueMetrics(opts.Identifier, opts.MetricsProvider),
		clock:                 clock.RealClock{},
	}
	if opts.KnownObjects != nil {
		f.consumerCache = opts.KnownObjects
	}
	if f.keyFunc == nil {
		f.keyFunc = MetaNamespaceKeyFunc
	}
	_, noLatencyMetric := f.metrics.processingLatency.(noopMetric)
	f.timeProcessing = !noLatencyMetric
	name := "RealFIFO"
	if id := opts.Identifier.Name(); id != "" {
		name = id
	} else if opts.Name != "" {
		name = opts.Name
	}
	f.setUp(&f.mu, name)
	if opts.Logger != nil {
		f.logger = *opts.Logger
	}
	f.logger = klog.LoggerWithName(f.logger, name)
	return f
}

// validate checks the combination of options.
func (o RealFIFOOptions) validate() error {
	if o.AtomicEvents {
		if o.KnownObjects != nil {
			return errors.New("KnownObjects must be nil with AtomicEvents")
		}
		return nil
	}
	switch {
	case o.KnownObjects == nil:
		return errors.New("KnownObjects is required without AtomicEvents")
	case o.UnlockWhileProcessing:
		return errors.New("UnlockWhileProcessing requires AtomicEvents")
	case o.EmitDeltaTypeBookmark:
		return errors.New("EmitDeltaTypeBookmark requires AtomicEvents")
	}
	return nil
}

// keyOf returns the key of obj, unwrapping a Deltas (its newest change), a
// Delta and a DeletedFinalStateUnknown (its recorded key).
func (f *RealFIFO) keyOf(obj interface{}) (string, error) {
	inner, err := unwrapQueued(obj)
	if err != nil {
		return "", err
	}
	if d, ok := inner.(Delta); ok {
		inner = d.Object
	}
	return tombstoneAwareKey(f.keyFunc, inner)
}

// Transformer returns the transform applied to objects entering the queue,
// or nil.
func (f *RealFIFO) Transformer() TransformFunc { return f.transformer }

// stage computes obj's key and transforms obj, see stageObject.
func (f *RealFIFO) stage(obj interface{}) (string, interface{}, error) {
	return stageObject(f.keyOf, f.transformer, obj)
}

// queuedLocked publishes the queue's new length and wakes the consumers
// after changes were queued. The caller holds f.mu.
func (f *RealFIFO) queuedLocked() {
	f.metrics.queuedItems.Set(float64(f.queue.len()))
	f.cond.Broadcast()
}

// Add queues an Added change for obj. A key or transform error leaves the
// queue unchanged, but still ends a not-yet-started initial sync, as any
// Add does.
func (f *RealFIFO) Add(obj interface{}) error {
	return f.change("add", Added, obj)
}

// Update queues an Updated change for obj, as Add does.
func (f *RealFIFO) Update(obj interface{}) error {
	return f.change("update", Updated, obj)
}

// Delete queues a Deleted change for obj, as Add does. Unlike DeltaFIFO,
// a RealFIFO does not check that the object is known.
func (f *RealFIFO) Delete(obj interface{}) error {
	return f.change("delete", Deleted, obj)
}

func (f *RealFIFO) change(op string, t DeltaType, obj interface{}) error {
	key, out, err := f.stage(obj)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sync.markPopulated()
	if err != nil {
		return err
	}
	f.queue.push(queuedDelta{key: key, Delta: Delta{Type: t, Object: out}})
	f.queuedLocked()
	return nil
}

// Bookmark queues a Bookmark change carrying resourceVersion in a
// BookmarkInfo, if EmitDeltaTypeBookmark is set; otherwise it does nothing.
// It does not affect the initial sync.
func (f *RealFIFO) Bookmark(resourceVersion string) error {
	if !f.emitDeltaTypeBookmark {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queue.push(queuedDelta{Delta: Delta{Type: Bookmark, Object: BookmarkInfo{ResourceVersion: resourceVersion}}})
	f.queuedLocked()
	return nil
}

// Replace records a new full list, observed at resourceVersion.
//
// With AtomicEvents it queues one ReplacedAll change whose ReplacedAllInfo
// holds resourceVersion and the transformed list; the queue keeps newItems
// itself when there is no transformer, so the caller must not modify it.
// Keys are not computed: the consumer does that.
//
// Otherwise it queues a Deleted change with a DeletedFinalStateUnknown for
// every key missing from newItems: first the queued keys, in order, whose
// newest change is not already a deletion (the tombstone carries that
// change's object), then the known keys that are not queued (carrying the
// known object); then a Replaced change for every object of newItems, in
// order.
//
// A failure goes as in client-go: with AtomicEvents, a failing transform
// queues nothing; otherwise a key failure queues nothing, and a failing
// transform leaves the deletions and the objects before it queued (see
// replace). The first Replace that succeeds before any Add, Update or
// Delete fixes the items the initial sync waits for: everything queued when
// it returns.
func (f *RealFIFO) Replace(newItems []interface{}, resourceVersion string) error {
	return f.replace(newItems, resourceVersion, f.transformer)
}

// replaceTransformed is Replace for a list that prepareListed already
// transformed: it does not transform the objects again.
func (f *RealFIFO) replaceTransformed(list []interface{}, resourceVersion string) error {
	return f.replace(list, resourceVersion, nil)
}

// prepareListed does to obj what Replace would, and returns the consumer's
// cached object instead when it is the same version of obj (see
// reuseCached). The Reflector calls it for each listed object as it
// arrives, then replaceTransformed with the prepared list.
//
// Without AtomicEvents that is staging (key, then transform), and a
// failure of either is Replace's error. With AtomicEvents Replace only
// transforms, leaving keys to the consumer: an object without a key is
// prepared as it is, not reused, and refused by the consumer.
func (f *RealFIFO) prepareListed(obj interface{}) (interface{}, error) {
	if !f.atomicEvents {
		key, out, err := f.stage(obj)
		if err != nil {
			return nil, err
		}
		if f.sharing.suspect(key) {
			return out, nil
		}
		return reuseCached(f.consumerCache, key, out), nil
	}
	out := obj
	if f.transformer != nil {
		var err error
		if out, err = callTransform(f.transformer, obj); err != nil {
			return nil, err
		}
	}
	// Reuse is this package's own step, not client-go's: it must not make
	// a key function panic on a nil pointer that client-go would only meet
	// (and panic on) when the consumer applies the list.
	if f.consumerCache == nil || isNilPointer(out) {
		return out, nil
	}
	key, err := f.keyOf(out)
	if err != nil || f.sharing.suspect(key) {
		return out, nil
	}
	return reuseCached(f.consumerCache, key, out), nil
}

// dedupGuardRunner is a queue whose dedup has a guard to run
// beside its Reflector (the controller runs it).
type dedupGuardRunner interface {
	runDedupGuard(ctx context.Context)
}

// runDedupGuard runs the guard of the queue's shared values and the
// compactor of its updates until ctx ends; without dedup it
// returns at once.
func (f *RealFIFO) runDedupGuard(ctx context.Context) { f.sharing.run(ctx) }

// relistRequester is a Reflector's store that may ask it to list again.
type relistRequester interface {
	relistRequests() <-chan struct{}
}

// relistRequests delivers the guard's requests for a relist (nil without
// dedup: no request ever comes).
func (f *RealFIFO) relistRequests() <-chan struct{} { return f.sharing.relists() }

// preparesListed is true with AtomicEvents, whose Replace queues the whole
// list or nothing, and with dedup (on by default: the cached copy
// must not reach the owner's transform); otherwise Replace gets the list as
// listed, to fail partway as client-go's does.
func (f *RealFIFO) preparesListed() bool { return f.atomicEvents || f.dedup }

// preparesInPage is true with dedup and no transform of the owner's: then
// prepareListed keys the object, shares its parts (copying the object
// when any part is replaced, and never keeping it) or takes the cached
// copy, and nothing else sees the object.
func (f *RealFIFO) preparesInPage() bool { return f.dedup && f.ownerTransform == nil }

// streamTransformer is the transform a streaming list applies to each
// object as it arrives, before prepareListed transforms it again: the
// queue's transformer, without an informer's dedup. Sharing is for
// the cached copy only: it would hand the owner's second call an object
// whose parts are those of cached objects.
func (f *RealFIFO) streamTransformer() TransformFunc {
	if f.dedup {
		return f.ownerTransform
	}
	return f.transformer
}

// replace is Replace with the transform to apply (nil for none).
//
// Without AtomicEvents it goes as client-go's: every key first (a failure
// queues nothing and is the KeyError), then the deletions the list
// implies, then each object transformed and queued in order. A transform
// failure ends it there, the deletions and the objects before it queued,
// and is returned as "couldn't enqueue object: %w"; the initial sync only
// starts with a Replace that succeeded.
func (f *RealFIFO) replace(newItems []interface{}, resourceVersion string, transform TransformFunc) error {
	if f.atomicEvents {
		return f.replaceAtomic(newItems, resourceVersion, transform)
	}
	items, err := keyAll(newItems, f.keyOf)
	if err != nil {
		return err
	}
	queued, transformErr := transformUntilFailure(transform, items)

	f.mu.Lock()
	defer f.mu.Unlock()
	tombstones := relist(relistRun{items: items, pending: f.pendingLocked(), known: f.knownObjects, logger: f.logger})
	for _, t := range tombstones {
		f.queue.push(queuedDelta{key: t.Key, Delta: Delta{Type: Deleted, Object: t}})
	}
	for _, it := range items[:queued] {
		f.queue.push(queuedDelta{key: it.key, Delta: Delta{Type: Replaced, Object: it.obj}})
	}
	if transformErr != nil {
		f.queuedLocked()
		return fmt.Errorf("couldn't enqueue object: %w", transformErr)
	}
	f.sync.firstReplace(f.queue.len())
	f.queuedLocked()
	return nil
}

// transformUntilFailure transforms the objects of items in place, in order
// (see transformEntering), until one fails; it returns how many were
// transformed and the failure.
func transformUntilFailure(transform TransformFunc, items []keyedObject) (int, error) {
	for i, it := range items {
		out, err := transformEntering(transform, it.key, it.obj)
		if err != nil {
			return i, err
		}
		items[i].obj = out
	}
	return len(items), nil
}

// replaceAtomic is Replace with AtomicEvents.
func (f *RealFIFO) replaceAtomic(list []interface{}, resourceVersion string, transform TransformFunc) error {
	objs := list
	if transform != nil {
		objs = make([]interface{}, len(list))
		for i, obj := range list {
			out, err := callTransform(transform, obj)
			if err != nil {
				return err
			}
			objs[i] = out
		}
	}
	info := ReplacedAllInfo{ResourceVersion: resourceVersion, Objects: objs}

	f.mu.Lock()
	defer f.mu.Unlock()
	f.queue.push(queuedDelta{Delta: Delta{Type: ReplacedAll, Object: info}})
	f.sync.firstReplace(f.queue.len())
	f.queuedLocked()
	return nil
}

// pendingLocked yields the key of every queued change with what the
// relist rule needs of it (see pendingState), oldest first: a tombstone of
// the key carries the change's object as it is. The caller holds f.mu
// while iterating.
func (f *RealFIFO) pendingLocked() iter.Seq2[string, pendingState] {
	return func(yield func(string, pendingState) bool) {
		for i := 0; i < f.queue.len(); i++ {
			e := f.queue.at(i)
			if !yield(e.key, pendingState{obj: e.Object, deleted: e.Type == Deleted}) {
				return
			}
		}
	}
}

// Resync asks for the known objects to be processed again. With
// AtomicEvents it queues one SyncAll change. Otherwise it queues a Sync
// change for every object of KnownObjects whose key has no queued change (a
// queued change is newer than the known state); known objects are queued
// as they are, not transformed again. An object whose key cannot be
// computed stops the resync with a KeyError; the changes queued before it
// stay queued.
func (f *RealFIFO) Resync() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.atomicEvents {
		f.queue.push(queuedDelta{Delta: Delta{Type: SyncAll, Object: SyncAllInfo{}}})
		f.queuedLocked()
		return nil
	}
	defer f.queuedLocked()
	queued := make(map[string]struct{}, f.queue.len())
	for key := range f.pendingLocked() {
		queued[key] = struct{}{}
	}
	for _, knownKey := range f.knownObjects.ListKeys() {
		if _, ok := queued[knownKey]; ok {
			continue
		}
		obj, ok := knownObjectForSync(f.logger, f.knownObjects, knownKey)
		if !ok {
			continue
		}
		key, err := f.keyOf(obj)
		if err != nil {
			return resyncQueueError(KeyError{Obj: obj, Err: err})
		}
		f.queue.push(queuedDelta{key: key, Delta: Delta{Type: Sync, Object: obj}})
	}
	return nil
}

// resyncQueueErrorV037 is the whole text of client-go v0.37.2's error for a
// known object that Resync cannot key: its format wraps an error variable
// that is always nil there, which fmt renders as below, and the error wraps
// nothing.
const resyncQueueErrorV037 = "couldn't queue object: %!w(<nil>)"

// resyncQueueError is the error Resync returns when the queue's key
// function refuses a known object (keyErr): the release's (see
// releaseBehaviour.resyncQueueErrorWrapsKeyError).
func resyncQueueError(keyErr KeyError) error {
	if releaseBehaviour.resyncQueueErrorWrapsKeyError {
		return fmt.Errorf("couldn't queue object: %w", keyErr)
	}
	return errors.New(resyncQueueErrorV037)
}

// Pop waits until a change is queued or the queue is closed, removes the
// oldest change and calls process with it as a one-element Deltas, which it
// then returns with process's error. Once the queue is closed and empty,
// Pop returns ErrFIFOClosed.
//
// process runs with the queue's lock held, unless UnlockWhileProcessing is
// set and fewer than two batches are waiting (see RealFIFO). A panic in
// process propagates, as in client-go, with the lock released and the
// change dropped. isInInitialList is true while the initial sync
// is not over; it ends once process returned for the last item of the
// first Replace. There must be a single consumer.
func (f *RealFIFO) Pop(process PopProcessFunc) (interface{}, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.waitLocked(f.queue.len); err != nil {
		return nil, err
	}
	isInInitialList := !f.sync.synced()
	e := f.queue.popFront()
	claimed := f.sync.claim(1)
	defer f.sync.release(claimed)
	f.metrics.queuedItems.Set(float64(f.queue.len()))
	var item interface{} = Deltas{e.Delta} // boxed once for process and the result
	err := f.processLocked(e.key, 1, func() error { return process(item, isInInitialList) })
	return item, err
}

// PopBatch waits until a change is queued or the queue is closed, removes
// the longest run of changes at the front that can be processed together,
// and hands it to processBatch, or to processSingle (as a one-element
// Deltas) when the run has one change. Both functions must process
// changes the same way. Once the queue is closed and empty it returns
// ErrFIFOClosed; otherwise it returns the process function's error.
//
// A run holds at most 1000 changes, all of Added, Updated, Deleted,
// Replaced or Sync type and each about a different object; a change of
// another type is handed out alone. While the initial sync is not over, a
// run never mixes the first Replace's items with later ones, so
// isInInitialList is right for the whole run. Locking and panics are as for
// Pop.
func (f *RealFIFO) PopBatch(processBatch ProcessBatchFunc, processSingle PopProcessFunc) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.waitLocked(f.queue.len); err != nil {
		return err
	}
	isInInitialList := !f.sync.synced()
	limit := f.batchSize
	if owed := f.sync.owed; owed > 0 {
		limit = min(limit, owed)
	}
	n := batchLen(&f.queue, limit)
	key := f.queue.at(0).key
	batch := make(Deltas, n)
	for i := range batch {
		batch[i] = f.queue.popFront().Delta
	}
	claimed := f.sync.claim(n)
	defer f.sync.release(claimed)
	f.metrics.queuedItems.Set(float64(f.queue.len()))
	var err error
	if n == 1 {
		err = f.processLocked(key, 1, func() error { return processSingle(batch, isInInitialList) })
	} else {
		err = f.processLocked(key, n, func() error { return processBatch(batch, isInInitialList) })
	}
	return err
}

// processLocked calls call, which runs the user's process function on n
// changes (the first with key) and records the latency.
// The caller holds f.mu and holds it again when processLocked returns. With
// UnlockWhileProcessing, f.mu is released during call unless two full
// batches are waiting (backpressure, see RealFIFO).
func (f *RealFIFO) processLocked(key string, n int, call func() error) error {
	depth := f.queue.len()
	if f.unlockWhileProcessing && depth < 2*f.batchSize {
		f.mu.Unlock()
		defer f.mu.Lock()
	}
	if !f.timeProcessing && depth <= slowDepth {
		return callProcess(call)
	}
	start := f.clock.Now()
	err := callProcess(call)
	took := f.clock.Since(start)
	f.metrics.processingLatency.Observe(took.Seconds())
	reportSlowProcessing(f.logger, key, n, depth, took)
	return err
}

// ReplacedAllInfo is the Object of a ReplacedAll change: a whole new list.
type ReplacedAllInfo struct {
	// ResourceVersion is the resource version the list was observed at.
	ResourceVersion string
	// Objects is the list, already transformed. Read-only.
	Objects []interface{}
}

// SyncAllInfo is the Object of a SyncAll change: every known object should
// be processed again.
type SyncAllInfo struct{}

// BookmarkInfo is the Object of a Bookmark change: the watch reached a
// resource version without any object changing.
type BookmarkInfo struct {
	// ResourceVersion is the resource version reached.
	ResourceVersion string
}

// queuedDelta is one RealFIFO entry: a change and the key of its object,
// computed once when the change is queued (from the object as given, before
// any transform). Changes about the whole queue (ReplacedAll, SyncAll,
// Bookmark) have no object key: key is "" and is never read for them.
type queuedDelta struct {
	key string
	Delta
}

// batchable reports whether a change of type t may share a batch: only
// changes about a single object may.
func batchable(t DeltaType) bool {
	switch t {
	case Added, Updated, Deleted, Replaced, Sync:
		return true
	}
	return false
}

// batchLen returns how many changes at the front of q PopBatch hands out
// together. A change that is not batchable goes alone when it is first and
// ends the batch otherwise; so does, when not first, a change whose key is
// already in the batch (a batch never holds two changes of one object, so
// their order cannot be lost); and a batch holds at most limit changes. The
// caller ensures q is not empty and limit >= 1.
func batchLen(q *ring[queuedDelta], limit int) int {
	n := min(limit, q.len())
	if n == 1 || !batchable(q.at(0).Type) {
		return 1
	}
	seen := make(map[string]struct{}, n)
	for i := 0; i < n; i++ {
		e := q.at(i)
		if !batchable(e.Type) {
			return i
		}
		if _, dup := seen[e.key]; dup {
			return i
		}
		seen[e.key] = struct{}{}
	}
	return n
}
