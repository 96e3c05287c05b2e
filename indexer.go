package cache

// This file holds the Indexer interfaces: a Store with secondary indexes.
// The index functions and their bookkeeping sit below, in index.go.

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
