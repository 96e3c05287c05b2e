package cache

import (
	"fmt"
)

// TypedSharedIndexInformer is a SharedIndexInformer whose objects are all
// of type T, with typed handlers and indexes.
type TypedSharedIndexInformer[T Object] interface {
	SharedIndexInformer

	// AddTypedEventHandler registers a typed handler; at most one options
	// value may be given.
	AddTypedEventHandler(handler TypedResourceEventHandler[T], options ...HandlerOptions) (ResourceEventHandlerRegistration, error)
	// AddTypedIndexers adds typed index functions.
	AddTypedIndexers(indexers TypedIndexers[T]) error
	// GetTypedIndexer returns the cache with typed lookups.
	GetTypedIndexer() TypedIndexer[T]
}

// NewTypedSharedIndexInformer wraps informer, whose objects must be of type
// T, in the typed API.
func NewTypedSharedIndexInformer[T Object](informer SharedIndexInformer) TypedSharedIndexInformer[T] {
	return typedSharedIndexInformer[T]{SharedIndexInformer: informer}
}

// typedSharedIndexInformer adapts a SharedIndexInformer to T.
type typedSharedIndexInformer[T Object] struct {
	SharedIndexInformer
}

// AddTypedEventHandler registers handler through the typed adapter; an
// object that is not a T panics its delivery, as in client-go.
func (s typedSharedIndexInformer[T]) AddTypedEventHandler(handler TypedResourceEventHandler[T], options ...HandlerOptions) (ResourceEventHandlerRegistration, error) {
	var opts HandlerOptions
	switch len(options) {
	case 0:
	case 1:
		opts = options[0]
	default:
		return nil, fmt.Errorf("at most one HandlerOptions may be passed, got %d", len(options))
	}
	return s.AddEventHandlerWithOptions(newTypedHandlerAdapter[T](handler), opts)
}

// AddTypedIndexers adds typed index functions.
func (s typedSharedIndexInformer[T]) AddTypedIndexers(indexers TypedIndexers[T]) error {
	return s.AddIndexers(TypedIndexersToIndexers(indexers))
}

// GetTypedIndexer returns the cache with typed lookups.
func (s typedSharedIndexInformer[T]) GetTypedIndexer() TypedIndexer[T] {
	return typedIndexer[T]{Indexer: s.GetIndexer()}
}

// setValueSharing lets SetValueSharing reach the wrapped informer.
func (s typedSharedIndexInformer[T]) setValueSharing(enabled bool) error {
	return SetValueSharing(s.SharedIndexInformer, enabled)
}

// typedIndexer adds typed lookups to an Indexer of T.
type typedIndexer[T any] struct {
	Indexer
}

// TypedIndex is Index with typed objects. As in client-go, a cached
// object that is not a T makes it panic (the type assertion fails).
func (i typedIndexer[T]) TypedIndex(indexName string, obj T) ([]T, error) {
	objs, err := i.Index(indexName, obj)
	if err != nil {
		return nil, err
	}
	return mustBeTyped[T](objs), nil
}

// ByTypedIndex is ByIndex with typed objects; like TypedIndex, it panics
// on a cached object that is not a T.
func (i typedIndexer[T]) ByTypedIndex(indexName, indexedValue string) ([]T, error) {
	objs, err := i.ByIndex(indexName, indexedValue)
	if err != nil {
		return nil, err
	}
	return mustBeTyped[T](objs), nil
}

// AddTypedIndexers adds typed index functions.
func (i typedIndexer[T]) AddTypedIndexers(newIndexers TypedIndexers[T]) error {
	return i.AddIndexers(TypedIndexersToIndexers(newIndexers))
}

// mustBeTyped asserts every cached object to T; the assertion panics with
// Go's own message on the first one that is not.
func mustBeTyped[T any](objs []interface{}) []T {
	out := make([]T, len(objs))
	for i, obj := range objs {
		out[i] = obj.(T)
	}
	return out
}
