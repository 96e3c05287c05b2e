package cache

import "fmt"

// This file holds the interfaces of the stores layer: Store and the
// transactions it may apply, what a Reflector writes to (ReflectorStore
// and the optional parts it looks for), and Indexer, a Store with
// secondary indexes. The index functions and their bookkeeping sit below,
// in index.go; the implementations above, in thread_safe_store.go and
// store.go.

// Store is a keyed collection of objects. Objects returned by Get, GetByKey
// and List are the stored values themselves: callers must not modify them.
type Store interface {
	// Add inserts obj, or replaces the object stored under its key.
	Add(obj interface{}) error
	// Update does what Add does; both exist to carry intent.
	Update(obj interface{}) error
	// Delete removes the object with obj's key; an absent key is not an error.
	Delete(obj interface{}) error
	// List returns every stored object, in no particular order.
	List() []interface{}
	// ListKeys returns every key, in no particular order.
	ListKeys() []string
	// LastStoreSyncResourceVersion returns the newest resource version the
	// store has seen through Replace, Bookmark or a stored object.
	LastStoreSyncResourceVersion() string
	// Bookmark records rv as seen without changing the content.
	Bookmark(rv string)
	// Get returns the object stored under obj's key.
	Get(obj interface{}) (item interface{}, exists bool, err error)
	// GetByKey returns the object stored under key.
	GetByKey(key string) (item interface{}, exists bool, err error)
	// Replace swaps the whole content for list, observed at the given
	// resource version.
	Replace([]interface{}, string) error
	// Resync is meaningless for a plain store and does nothing; queues
	// implement it.
	Resync() error
}

// TransactionType is the kind of one change in a Transaction.
type TransactionType string

// The changes a Transaction can carry.
const (
	TransactionTypeAdd    TransactionType = "Add"
	TransactionTypeUpdate TransactionType = "Update"
	TransactionTypeDelete TransactionType = "Delete"
)

// Transaction is one change applied as part of a batch.
type Transaction struct {
	Object interface{}
	Type   TransactionType
}

// TransactionStore applies a batch of changes under one lock, so readers see
// either none or all of them.
type TransactionStore interface {
	// Transaction applies txns in order; changes whose key cannot be
	// computed are skipped and reported in the error, the rest are applied.
	Transaction(txns ...Transaction) *TransactionError
}

// TransactionError reports the changes of a batch that were not applied.
type TransactionError struct {
	// SuccessfulIndices lists the positions of the applied changes.
	SuccessfulIndices []int
	// TotalTransactions is the size of the batch.
	TotalTransactions int
	// Errors holds one error per change that was not applied.
	Errors []error
}

// Error says how many changes failed and why.
func (t *TransactionError) Error() string {
	return fmt.Sprintf("failed to execute (%d/%d) transactions failed due to: %v",
		t.TotalTransactions-len(t.SuccessfulIndices), t.TotalTransactions, t.Errors)
}

// TransformFunc rewrites an object before it is stored, typically to drop
// fields a controller never reads (managedFields, say) and so save memory.
// It may be called with a DeletedFinalStateUnknown; it must be safe to call
// again on an object it already transformed, and must not modify its input
// if that input is shared.
type TransformFunc func(interface{}) (interface{}, error)

// ReflectorStore is what a Reflector writes to: a queue or a store. It is
// declared with the stores, below the reflector, because every store and
// queue of this package implements it.
type ReflectorStore interface {
	// Add records that obj was created.
	Add(obj interface{}) error
	// Update records that obj changed.
	Update(obj interface{}) error
	// Delete records that obj was deleted.
	Delete(obj interface{}) error
	// Replace records a full list, observed at the given resource version.
	Replace([]interface{}, string) error
	// Resync asks for every known object to be processed again.
	Resync() error
}

// TransformingStore is a ReflectorStore that transforms objects itself; a
// Reflector feeding one leaves transformation to it.
type TransformingStore interface {
	ReflectorStore
	// Transformer returns the transform the store applies, or nil.
	Transformer() TransformFunc
}

// ReflectorBookmarkStore is implemented by stores that want to hear about
// watch bookmarks: the resource version moved without any object changing.
type ReflectorBookmarkStore interface {
	// Bookmark records that the watch reached resourceVersion.
	Bookmark(resourceVersion string) error
}

// Indexer is a Store with secondary indexes: named functions that map each
// object to zero or more values, so objects can be looked up by value.
type Indexer interface {
	Store
	// Index returns the objects that share at least one value of the named
	// index with obj, each once.
	Index(indexName string, obj interface{}) ([]interface{}, error)
	// IndexKeys returns the keys of the objects with indexedValue in the
	// named index.
	IndexKeys(indexName, indexedValue string) ([]string, error)
	// ListIndexFuncValues returns every value the named index holds.
	ListIndexFuncValues(indexName string) []string
	// ByIndex returns the objects with indexedValue in the named index.
	ByIndex(indexName, indexedValue string) ([]interface{}, error)
	// GetIndexers returns the index functions by name. Read-only.
	GetIndexers() Indexers

	// AddIndexers adds index functions and indexes the objects already
	// stored. A name that already exists is an error.
	AddIndexers(newIndexers Indexers) error
}

// TypedIndexer is an Indexer whose objects are all of type T.
type TypedIndexer[T any] interface {
	Indexer

	// TypedIndex is Index with typed objects.
	TypedIndex(indexName string, obj T) ([]T, error)
	// ByTypedIndex is ByIndex with typed objects.
	ByTypedIndex(indexName, indexedValue string) ([]T, error)
	// AddTypedIndexers is AddIndexers with typed functions.
	AddTypedIndexers(newIndexers TypedIndexers[T]) error
}
