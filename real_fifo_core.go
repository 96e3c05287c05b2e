package cache

import (
	"iter"

	"k8s.io/klog/v2"
)

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

// replacementTombstones returns, in order, the deletions that a Replace
// whose list has the keys in listed reports before the listed objects:
//   - for each key of queued (oldest first, by first appearance) that is not
//     listed and whose newest queued change is not already a deletion, a
//     tombstone carrying that change's object;
//   - then, for each key of knownObjects (in the order it lists them) that
//     is neither listed nor queued, a tombstone carrying the known object, or
//     nil if it cannot be read.
//
// queued yields the queue's changes with their keys and may be nil, as may
// knownObjects. The caller may hold its queue's lock: knownObjects is read
// after it, the permitted lock order.
func replacementTombstones(logger klog.Logger, queued iter.Seq2[string, Delta], knownObjects KeyListerGetter, listed map[string]struct{}) []DeletedFinalStateUnknown {
	var queuedOrder []string
	newest := map[string]Delta{}
	if queued != nil {
		for key, d := range queued {
			if _, seen := newest[key]; !seen {
				queuedOrder = append(queuedOrder, key)
			}
			newest[key] = d
		}
	}

	var tombstones []DeletedFinalStateUnknown
	for _, key := range queuedOrder {
		if _, ok := listed[key]; ok {
			continue
		}
		if d := newest[key]; d.Type != Deleted {
			tombstones = append(tombstones, DeletedFinalStateUnknown{Key: key, Obj: d.Object})
		}
	}
	if knownObjects == nil {
		return tombstones
	}
	for _, key := range knownObjects.ListKeys() {
		if _, ok := listed[key]; ok {
			continue
		}
		if _, ok := newest[key]; ok {
			continue
		}
		tombstones = append(tombstones, DeletedFinalStateUnknown{Key: key, Obj: lastKnownState(logger, knownObjects, key)})
	}
	return tombstones
}
