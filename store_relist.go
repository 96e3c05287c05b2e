package cache

import (
	"iter"
	"reflect"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/klog/v2"
)

// This file is the relist rule, the one place that says what a Replace
// does with a full list: which listed objects are added, updated or kept
// as they are, and which keys missing from the list are reported deleted
// with a DeletedFinalStateUnknown. The thread-safe store, the controller
// (AtomicFIFO's ReplacedAll), RealFIFO and DeltaFIFO all apply it through
// relist; each keeps only what differs between them by contract (when
// keys and transforms run, how a failure partway is handled). Queues that
// know the cached objects first swap each listed object for the cached one
// when both are the same version (reuseCached), which makes it unchanged.

// keyedObject is one object of a replacement with its key.
type keyedObject struct {
	key string
	obj interface{}
}

// keyAll keys every object of list with keyOf, in order. As client-go's
// replacements do, one object without a key refuses the whole list: the
// first failure is returned as a KeyError and no item.
func keyAll(list []interface{}, keyOf func(interface{}) (string, error)) ([]keyedObject, error) {
	items := make([]keyedObject, len(list))
	err := keyEach(list, keyOf, func(i int, key string) { items[i] = keyedObject{key: key, obj: list[i]} })
	if err != nil {
		return nil, err
	}
	return items, nil
}

// keyEach is keyAll for a caller that keeps no items: it hands each key to
// each (which may be nil) and stops at the first failure, a KeyError.
func keyEach(list []interface{}, keyOf func(interface{}) (string, error), each func(i int, key string)) error {
	for i, obj := range list {
		key, err := keyOf(obj)
		if err != nil {
			return KeyError{Obj: obj, Err: err}
		}
		if each != nil {
			each(i, key)
		}
	}
	return nil
}

// relistKind is what a Replace does with one listed object, judged against
// what was held under its key before the replacement.
type relistKind uint8

const (
	// relistAdded: nothing was held under the key.
	relistAdded relistKind = iota
	// relistUpdated: another object was held under the key.
	relistUpdated
	// relistUnchanged: the very same object was held (as after a relist
	// that reused the cached objects); it is kept as it is, and consumers
	// that tell handlers see it as an update with old == new.
	relistUnchanged
)

// pendingState is what a relist needs of a queue's pending changes of one
// key: the object a tombstone of the key carries, and whether the newest
// pending change is already a deletion (which needs no tombstone).
type pendingState struct {
	obj     interface{}
	deleted bool
}

// relistRun is one application of the relist rule. Every field but items
// is optional, and the rule does only the parts its fields ask for.
type relistRun struct {
	// items are the listed objects with their keys, in list order. A key
	// may repeat: each item is judged on its own against what was held
	// before the replacement (a store then keeps the last one).
	items []keyedObject

	// held looks up what was held under a key before the replacement, and
	// each receives every item's kind with the held object (nil when
	// added), in list order. Without both, items are not judged. Once
	// judged, an item is not read again but for its key: each may reuse
	// its obj.
	held func(key string) (interface{}, bool)
	each func(i int, kind relistKind, old interface{})

	// pending yields a queue's keys with pending changes, oldest first; a
	// key may come more than once, its last state being its newest.
	pending iter.Seq2[string, pendingState]
	// known is the store the queue's consumer keeps, read after pending
	// (the permitted lock order is queue, then store).
	known KeyListerGetter
	// logger tells about known keys whose object could not be read.
	logger klog.Logger
}

// relist applies the relist rule:
//   - each item is added, updated or unchanged (see relistKind), as held
//     reports;
//   - a key missing from the list is deleted, with a tombstone carrying
//     its last known object: first every key pending in the queue (in
//     order of first appearance) whose newest change is not already a
//     deletion, carrying that change's object; then every key of known
//     (in its order) that is neither listed nor pending, carrying the
//     known object, or nil if it cannot be read (see lastKnownState).
//
// It returns the tombstones in that order; nil without pending and known.
func relist(r relistRun) []DeletedFinalStateUnknown {
	if r.held != nil && r.each != nil {
		judgeListed(r.items, r.held, r.each)
	}
	if r.pending == nil && r.known == nil {
		return nil
	}
	listed := make(map[string]struct{}, len(r.items))
	for _, it := range r.items {
		listed[it.key] = struct{}{}
	}
	return missingTombstones(r.logger, r.pending, r.known, listed)
}

// judgeListed tells each the kind of every item, in order.
func judgeListed(items []keyedObject, held func(string) (interface{}, bool), each func(int, relistKind, interface{})) {
	for i, it := range items {
		old, ok := held(it.key)
		switch {
		case !ok:
			each(i, relistAdded, nil)
		case sameObject(old, it.obj):
			each(i, relistUnchanged, old)
		default:
			each(i, relistUpdated, old)
		}
	}
}

// missingTombstones returns the tombstones of the keys pending or known
// but not listed, in relist's order.
func missingTombstones(logger klog.Logger, pending iter.Seq2[string, pendingState], known KeyListerGetter, listed map[string]struct{}) []DeletedFinalStateUnknown {
	var order []string
	newest := map[string]pendingState{}
	if pending != nil {
		for key, st := range pending {
			if _, seen := newest[key]; !seen {
				order = append(order, key)
			}
			newest[key] = st
		}
	}
	var tombstones []DeletedFinalStateUnknown
	for _, key := range order {
		if _, ok := listed[key]; ok {
			continue
		}
		if st := newest[key]; !st.deleted {
			tombstones = append(tombstones, DeletedFinalStateUnknown{Key: key, Obj: st.obj})
		}
	}
	if known == nil {
		return tombstones
	}
	for _, key := range known.ListKeys() {
		if _, ok := listed[key]; ok {
			continue
		}
		if _, ok := newest[key]; ok {
			continue
		}
		tombstones = append(tombstones, DeletedFinalStateUnknown{Key: key, Obj: lastKnownState(logger, known, key)})
	}
	return tombstones
}

// lastKnownState returns the object known holds under key, for a
// tombstone. A lookup error or a missing key (the store changed since it
// listed its keys) is logged and yields nil: the tombstone then carries no
// object. A queue calls it under its own lock; known takes its own lock
// inside, which is the permitted order (queue lock, then store lock).
func lastKnownState(logger klog.Logger, known KeyGetter, key string) interface{} {
	obj, exists, err := known.GetByKey(key)
	switch {
	case err != nil:
		logger.Error(err, "Lookup in known objects failed; the deletion is reported without its last state", "key", key)
		return nil
	case !exists:
		logger.V(2).Info("Key vanished from known objects; the deletion is reported without its last state", "key", key)
		return nil
	}
	return obj
}

// sameObject reports whether a and b are the same value: for pointers, the
// same object. Values that cannot be compared are never the same.
func sameObject(a, b interface{}) (same bool) {
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	return a == b
}

// reuseCached returns the object cached holds under key when it is the same
// version of the same object as obj, and obj otherwise. Same version means
// same Go type, same UID and same non-empty resource version: a resource
// version changes with every write, and comparing UIDs keeps an object
// deleted and recreated under the same name from ever being mistaken for its
// predecessor. cached may be nil. A failed or panicking lookup keeps obj:
// reuse only saves memory, it must not fail a list.
//
// The rule trusts what it compares: it assumes cached objects are not
// modified (they are read-only by contract) and that a transform produces
// the same object from the same input.
func reuseCached(cached KeyGetter, key string, obj interface{}) (out interface{}) {
	if cached == nil || isNilPointer(obj) {
		return obj
	}
	listed, err := meta.Accessor(obj)
	if err != nil {
		return obj
	}
	rv := listed.GetResourceVersion()
	if rv == "" {
		return obj
	}
	defer func() {
		if recover() != nil {
			out = obj
		}
	}()
	held, exists, err := cached.GetByKey(key)
	if err != nil || !exists || reflect.TypeOf(held) != reflect.TypeOf(obj) {
		return obj
	}
	h, err := meta.Accessor(held)
	if err != nil || h.GetResourceVersion() != rv || h.GetUID() != listed.GetUID() {
		return obj
	}
	return held
}
