package cache

import (
	"fmt"
)

// StoreOption configures a store made by NewStore or NewIndexer.
type StoreOption = func(*cache)

// WithTransformer makes the store transform every object before storing it
// (Add, Update and Replace). A failing transform fails the write.
func WithTransformer(transformer TransformFunc) StoreOption {
	return func(c *cache) {
		c.transformer = transformer
	}
}

// WithStoreMetrics makes the store publish the newest resource version it
// has seen, under identifier, when identifier is Reserved.
func WithStoreMetrics(identifier InformerNameAndResource, metrics InformerMetricsProvider) StoreOption {
	return func(c *cache) {
		c.identifier = identifier
		c.metrics = metrics
	}
}

// NewStore returns an empty Store that files objects under keyFunc's keys.
func NewStore(keyFunc KeyFunc, opts ...StoreOption) Store {
	return newCache(keyFunc, Indexers{}, opts)
}

// NewIndexer returns an empty Indexer with the given index functions.
func NewIndexer(keyFunc KeyFunc, indexers Indexers, opts ...StoreOption) Indexer {
	return newCache(keyFunc, indexers, opts)
}

// newCache is the one constructor behind NewStore and NewIndexer.
func newCache(keyFunc KeyFunc, indexers Indexers, opts []StoreOption) *cache {
	c := &cache{keyFunc: keyFunc}
	for _, opt := range opts {
		opt(c)
	}
	var storeOpts []ThreadSafeStoreOption
	if c.metrics != nil {
		storeOpts = append(storeOpts, WithThreadSafeStoreMetrics(c.identifier, c.metrics))
	}
	c.storage = newThreadSafeMap(indexers, nil, storeOpts...)
	return c
}

// cache is the Store and Indexer: it computes keys, applies the transform,
// and leaves storage, locking and indexing to a threadSafeMap. It has no
// lock of its own.
type cache struct {
	storage     *threadSafeMap
	keyFunc     KeyFunc
	transformer TransformFunc
	identifier  InformerNameAndResource
	metrics     InformerMetricsProvider
}

var (
	_ Indexer          = (*cache)(nil)
	_ TransactionStore = (*cache)(nil)
)

// keyOf computes obj's key, wrapping a failure in a KeyError.
func (c *cache) keyOf(obj interface{}) (string, error) {
	key, err := callKeyFunc(c.keyFunc, obj)
	if err != nil {
		return "", KeyError{Obj: obj, Err: err}
	}
	return key, nil
}

// callKeyFunc runs a user key function. A panic is not recovered: as in
// client-go, it reaches the goroutine that called the store or queue.
func callKeyFunc(fn KeyFunc, obj interface{}) (key string, err error) {
	return fn(obj)
}

// transform applies the store's transform, if any, to the object of key.
func (c *cache) transform(key string, obj interface{}) (interface{}, error) {
	if c.transformer == nil {
		return obj, nil
	}
	out, err := callTransform(c.transformer, obj)
	if err != nil {
		return nil, fmt.Errorf("transforming: %w", err)
	}
	return out, nil
}

// callTransform runs a user transform. A panic is not recovered, as in
// client-go.
func callTransform(fn TransformFunc, obj interface{}) (out interface{}, err error) {
	return fn(obj)
}

// Add stores obj. A key or transform failure leaves the store unchanged
// and is returned; an index function failure panics (see ThreadSafeStore).
func (c *cache) Add(obj interface{}) error {
	return c.put(obj)
}

// Update stores obj, as Add does.
func (c *cache) Update(obj interface{}) error {
	return c.put(obj)
}

func (c *cache) put(obj interface{}) error {
	key, err := c.keyOf(obj)
	if err != nil {
		return err
	}
	obj, err = c.transform(key, obj)
	if err != nil {
		return err
	}
	c.storage.put(key, obj)
	return nil
}

// Delete removes the object with obj's key; an absent key is not an error.
func (c *cache) Delete(obj interface{}) error {
	key, err := c.keyOf(obj)
	if err != nil {
		return err
	}
	c.storage.DeleteWithObject(key, obj)
	return nil
}

// List returns every stored object (shared: do not modify).
func (c *cache) List() []interface{} { return c.storage.List() }

// appendObjects appends every stored object to dst; see objectAppender.
func (c *cache) appendObjects(dst []interface{}) []interface{} {
	return c.storage.appendObjects(dst)
}

// appendIndexed appends the objects ByIndex would return to dst; see
// indexAppender.
func (c *cache) appendIndexed(dst []interface{}, indexName, indexedValue string) ([]interface{}, error) {
	return c.storage.appendIndexed(dst, indexName, indexedValue)
}

// ListKeys returns every key.
func (c *cache) ListKeys() []string { return c.storage.ListKeys() }

// GetIndexers returns the index functions (read-only).
func (c *cache) GetIndexers() Indexers { return c.storage.GetIndexers() }

// Index returns the objects sharing any of obj's values in the named index.
func (c *cache) Index(indexName string, obj interface{}) ([]interface{}, error) {
	return c.storage.Index(indexName, obj)
}

// IndexKeys returns the keys filed under indexedValue in the named index.
func (c *cache) IndexKeys(indexName, indexedValue string) ([]string, error) {
	return c.storage.IndexKeys(indexName, indexedValue)
}

// ListIndexFuncValues returns every value of the named index.
func (c *cache) ListIndexFuncValues(indexName string) []string {
	return c.storage.ListIndexFuncValues(indexName)
}

// ByIndex returns the objects filed under indexedValue in the named index.
func (c *cache) ByIndex(indexName, indexedValue string) ([]interface{}, error) {
	return c.storage.ByIndex(indexName, indexedValue)
}

// AddIndexers adds index functions and indexes the stored objects; see
// ThreadSafeStore.AddIndexers for the all-or-nothing rule.
func (c *cache) AddIndexers(newIndexers Indexers) error {
	return c.storage.AddIndexers(newIndexers)
}

// Get returns the object stored under obj's key.
func (c *cache) Get(obj interface{}) (item interface{}, exists bool, err error) {
	key, err := c.keyOf(obj)
	if err != nil {
		return nil, false, err
	}
	return c.GetByKey(key)
}

// GetByKey returns the object stored under key.
func (c *cache) GetByKey(key string) (item interface{}, exists bool, err error) {
	item, exists = c.storage.Get(key)
	return item, exists, nil
}

// swapIfHeld is the storage's swapIfHeld (share_compact.go).
func (c *cache) swapIfHeld(key string, held, equal interface{}) bool {
	return c.storage.swapIfHeld(key, held, equal)
}

// Replace swaps the content for list, observed at resourceVersion. If any
// object has no key or fails the transform, nothing changes. Index function
// failures still store the objects and are returned.
func (c *cache) Replace(list []interface{}, resourceVersion string) error {
	items := make([]keyedObject, 0, len(list))
	for _, obj := range list {
		key, err := c.keyOf(obj)
		if err != nil {
			return err
		}
		obj, err = c.transform(key, obj)
		if err != nil {
			return err
		}
		items = append(items, keyedObject{key: key, obj: obj})
	}
	c.storage.replace(items, resourceVersion)
	return nil
}

// Resync does nothing: a store has nothing to resync.
func (c *cache) Resync() error { return nil }

// Bookmark records rv as the newest resource version seen.
func (c *cache) Bookmark(rv string) { c.storage.Bookmark(rv) }

// LastStoreSyncResourceVersion returns the newest resource version seen.
func (c *cache) LastStoreSyncResourceVersion() string {
	return c.storage.LastStoreSyncResourceVersion()
}

// Transaction applies txns in order under one lock. Objects are stored as
// given: the transform is not applied (transactions carry objects a queue
// already transformed). A change whose key cannot be computed is skipped and
// reported; the others are applied.
func (c *cache) Transaction(txns ...Transaction) *TransactionError {
	keyed := make([]ThreadSafeStoreTransaction, 0, len(txns))
	applied := make([]int, 0, len(txns))
	var errs []error
	for i, txn := range txns {
		key, err := c.keyOf(txn.Object)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		applied = append(applied, i)
		keyed = append(keyed, ThreadSafeStoreTransaction{Transaction: txn, Key: key})
	}
	c.storage.transaction(keyed)
	if len(errs) == 0 {
		return nil
	}
	return &TransactionError{SuccessfulIndices: applied, TotalTransactions: len(txns), Errors: errs}
}
