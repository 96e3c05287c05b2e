package cache

// ThreadSafeStore is a map from keys to objects, safe for concurrent use,
// with secondary indexes. It does not compute keys: callers pass them.
// Objects it returns are shared: callers must not modify them.
//
// Methods without an error result (Add, Update, Replace) cannot report an
// index function that fails: the store then keeps the object, leaves it out
// of the failing index only, and logs the error with the key.
type ThreadSafeStore interface {
	Add(key string, obj interface{})
	Update(key string, obj interface{})
	Delete(key string)
	DeleteWithObject(key string, obj interface{})
	Get(key string) (item interface{}, exists bool)
	List() []interface{}
	ListKeys() []string
	Replace(map[string]interface{}, string)
	Index(indexName string, obj interface{}) ([]interface{}, error)
	IndexKeys(indexName, indexedValue string) ([]string, error)
	Bookmark(rv string)
	LastStoreSyncResourceVersion() string
	ListIndexFuncValues(name string) []string
	ByIndex(indexName, indexedValue string) ([]interface{}, error)
	GetIndexers() Indexers

	// AddIndexers adds index functions and indexes the stored objects.
	AddIndexers(newIndexers Indexers) error
	// Resync does nothing for a store.
	Resync() error
}

// ThreadSafeStoreWithTransaction is a ThreadSafeStore that applies batches
// of changes under one lock.
type ThreadSafeStoreWithTransaction interface {
	ThreadSafeStore
	// Transaction applies fns in order, atomically for readers.
	Transaction(fns ...ThreadSafeStoreTransaction)
}

// ThreadSafeStoreTransaction is a Transaction with its key computed.
type ThreadSafeStoreTransaction struct {
	Transaction
	Key string
}
