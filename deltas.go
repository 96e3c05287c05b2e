package cache

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
// any other object. A panic in keyFunc is returned as an error.
func tombstoneAwareKey(keyFunc KeyFunc, obj interface{}) (string, error) {
	if t, ok := obj.(DeletedFinalStateUnknown); ok {
		return t.Key, nil
	}
	return callKeyFunc(keyFunc, obj)
}
