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

// swapIfHeld is the storage's swapIfHeld (internal/dedup/compactor.go).
func (c *cache) swapIfHeld(key string, held, equal interface{}) bool {
	return c.storage.swapIfHeld(key, held, equal)
}

// Replace swaps the content for list, observed at resourceVersion. If any
// object has no key or fails the transform, nothing changes and that error
// is returned. An index function that fails stores every object, then
// panics (see ThreadSafeStore).
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

// UndeltaStore is a Store that turns every change into the complete state:
// after each successful Add, Update, Delete or Replace it calls PushFunc
// with the list of all stored objects. Fed by a Reflector, it lets code
// that only understands whole snapshots follow a watch.
//
// Each successful change yields exactly one PushFunc call; a failed change
// yields none. The snapshot is taken after the change, without a lock held
// across both, so concurrent changes may produce two calls with the same
// snapshot, and snapshots of concurrent changes may arrive out of order.
// PushFunc runs on the goroutine that made the change, with no lock of the
// store held; it must be safe for concurrent use if changes are. The
// objects it receives are the stored ones: treat them as read-only.
type UndeltaStore struct {
	Store
	PushFunc func([]interface{})
}

var _ Store = (*UndeltaStore)(nil)

// NewUndeltaStore returns an empty UndeltaStore that files objects under
// keyFunc's keys and pushes snapshots to pushFunc.
func NewUndeltaStore(pushFunc func([]interface{}), keyFunc KeyFunc) *UndeltaStore {
	return &UndeltaStore{Store: NewStore(keyFunc), PushFunc: pushFunc}
}

// Add stores obj, then pushes the complete state.
func (u *UndeltaStore) Add(obj interface{}) error {
	return u.pushAfter(u.Store.Add(obj))
}

// Update stores obj, then pushes the complete state.
func (u *UndeltaStore) Update(obj interface{}) error {
	return u.pushAfter(u.Store.Update(obj))
}

// Delete removes obj, then pushes the complete state.
func (u *UndeltaStore) Delete(obj interface{}) error {
	return u.pushAfter(u.Store.Delete(obj))
}

// Replace swaps the content for list, then pushes the complete state. The
// store takes list over: the caller must not use it afterwards.
func (u *UndeltaStore) Replace(list []interface{}, resourceVersion string) error {
	return u.pushAfter(u.Store.Replace(list, resourceVersion))
}

// pushAfter pushes a snapshot if the change that produced err succeeded,
// and returns err. A nil PushFunc pushes nothing.
func (u *UndeltaStore) pushAfter(err error) error {
	if err != nil {
		return err
	}
	if u.PushFunc != nil {
		u.PushFunc(u.Store.List())
	}
	return nil
}

// FakeCustomStore is a Store for tests whose every method delegates to the
// matching function field. A method whose field is nil does nothing and
// returns zero values: no error, nothing found, an empty resource version.
type FakeCustomStore struct {
	AddFunc                          func(obj interface{}) error
	UpdateFunc                       func(obj interface{}) error
	DeleteFunc                       func(obj interface{}) error
	ListFunc                         func() []interface{}
	ListKeysFunc                     func() []string
	GetFunc                          func(obj interface{}) (item interface{}, exists bool, err error)
	GetByKeyFunc                     func(key string) (item interface{}, exists bool, err error)
	ReplaceFunc                      func(list []interface{}, resourceVersion string) error
	ResyncFunc                       func() error
	BookmarkFunc                     func(rv string)
	LastStoreSyncResourceVersionFunc func() string
}

var _ Store = (*FakeCustomStore)(nil)

// Add calls AddFunc, if set.
func (f *FakeCustomStore) Add(obj interface{}) error {
	if f.AddFunc == nil {
		return nil
	}
	return f.AddFunc(obj)
}

// Update calls UpdateFunc, if set.
func (f *FakeCustomStore) Update(obj interface{}) error {
	if f.UpdateFunc == nil {
		return nil
	}
	return f.UpdateFunc(obj)
}

// Delete calls DeleteFunc, if set.
func (f *FakeCustomStore) Delete(obj interface{}) error {
	if f.DeleteFunc == nil {
		return nil
	}
	return f.DeleteFunc(obj)
}

// List calls ListFunc, if set; otherwise it returns nil.
func (f *FakeCustomStore) List() []interface{} {
	if f.ListFunc == nil {
		return nil
	}
	return f.ListFunc()
}

// ListKeys calls ListKeysFunc, if set; otherwise it returns nil.
func (f *FakeCustomStore) ListKeys() []string {
	if f.ListKeysFunc == nil {
		return nil
	}
	return f.ListKeysFunc()
}

// Get calls GetFunc, if set; otherwise nothing is found.
func (f *FakeCustomStore) Get(obj interface{}) (item interface{}, exists bool, err error) {
	if f.GetFunc == nil {
		return nil, false, nil
	}
	return f.GetFunc(obj)
}

// GetByKey calls GetByKeyFunc, if set; otherwise nothing is found.
func (f *FakeCustomStore) GetByKey(key string) (item interface{}, exists bool, err error) {
	if f.GetByKeyFunc == nil {
		return nil, false, nil
	}
	return f.GetByKeyFunc(key)
}

// Replace calls ReplaceFunc, if set.
func (f *FakeCustomStore) Replace(list []interface{}, resourceVersion string) error {
	if f.ReplaceFunc == nil {
		return nil
	}
	return f.ReplaceFunc(list, resourceVersion)
}

// Resync calls ResyncFunc, if set.
func (f *FakeCustomStore) Resync() error {
	if f.ResyncFunc == nil {
		return nil
	}
	return f.ResyncFunc()
}

// Bookmark calls BookmarkFunc, if set.
func (f *FakeCustomStore) Bookmark(rv string) {
	if f.BookmarkFunc != nil {
		f.BookmarkFunc(rv)
	}
}

// LastStoreSyncResourceVersion calls LastStoreSyncResourceVersionFunc, if
// set; otherwise it returns "".
func (f *FakeCustomStore) LastStoreSyncResourceVersion() string {
	if f.LastStoreSyncResourceVersionFunc == nil {
		return ""
	}
	return f.LastStoreSyncResourceVersionFunc()
}
