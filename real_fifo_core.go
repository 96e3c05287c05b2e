package cache

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
