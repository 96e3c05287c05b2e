package cache

import (
	"fmt"
	"iter"
	"sync"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// DeltaFIFOOptions configures NewDeltaFIFOWithOptions. Every field is
// optional.
type DeltaFIFOOptions struct {
	// Logger receives the queue's log output, under the queue's name.
	// Default: klog.Background().
	Logger *klog.Logger

	// Name names the queue in logs and in HasSyncedChecker. Default:
	// "DeltaFIFO".
	Name string

	// KeyFunction computes the key of an object. Default:
	// MetaNamespaceKeyFunc. KeyOf adds the handling of Deltas and
	// DeletedFinalStateUnknown around it.
	KeyFunction KeyFunc

	// KnownObjects is the store the queue's consumer keeps up to date,
	// usually an informer's indexer. With it, Replace reports known keys
	// missing from the list as deleted, Resync requeues known objects, and
	// Delete of a key that is known but not queued is kept. Without it,
	// deletions missed while the watch was down are only detected for keys
	// that are still queued.
	KnownObjects KeyListerGetter

	// EmitDeltaTypeReplaced makes Replace queue Replaced changes; when false,
	// Replace queues Sync changes, as resyncs do, and the consumer cannot tell
	// a relist from a resync.
	EmitDeltaTypeReplaced bool

	// Transformer, if set, is applied once to every object entering the
	// queue through Add, Update, Delete and Replace, before it is queued.
	// Tombstones and the objects Resync takes from KnownObjects are not
	// transformed again.
	Transformer TransformFunc
}

// DeltaFIFO is a queue of keys where each key carries the list of changes
// (Deltas, oldest first) made to its object since the key was last popped.
// A key is queued once, when its first pending change arrives, and Pop hands
// out the key's whole Deltas. Two deletions in a row are folded into one,
// keeping the one that knows the object's final state.
//
// A Reflector produces into a DeltaFIFO and a single consumer calls Pop,
// typically to apply the changes to KnownObjects and notify handlers. With
// KnownObjects the queue also knows the objects the consumer holds:
//   - Delete of an object that is not queued is ignored (a relist already
//     reported it), unless KnownObjects holds it;
//   - Replace reports every key missing from the new list that is queued
//     or held by KnownObjects as Deleted, with a DeletedFinalStateUnknown
//     carrying the last state the queue or the store has;
//   - Resync queues a Sync change for every object of KnownObjects without
//     pending changes; without KnownObjects it does nothing;
//   - with KCACHE_QUIET_RELIST set to a true value (off by default, as in
//     client-go), Replace queues nothing for a listed object whose
//     resource version, not empty, is the one of its newest pending
//     change or, with none pending, of the object KnownObjects holds: the
//     consumer has that version already, so its handlers hear nothing of
//     it (quiet relists, see SetQuietRelist).
//
// Lock order: the queue's lock, then KnownObjects' lock, never the reverse.
// The queue reads KnownObjects with its own lock held, and Pop runs the
// process function, which normally writes KnownObjects, with it held too; so
// KnownObjects must never call into the queue.
//
// A DeltaFIFO must be made by NewDeltaFIFO or NewDeltaFIFOWithOptions. It is
// safe for concurrent use. Objects handed out by Pop are shared with the
// producer and must be treated as read-only.
type DeltaFIFO struct {
	// mu guards book and the embedded queueLifecycle's closed flag and
	// initial sync; the lifecycle's cond, on mu, wakes Pop when a key is
	// queued or the queue is closed. Lock order: mu, then KnownObjects.
	mu sync.Mutex
	queueLifecycle
	book deltaBook

	// The fields below are set by the constructor and never change.
	logger                klog.Logger
	keyFunc               KeyFunc
	knownObjects          KeyListerGetter
	emitDeltaTypeReplaced bool
	transformer           TransformFunc
	// quietRelists, with knownObjects, leaves out of a Replace the listed
	// objects the consumer already holds at the same resource version
	// (KCACHE_QUIET_RELIST, relist_quiet.go).
	quietRelists bool
	// clock times the process function, to report slow processing when a
	// backlog waits behind it.
	clock clock.PassiveClock
}

var (
	_ Queue             = (*DeltaFIFO)(nil)
	_ TransformingStore = (*DeltaFIFO)(nil)
	_ DoneChecker       = (*DeltaFIFO)(nil)
	_ listPreparer      = (*DeltaFIFO)(nil)
)

// NewDeltaFIFO returns a DeltaFIFO keyed by keyFunc that consults
// knownObjects (which may be nil). Its Replace queues Sync changes, which
// consumers cannot tell from resyncs.
//
// Deprecated: use NewDeltaFIFOWithOptions with EmitDeltaTypeReplaced set.
func NewDeltaFIFO(keyFunc KeyFunc, knownObjects KeyListerGetter) *DeltaFIFO {
	return NewDeltaFIFOWithOptions(DeltaFIFOOptions{KeyFunction: keyFunc, KnownObjects: knownObjects})
}

// NewDeltaFIFOWithOptions returns an empty DeltaFIFO configured by opts.
func NewDeltaFIFOWithOptions(opts DeltaFIFOOptions) *DeltaFIFO {
	f := &DeltaFIFO{
		book:                  newDeltaBook(),
		logger:                klog.Background(),
		keyFunc:               opts.KeyFunction,
		knownObjects:          opts.KnownObjects,
		emitDeltaTypeReplaced: opts.EmitDeltaTypeReplaced,
		transformer:           opts.Transformer,
		clock:                 clock.RealClock{},
		quietRelists:          opts.KnownObjects != nil && quietRelistEnabled(),
	}
	if f.keyFunc == nil {
		f.keyFunc = MetaNamespaceKeyFunc
	}
	name := "DeltaFIFO"
	if opts.Name != "" {
		name = opts.Name
	}
	f.setUp(&f.mu, name)
	if opts.Logger != nil {
		f.logger = *opts.Logger
	}
	f.logger = klog.LoggerWithName(f.logger, name)
	return f
}

// KeyOf returns the key of obj: for a Deltas, the key of its newest object
// (an empty Deltas is a KeyError wrapping ErrZeroLengthDeltasObject); for a
// DeletedFinalStateUnknown, its recorded Key; otherwise the key function's
// result.
func (f *DeltaFIFO) KeyOf(obj interface{}) (string, error) {
	inner, err := unwrapQueued(obj)
	if err != nil {
		return "", err
	}
	return tombstoneAwareKey(f.keyFunc, inner)
}

// Transformer returns the transform applied to objects entering the queue,
// or nil.
func (f *DeltaFIFO) Transformer() TransformFunc { return f.transformer }

// stage computes obj's key and transforms obj, see stageObject.
func (f *DeltaFIFO) stage(obj interface{}) (string, interface{}, error) {
	return stageObject(f.KeyOf, f.transformer, obj)
}

// recordLocked appends d to key's changes and wakes a Pop if key was newly
// queued. The caller holds f.mu.
func (f *DeltaFIFO) recordLocked(key string, d Delta) {
	if f.book.record(key, d) {
		f.cond.Signal()
	}
}

// Add queues an Added change for obj. A key or transform error leaves the
// queue unchanged, but still ends a not-yet-started initial sync, as any
// Add does.
func (f *DeltaFIFO) Add(obj interface{}) error {
	return f.change("add", Added, obj)
}

// Update queues an Updated change for obj, as Add does.
func (f *DeltaFIFO) Update(obj interface{}) error {
	return f.change("update", Updated, obj)
}

func (f *DeltaFIFO) change(op string, t DeltaType, obj interface{}) error {
	key, out, err := f.stage(obj)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sync.markPopulated()
	if err != nil {
		return err
	}
	f.recordLocked(key, Delta{Type: t, Object: out})
	return nil
}

// Delete queues a Deleted change for obj, unless its key is neither queued
// nor (with KnownObjects) known: that deletion was already reported, by a
// Replace for instance, and is ignored. obj may be a
// DeletedFinalStateUnknown. A failed lookup in KnownObjects keeps the
// deletion rather than risk losing it.
func (f *DeltaFIFO) Delete(obj interface{}) error {
	key, err := f.KeyOf(obj)
	if err != nil {
		return KeyError{Obj: obj, Err: err}
	}
	out, transformErr := transformEntering(f.transformer, key, obj)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sync.markPopulated()
	if !f.knownLocked(key) {
		return nil
	}
	if transformErr != nil {
		return transformErr
	}
	f.recordLocked(key, Delta{Type: Deleted, Object: out})
	return nil
}

// knownLocked reports whether key has pending changes or, with
// KnownObjects, is held there (or the lookup failed). The caller holds f.mu.
func (f *DeltaFIFO) knownLocked(key string) bool {
	if f.book.has(key) {
		return true
	}
	if f.knownObjects == nil {
		return false
	}
	_, exists, err := f.knownObjects.GetByKey(key)
	return exists || err != nil
}

// Replace queues a Replaced change (Sync unless EmitDeltaTypeReplaced) for
// every object of list, in list order, then a Deleted change carrying a
// DeletedFinalStateUnknown for every key that is missing from list but is
// queued (in queue order) or, with KnownObjects, known (in the store's
// order). The tombstone carries the newest queued object of the key, else
// the known object, else nil. The resource version is ignored.
//
// As in client-go, an object whose key or transform fails ends Replace
// with an error: the objects before it stay queued, no deletion is
// inferred and the initial sync does not start. The first Replace that
// succeeds before any Add, Update or Delete fixes the items the initial
// sync waits for: everything queued when it returns.
func (f *DeltaFIFO) Replace(list []interface{}, _ string) error {
	return f.replace(list, f.transformer)
}

// replaceTransformed is Replace for a list that prepareListed already
// transformed: it does not transform the objects again.
func (f *DeltaFIFO) replaceTransformed(list []interface{}, _ string) error {
	return f.replace(list, nil)
}

// prepareListed stages obj (key and transform) as Replace would and, with
// KnownObjects, returns the known object instead when it is the same
// version of obj (see reuseCached). The Reflector calls it for each listed
// object as it arrives, then replaceTransformed with the prepared list.
func (f *DeltaFIFO) prepareListed(obj interface{}) (interface{}, error) {
	key, out, err := f.stage(obj)
	if err != nil {
		return nil, err
	}
	return reuseCached(f.knownObjects, key, out), nil
}

// streamTransformer is the queue's transformer: a streaming list applies it
// to each object as it arrives, then prepareListed applies it again.
func (f *DeltaFIFO) streamTransformer() TransformFunc { return f.transformer }

// preparesListed is false: a DeltaFIFO's Replace keys and transforms each
// object itself, and its failures leave the objects before them queued.
func (f *DeltaFIFO) preparesListed() bool { return false }

// preparesInPage is false: a DeltaFIFO prepares no listed object.
func (f *DeltaFIFO) preparesInPage() bool { return false }

// replace is Replace with the transform to apply (nil for none).
//
// As in client-go, the objects are keyed and transformed one by one, and
// the first failure ends the replacement: the objects before it stay
// queued, nothing is inferred deleted and the initial sync does not start.
// A key failure is returned as the KeyError; a transform failure as
// client-go formats it, "couldn't enqueue object: ..." (not wrapped).
func (f *DeltaFIFO) replace(list []interface{}, transform TransformFunc) error {
	staged, keyFailed, err := stagePrefix(list, f.KeyOf, transform)
	action := Sync
	if f.emitDeltaTypeReplaced {
		action = Replaced
	}

	f.mu.Lock()
	defer f.mu.Unlock()
	// The deletions are inferred from the queue as it was before the list
	// is recorded: recording touches only listed keys, which the relist
	// rule leaves alone.
	var tombstones []DeletedFinalStateUnknown
	if err == nil {
		tombstones = relist(relistRun{items: staged, pending: f.pendingLocked(), known: f.knownObjects, logger: f.logger})
	}
	for _, s := range staged {
		if f.quietRelists && f.heldUnchangedLocked(s.key, s.obj) {
			continue
		}
		f.recordLocked(s.key, Delta{Type: action, Object: s.obj})
	}
	switch {
	case err != nil && keyFailed:
		return err
	case err != nil:
		return fmt.Errorf("couldn't enqueue object: %v", err)
	}
	for _, t := range tombstones {
		f.recordLocked(t.Key, Delta{Type: Deleted, Object: t})
	}
	f.sync.firstReplace(f.book.len())
	return nil
}

// heldUnchangedLocked reports whether listed is the version of key's
// object that the consumer holds or will hold once it has popped what is
// queued: the newest pending change of key if there is one (a deletion
// holds nothing), the known object otherwise (see sameListedVersion). A
// failed lookup counts as changed. The caller holds f.mu; the known objects
// are read after it, the permitted lock order.
func (f *DeltaFIFO) heldUnchangedLocked(key string, listed interface{}) bool {
	if newest := f.book.newest(key); newest != nil {
		return newest.Type != Deleted && sameListedVersion(newest.Object, listed)
	}
	held, exists, err := f.knownObjects.GetByKey(key)
	return err == nil && exists && sameListedVersion(held, listed)
}

// pendingLocked yields every queued key, oldest first, with what the
// relist rule needs of its newest change (see pendingState). A tombstone
// of the key carries that change's object, unwrapped if it is itself a
// tombstone. A key whose newest change is a deletion gets no second one:
// appendDelta would fold it into the first anyway. The caller holds f.mu
// while iterating.
func (f *DeltaFIFO) pendingLocked() iter.Seq2[string, pendingState] {
	return func(yield func(string, pendingState) bool) {
		for i, n := 0, f.book.len(); i < n; i++ {
			key := f.book.keyAt(i)
			newest := f.book.newest(key)
			if !yield(key, pendingState{obj: tombstoneState(newest), deleted: newest.Type == Deleted}) {
				return
			}
		}
	}
}

// Resync queues a Sync change for every object of KnownObjects whose key has
// no pending change: a pending change is newer than the known state. It does
// nothing without KnownObjects. Known objects are queued as they are, not
// transformed again. An object whose key cannot be computed stops the
// resync with a KeyError; the objects queued before it stay queued.
func (f *DeltaFIFO) Resync() error {
	if f.knownObjects == nil {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, knownKey := range f.knownObjects.ListKeys() {
		obj, ok := knownObjectForSync(f.logger, f.knownObjects, knownKey)
		if !ok {
			continue
		}
		key, err := f.KeyOf(obj)
		if err != nil {
			return KeyError{Obj: obj, Err: err}
		}
		if f.book.has(key) {
			continue
		}
		f.recordLocked(key, Delta{Type: Sync, Object: obj})
	}
	return nil
}

// Pop waits until a key is queued or the queue is closed, removes the
// oldest key and calls process with its Deltas, which it then returns with
// process's error. Once the queue is closed and empty, Pop returns
// ErrFIFOClosed.
//
// process runs with the queue's lock held. Consumers rely on this to keep
// KnownObjects in step with the queue: no Add, Replace or Resync can slip
// between popping a key and recording its changes in the store. The price is
// that process must not call this queue (it would deadlock) and that a slow
// process blocks producers; slow processing with a backlog is logged. A
// panic in process propagates to the caller, as in client-go; the popped
// changes are dropped and the queue stays consistent. isInInitialList is true
// while the initial sync is not over; the sync ends once process returned
// for the last item of the first Replace.
func (f *DeltaFIFO) Pop(process PopProcessFunc) (interface{}, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.waitLocked(f.book.len); err != nil {
		return nil, err
	}
	isInInitialList := !f.sync.synced()
	key, deltas := f.book.popOldest()
	f.sync.take(1)
	defer f.sync.settle()
	var item interface{} = deltas // boxed once for process and the result
	depth := f.book.len()
	var start time.Time
	if depth > slowDepth {
		start = f.clock.Now()
	}
	err := callProcess(func() error { return process(item, isInInitialList) })
	if depth > slowDepth {
		reportSlowProcessing(f.logger, key, 1, depth, f.clock.Since(start))
	}
	return item, err
}

// deltaBook is the lock-free core of DeltaFIFO: for every key, the changes
// not yet popped, and the order in which keys are handed out. DeltaFIFO
// locks and delegates to it.
//
// Invariants:
//   - every Deltas in pending is non-empty;
//   - a key is in pending if and only if it is in order, exactly once;
//   - no Deltas holds two Deleted in a row (see appendDelta).
type deltaBook struct {
	pending map[string]Deltas
	order   ring[string]
}

func newDeltaBook() deltaBook {
	return deltaBook{pending: map[string]Deltas{}}
}

// len returns the number of queued keys.
func (b *deltaBook) len() int { return b.order.len() }

// has reports whether key has pending changes.
func (b *deltaBook) has(key string) bool {
	_, ok := b.pending[key]
	return ok
}

// newest returns the newest pending change of key, or nil.
func (b *deltaBook) newest(key string) *Delta {
	return b.pending[key].Newest()
}

// record appends d to key's changes, queueing key at the back if it had
// none. It reports whether key was newly queued.
func (b *deltaBook) record(key string, d Delta) (queued bool) {
	old, had := b.pending[key]
	b.pending[key] = appendDelta(old, d)
	if !had {
		b.order.push(key)
	}
	return !had
}

// popOldest removes the key queued first and returns it with its changes,
// which the caller then owns. The caller ensures len() > 0.
func (b *deltaBook) popOldest() (string, Deltas) {
	key := b.order.popFront()
	ds := b.pending[key]
	delete(b.pending, key)
	return key, ds
}

// keyAt returns the i-th queued key, oldest first. The caller ensures
// 0 <= i < len().
func (b *deltaBook) keyAt(i int) string { return b.order.at(i) }

// appendDelta appends d to ds, except that a deletion following a deletion
// is folded into one (watch and relist can both report the same deletion):
// the older one is kept unless it is only a DeletedFinalStateUnknown and so
// knows less. ds may be modified in place.
func appendDelta(ds Deltas, d Delta) Deltas {
	n := len(ds)
	if n == 0 || d.Type != Deleted || ds[n-1].Type != Deleted {
		return append(ds, d)
	}
	if _, olderIsTombstone := ds[n-1].Object.(DeletedFinalStateUnknown); olderIsTombstone {
		ds[n-1] = d
	}
	return ds
}

// tombstoneState returns the object a DeletedFinalStateUnknown should carry
// for a key whose newest pending change is d: d's object, unwrapped if it is
// itself a tombstone.
func tombstoneState(d *Delta) interface{} {
	if d == nil {
		return nil
	}
	if t, ok := d.Object.(DeletedFinalStateUnknown); ok {
		return t.Obj
	}
	return d.Object
}

// unwrapQueued returns the object whose key stands for obj in a queue: the
// newest object of a Deltas, or obj itself. An empty Deltas has no key.
func unwrapQueued(obj interface{}) (interface{}, error) {
	ds, ok := obj.(Deltas)
	if !ok {
		return obj, nil
	}
	if len(ds) == 0 {
		return nil, KeyError{Obj: obj, Err: ErrZeroLengthDeltasObject}
	}
	return ds.Newest().Object, nil
}

// tombstoneAwareKey returns a tombstone's recorded key, or keyFunc's key of
// any other object. A panic in keyFunc is not recovered (callKeyFunc).
func tombstoneAwareKey(keyFunc KeyFunc, obj interface{}) (string, error) {
	if t, ok := obj.(DeletedFinalStateUnknown); ok {
		return t.Key, nil
	}
	return callKeyFunc(keyFunc, obj)
}
