package cache

import "errors"

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
