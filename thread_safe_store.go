package cache

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/klog/v2"
)

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

// ThreadSafeStoreOption configures a store made by NewThreadSafeStore.
type ThreadSafeStoreOption = func(*threadSafeMap)

// WithThreadSafeStoreMetrics makes the store publish the newest resource
// version it has seen, under identifier, when identifier is Reserved.
func WithThreadSafeStoreMetrics(identifier InformerNameAndResource, metricsProvider InformerMetricsProvider) ThreadSafeStoreOption {
	return func(c *threadSafeMap) {
		c.rvMetric = newStoreRVMetric(identifier, metricsProvider)
	}
}

// NewThreadSafeStore returns an empty store with the given index functions.
// indices, if not nil, is taken over as the index storage and emptied.
func NewThreadSafeStore(indexers Indexers, indices Indices, opts ...ThreadSafeStoreOption) ThreadSafeStore {
	return newThreadSafeMap(indexers, indices, opts...)
}

func newThreadSafeMap(indexers Indexers, indices Indices, opts ...ThreadSafeStoreOption) *threadSafeMap {
	c := &threadSafeMap{
		items:      map[string]interface{}{},
		idx:        newIndexSet(indexers, indices),
		rvMetric:   noopMetric{},
		trackingRV: featureEnabled(featureAtomicFIFO),
	}
	c.funcs.Store(c.idx.funcs)
	for _, opt := range opts {
		opt(c)
	}
	return c
}

// threadSafeMap is the ThreadSafeStore: a map under a RWMutex plus an
// indexSet. Index functions run before the lock is taken, so writers hold
// it only to apply precomputed values, and readers wait less.
type threadSafeMap struct {
	// mu guards items, idx and rv.
	mu    sync.RWMutex
	items map[string]interface{}
	// idx is the secondary index; idx.funcs changes only in AddIndexers.
	idx *indexSet
	// rv is the newest resource version seen by a write or a bookmark.
	rv string

	// funcs is a copy of idx.funcs readable without mu, to compute index
	// values before locking. Writers compare it with idx.funcs under mu.
	funcs atomic.Pointer[indexFuncs]
	// trackingRV says whether LastStoreSyncResourceVersion reports rv; it
	// follows the AtomicFIFO gate, read at construction.
	trackingRV bool
	rvMetric   GaugeMetric
}

var _ ThreadSafeStoreWithTransaction = (*threadSafeMap)(nil)

// valuesFor computes obj's index values for the current index functions.
func (c *threadSafeMap) valuesFor(obj interface{}) indexValues {
	return computeIndexValues(c.funcs.Load(), obj)
}

// freshLocked recomputes vals if the index functions changed since they
// were computed. The caller holds c.mu for writing.
func (c *threadSafeMap) freshLocked(vals indexValues, obj interface{}) indexValues {
	if vals.funcs == c.idx.funcs {
		return vals
	}
	return computeIndexValues(c.idx.funcs, obj)
}

// putLocked stores obj under key and re-files it in every index. The
// caller holds c.mu for writing. It returns the index failures.
func (c *threadSafeMap) putLocked(key string, obj interface{}, vals indexValues) error {
	vals = c.freshLocked(vals, obj)
	old := c.items[key]
	c.items[key] = obj
	c.idx.move(key, old, vals)
	return vals.err(key)
}

// deleteLocked removes key from the map and every index. The caller holds
// c.mu for writing.
func (c *threadSafeMap) deleteLocked(key string) {
	old, ok := c.items[key]
	if !ok {
		return
	}
	c.idx.move(key, old, indexValues{funcs: c.idx.funcs})
	delete(c.items, key)
}

// noteRVLocked records rv as the newest seen. The caller holds c.mu for
// writing.
func (c *threadSafeMap) noteRVLocked(rv string) {
	c.rv = rv
	setRVGauge(c.rvMetric, rv)
}

// put is Add/Update with the index failures returned instead of logged.
func (c *threadSafeMap) put(key string, obj interface{}) error {
	vals := c.valuesFor(obj)
	rv, hasRV := resourceVersionOf(obj)
	c.mu.Lock()
	defer c.mu.Unlock()
	err := c.putLocked(key, obj, vals)
	if hasRV {
		c.noteRVLocked(rv)
	}
	return err
}

// Add stores obj under key. An index function that fails leaves the object
// out of that index only; the failure is logged with the key.
func (c *threadSafeMap) Add(key string, obj interface{}) {
	c.Update(key, obj)
}

// Update stores obj under key, as Add does.
func (c *threadSafeMap) Update(key string, obj interface{}) {
	if err := c.put(key, obj); err != nil {
		logIndexFailure(err)
	}
}

// Delete removes key; an absent key is a no-op.
func (c *threadSafeMap) Delete(key string) {
	c.DeleteWithObject(key, nil)
}

// DeleteWithObject removes key and, when obj carries a resource version,
// records it as the newest seen.
func (c *threadSafeMap) DeleteWithObject(key string, obj interface{}) {
	rv, hasRV := "", false
	if obj != nil {
		rv, hasRV = resourceVersionOf(obj)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.deleteLocked(key)
	if hasRV {
		c.noteRVLocked(rv)
	}
}

// Get returns the object stored under key.
func (c *threadSafeMap) Get(key string) (item interface{}, exists bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	item, exists = c.items[key]
	return item, exists
}

// List returns every stored object.
func (c *threadSafeMap) List() []interface{} {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]interface{}, 0, len(c.items))
	for _, item := range c.items {
		out = append(out, item)
	}
	return out
}

// ListKeys returns every key.
func (c *threadSafeMap) ListKeys() []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]string, 0, len(c.items))
	for key := range c.items {
		out = append(out, key)
	}
	return out
}

// Replace swaps the content for items (which the store takes over) and
// records resourceVersion. Index failures are logged per key.
func (c *threadSafeMap) Replace(items map[string]interface{}, resourceVersion string) {
	if err := c.replace(items, resourceVersion); err != nil {
		logIndexFailure(err)
	}
}

// replace is Replace with the index failures returned.
func (c *threadSafeMap) replace(items map[string]interface{}, resourceVersion string) error {
	if items == nil {
		items = map[string]interface{}{}
	}
	funcs := c.funcs.Load()
	vals := make(map[string]indexValues, len(items))
	if len(funcs.fns) > 0 {
		for key, obj := range items {
			vals[key] = computeIndexValues(funcs, obj)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.items = items
	c.idx.reset()
	var errs []error
	for key, obj := range items {
		v := c.freshLocked(vals[key], obj)
		c.idx.move(key, nil, v)
		if err := v.err(key); err != nil {
			errs = append(errs, err)
		}
	}
	c.noteRVLocked(resourceVersion)
	return errors.Join(errs...)
}

// Transaction applies txns in order under one lock; the resource version
// of the last one is recorded. Index failures are logged per key.
func (c *threadSafeMap) Transaction(txns ...ThreadSafeStoreTransaction) {
	if err := c.transaction(txns); err != nil {
		logIndexFailure(err)
	}
}

func (c *threadSafeMap) transaction(txns []ThreadSafeStoreTransaction) error {
	if len(txns) == 0 {
		return nil
	}
	vals := make([]indexValues, len(txns))
	for i, txn := range txns {
		if txn.Type != TransactionTypeDelete {
			vals[i] = c.valuesFor(txn.Object)
		}
	}
	rv, hasRV := resourceVersionOf(txns[len(txns)-1].Object)
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for i, txn := range txns {
		switch txn.Type {
		case TransactionTypeAdd, TransactionTypeUpdate:
			if err := c.putLocked(txn.Key, txn.Object, vals[i]); err != nil {
				errs = append(errs, err)
			}
		case TransactionTypeDelete:
			c.deleteLocked(txn.Key)
		default:
			errs = append(errs, fmt.Errorf("transaction on key %q: unknown type %q", txn.Key, txn.Type))
		}
	}
	if hasRV {
		c.noteRVLocked(rv)
	}
	return errors.Join(errs...)
}

// Index returns the objects sharing any of obj's values in the named index.
func (c *threadSafeMap) Index(indexName string, obj interface{}) ([]interface{}, error) {
	fn := c.funcs.Load().byName[indexName]
	if fn == nil {
		return nil, fmt.Errorf("index %q does not exist", indexName)
	}
	vals, err := callIndexFunc(fn, obj)
	if err != nil {
		return nil, fmt.Errorf("computing index %q: %w", indexName, err)
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if len(vals) == 1 {
		set := c.idx.indices[indexName][vals[0]]
		out := make([]interface{}, 0, len(set))
		for key := range set {
			out = append(out, c.items[key])
		}
		return out, nil
	}
	keys := c.idx.keysForValues(indexName, vals)
	out := make([]interface{}, 0, len(keys))
	for _, key := range keys {
		out = append(out, c.items[key])
	}
	return out, nil
}

// ByIndex returns the objects filed under indexedValue in the named index.
func (c *threadSafeMap) ByIndex(indexName, indexedValue string) ([]interface{}, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	set, err := c.idx.keysForValue(indexName, indexedValue)
	if err != nil {
		return nil, err
	}
	out := make([]interface{}, 0, len(set))
	for key := range set {
		out = append(out, c.items[key])
	}
	return out, nil
}

// IndexKeys returns the keys filed under indexedValue in the named index,
// sorted, as the reference returns them.
func (c *threadSafeMap) IndexKeys(indexName, indexedValue string) ([]string, error) {
	c.mu.RLock()
	set, err := c.idx.keysForValue(indexName, indexedValue)
	if err != nil {
		c.mu.RUnlock()
		return nil, err
	}
	keys := set.list()
	c.mu.RUnlock()
	slices.Sort(keys)
	return keys, nil
}

// ListIndexFuncValues returns every value of the named index; an unknown
// name yields an empty list.
func (c *threadSafeMap) ListIndexFuncValues(indexName string) []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.idx.valuesOf(indexName)
}

// GetIndexers returns the index functions. The map is read-only: it is
// never modified, AddIndexers installs a new one.
func (c *threadSafeMap) GetIndexers() Indexers {
	return c.funcs.Load().byName
}

// AddIndexers adds index functions and indexes every stored object with
// them. If a name is taken or a function fails on a stored object, nothing
// changes and the error says which.
func (c *threadSafeMap) AddIndexers(newIndexers Indexers) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	funcs, err := c.idx.funcs.with(newIndexers)
	if err != nil {
		return err
	}
	added := newIndexFuncs(newIndexers)
	filed := make(map[string]indexValues, len(c.items))
	for key, obj := range c.items {
		vals := computeIndexValues(added, obj)
		if err := vals.err(key); err != nil {
			return fmt.Errorf("adding indexers: %w", err)
		}
		filed[key] = vals
	}
	for key, vals := range filed {
		for i, name := range added.names {
			c.idx.fileAll(name, key, vals.at(i))
		}
	}
	c.idx.funcs = funcs
	c.funcs.Store(funcs)
	return nil
}

// Bookmark records rv as the newest resource version seen.
func (c *threadSafeMap) Bookmark(rv string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.noteRVLocked(rv)
}

// LastStoreSyncResourceVersion returns the newest resource version seen,
// or "" when the AtomicFIFO gate is off (the reference's behaviour).
func (c *threadSafeMap) LastStoreSyncResourceVersion() string {
	if !c.trackingRV {
		return ""
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.rv
}

// Resync does nothing: a store has nothing to resync.
func (c *threadSafeMap) Resync() error {
	return nil
}

// resourceVersionOf returns obj's resource version, if it has metadata.
func resourceVersionOf(obj interface{}) (string, bool) {
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return "", false
	}
	return accessor.GetResourceVersion(), true
}

// logIndexFailure reports index functions that failed on a write whose
// signature cannot return an error.
func logIndexFailure(err error) {
	klog.Background().Error(err, "Index function failed; the object is stored but missing from the failing index")
}
