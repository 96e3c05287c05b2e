package overlay

// adapterV035 declares what client-go v0.35 has with another signature
// than kcache (which follows v0.37), each a thin wrapper over kcache's own
// declaration (hidden under the "overlay" prefix).
var adapterV035 = adapter{
	replaced: []string{"NewIndexer", "NewThreadSafeStore", "QueueWithBatch", "RealFIFO.PopBatch"},
	files:    map[string]string{"overlay_v0_35.go": v035Source},
}

func init() { adapters["v0.35"] = adapterV035 }

const v035Source = `package cache

// This file adapts kcache to the tools/cache API of client-go v0.35: the
// declarations below have that release's signatures and call kcache's own.

// NewIndexer returns an Indexer keeping objects by keyFunc and indexing
// them by indexers. (v0.35 takes no options.)
func NewIndexer(keyFunc KeyFunc, indexers Indexers) Indexer {
	return overlayNewIndexer(keyFunc, indexers)
}

// NewThreadSafeStore returns a ThreadSafeStore with the given indexers and
// indices. (v0.35 takes no options.)
func NewThreadSafeStore(indexers Indexers, indices Indices) ThreadSafeStore {
	return overlayNewThreadSafeStore(indexers, indices)
}

// QueueWithBatch is a Queue that can hand several queued items to one call
// of a ProcessBatchFunc. (In v0.35 PopBatch takes only that function.)
type QueueWithBatch interface {
	Queue

	// PopBatch waits for items and passes a run of them to process.
	PopBatch(ProcessBatchFunc) error
}

var _ QueueWithBatch = (*RealFIFO)(nil)

// PopBatch waits for queued changes and passes the longest run that can be
// processed together, one change or more, to process. Errors, closing and
// locking are as for Pop.
func (f *RealFIFO) PopBatch(process ProcessBatchFunc) error {
	return f.overlayPopBatch(process, func(obj interface{}, isInInitialList bool) error {
		return process(obj.(Deltas), isInInitialList)
	})
}

// Pop takes one item from queue and returns it; it returns nil when the
// queue is closed (or the item itself is nil).
func Pop(queue Queue) interface{} {
	var popped interface{}
	_, _ = queue.Pop(func(obj interface{}, _ bool) error {
		popped = obj
		return nil
	})
	return popped
}
`
