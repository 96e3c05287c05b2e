package cache

import (
	"errors"
	"fmt"
)

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
	return fmt.Sprintf("%d of %d transactions failed: %v",
		t.TotalTransactions-len(t.SuccessfulIndices), t.TotalTransactions, errors.Join(t.Errors...))
}

// TransformFunc rewrites an object before it is stored, typically to drop
// fields a controller never reads (managedFields, say) and so save memory.
// It may be called with a DeletedFinalStateUnknown; it must be safe to call
// again on an object it already transformed, and must not modify its input
// if that input is shared.
type TransformFunc func(interface{}) (interface{}, error)

// TransformingStore is a ReflectorStore that transforms objects itself; a
// Reflector feeding one leaves transformation to it.
type TransformingStore interface {
	ReflectorStore
	// Transformer returns the transform the store applies, or nil.
	Transformer() TransformFunc
}
