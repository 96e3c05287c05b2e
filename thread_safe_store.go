package cache

import (
	"fmt"
	"math/bits"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/api/meta"
)

// ThreadSafeStore is a map from keys to objects, safe for concurrent use,
// with secondary indexes. It does not compute keys: callers pass them.
// Objects it returns are shared: callers must not modify them.
//
// An index function that fails on a stored object makes the write panic,
// naming the key and the index, as client-go's store does.
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
// indices, if not nil, is emptied: the store keeps its indexes in its own
// layout (see doc.go) and never fills it.
func NewThreadSafeStore(indexers Indexers, indices Indices, opts ...ThreadSafeStoreOption) ThreadSafeStore {
	return newThreadSafeMap(indexers, indices, opts...)
}

func newThreadSafeMap(indexers Indexers, indices Indices, opts ...ThreadSafeStoreOption) *threadSafeMap {
	for name := range indices {
		delete(indices, name)
	}
	c := &threadSafeMap{
		tab:        newSlotTable(),
		idx:        newIndexSet(newIndexFuncs(indexers)),
		rvMetric:   noopMetric{},
		trackingRV: featureEnabled(featureAtomicFIFO),
	}
	c.funcs.Store(c.idx.funcs)
	for _, opt := range opts {
		opt(c)
	}
	return c
}

// threadSafeMap is the ThreadSafeStore: a slotTable and an indexSet under a
// RWMutex. On Add, Update and Replace, index functions run before the lock
// is taken, so those writers hold it only to apply precomputed values
// (AddIndexers runs the new functions under the write lock), and readers copy slot contents out
// under the read lock without any map lookup per object.
type threadSafeMap struct {
	// mu guards tab, idx and rv.
	mu  sync.RWMutex
	tab slotTable
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

// valuesBuffer is room for the index values of one write on the stack.
type valuesBuffer [4]fnValues

// freshLocked recomputes vals if the index functions changed since they
// were computed. The caller holds c.mu for writing.
func (c *threadSafeMap) freshLocked(vals indexValues, obj interface{}) indexValues {
	if vals.funcs == c.idx.funcs {
		return vals
	}
	return computeIndexValues(c.idx.funcs, obj, nil)
}

// putLocked stores obj under key and re-files it where its index values
// changed. The caller holds c.mu for writing. When an index function
// failed on obj, obj is stored all the same and filed in the other
// indexes, the failing ones left as they were, and the failure is returned
// for the caller to panic with: the state client-go's store is left in
// when its index loop reaches the failing index last.
func (c *threadSafeMap) putLocked(key string, obj interface{}, vals indexValues) (failure interface{}) {
	vals = c.freshLocked(vals, obj)
	if id, ok := c.tab.lookup(key); ok {
		c.tab.objs[id] = obj
		c.idx.refile(id, &vals)
	} else {
		c.idx.fileNew(c.tab.insert(key, obj), &vals)
	}
	return vals.failure(key)
}

// deleteLocked removes key from the table and every index. The caller
// holds c.mu for writing.
func (c *threadSafeMap) deleteLocked(key string) {
	if id, ok := c.tab.lookup(key); ok {
		c.removeSlotLocked(id)
	}
}

// removeSlotLocked removes slot id from the table and every index. The
// caller holds c.mu for writing.
func (c *threadSafeMap) removeSlotLocked(id int32) {
	c.idx.removeSlot(id, c.tab.remove(id))
}

// noteRVLocked records rv as the newest seen. The caller holds c.mu for
// writing.
func (c *threadSafeMap) noteRVLocked(rv string) {
	c.rv = rv
	setRVGauge(c.rvMetric, rv)
}

// put is Add and Update.
func (c *threadSafeMap) put(key string, obj interface{}) {
	var buf valuesBuffer
	vals := computeIndexValues(c.funcs.Load(), obj, buf[:])
	rv, hasRV := resourceVersionOf(obj)
	c.mu.Lock()
	defer c.mu.Unlock()
	if failure := c.putLocked(key, obj, vals); failure != nil {
		// As in client-go: the resource version is not recorded, and the
		// deferred unlock releases the lock as the panic leaves.
		panic(failure)
	}
	if hasRV {
		c.noteRVLocked(rv)
	}
}

// swapIfHeld puts equal under key if the store holds held there (the same
// pointer) and reports whether it did. equal must equal held in content:
// its index entries are held's, kept as they are, and no resource version
// is recorded (value sharing's compactor, internal/dedup/compactor.go).
func (c *threadSafeMap) swapIfHeld(key string, held, equal interface{}) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	id, ok := c.tab.lookup(key)
	if !ok || !sameObject(c.tab.objs[id], held) {
		return false
	}
	c.tab.objs[id] = equal
	return true
}

// Add stores obj under key. An index function that fails or panics on obj
// makes Add panic with client-go's message, naming the key and the index,
// once obj is stored: obj is filed in every other index, and the failing
// one keeps the key's old entries.
func (c *threadSafeMap) Add(key string, obj interface{}) {
	c.Update(key, obj)
}

// Update stores obj under key, as Add does.
func (c *threadSafeMap) Update(key string, obj interface{}) {
	c.put(key, obj)
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
	item, exists = c.tab.get(key)
	c.mu.RUnlock()
	return item, exists
}

// List returns every stored object.
func (c *threadSafeMap) List() []interface{} {
	return c.appendObjects([]interface{}{})
}

// appendObjects appends every stored object to dst: List into a buffer
// the caller reuses (the listers pool theirs). dst is grown once.
func (c *threadSafeMap) appendObjects(dst []interface{}) []interface{} {
	c.mu.RLock()
	out := append(slices.Grow(dst, c.tab.len()), c.tab.objs...)
	c.mu.RUnlock()
	yieldAfterBulkRead(len(out))
	return out
}

// ListKeys returns every key.
func (c *threadSafeMap) ListKeys() []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.tab.keyList()
}

// Transaction applies txns in order under one lock; the resource version
// of the last one is recorded. An index function that fails on an added or
// updated object stores that object as Add does and panics: the changes
// before it stay applied, none after it is, and no resource version is
// recorded.
func (c *threadSafeMap) Transaction(txns ...ThreadSafeStoreTransaction) {
	c.transaction(txns)
}

func (c *threadSafeMap) transaction(txns []ThreadSafeStoreTransaction) {
	if len(txns) == 0 {
		return
	}
	funcs := c.funcs.Load()
	width := len(funcs.fns)
	flat := make([]fnValues, len(txns)*width)
	vals := make([]indexValues, len(txns))
	for i, txn := range txns {
		if txn.Type != TransactionTypeDelete {
			vals[i] = computeIndexValues(funcs, txn.Object, flat[i*width:i*width:(i+1)*width])
		} else {
			vals[i] = indexValues{funcs: funcs}
		}
	}
	rv, hasRV := resourceVersionOf(txns[len(txns)-1].Object)
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, txn := range txns {
		switch txn.Type {
		case TransactionTypeAdd, TransactionTypeUpdate:
			// A failing index ends the transaction here, as in client-go:
			// the changes before it stay applied, none after it is.
			if failure := c.putLocked(txn.Key, txn.Object, vals[i]); failure != nil {
				panic(failure)
			}
		case TransactionTypeDelete:
			c.deleteLocked(txn.Key)
		}
		// Other types are ignored, as client-go ignores them.
	}
	if hasRV {
		c.noteRVLocked(rv)
	}
}

// Index returns the objects sharing any of obj's values in the named index,
// each once.
func (c *threadSafeMap) Index(indexName string, obj interface{}) ([]interface{}, error) {
	funcs := c.funcs.Load()
	i := funcs.index(indexName)
	if i < 0 {
		return nil, fmt.Errorf("Index with name %s does not exist", indexName)
	}
	v := runIndexFunc(funcs, i, funcs.fns[i], obj)
	if v.err != nil {
		return nil, v.err
	}
	c.mu.RLock()
	col := c.idx.column(indexName)
	if v.count == 1 {
		out := c.appendBucketLocked([]interface{}{}, col.bucketOf(v.one))
		c.mu.RUnlock()
		yieldAfterBulkRead(len(out))
		return out, nil
	}
	defer c.mu.RUnlock()
	seen := make(map[int32]struct{})
	out := []interface{}{}
	for j := 0; j < v.count; j++ {
		bk := col.bucketOf(v.at(j))
		if bk == nil {
			continue
		}
		for _, id := range bk.members {
			if _, dup := seen[id]; !dup {
				seen[id] = struct{}{}
				out = append(out, c.tab.objs[id])
			}
		}
	}
	return out, nil
}

// appendBucketLocked appends the objects of bk's members (none for a nil
// bucket) to dst, growing it once. The caller holds c.mu for reading.
func (c *threadSafeMap) appendBucketLocked(dst []interface{}, bk *bucket) []interface{} {
	if bk == nil {
		return dst
	}
	dst = slices.Grow(dst, len(bk.members))
	for _, id := range bk.members {
		dst = append(dst, c.tab.objs[id])
	}
	return dst
}

// ByIndex returns the objects filed under indexedValue in the named index.
func (c *threadSafeMap) ByIndex(indexName, indexedValue string) ([]interface{}, error) {
	out, err := c.appendIndexed([]interface{}{}, indexName, indexedValue)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// appendIndexed appends the objects ByIndex would return to dst: ByIndex
// into a buffer the caller reuses (the listers pool theirs).
func (c *threadSafeMap) appendIndexed(dst []interface{}, indexName, indexedValue string) ([]interface{}, error) {
	c.mu.RLock()
	col := c.idx.column(indexName)
	if col == nil {
		c.mu.RUnlock()
		return dst, fmt.Errorf("Index with name %s does not exist", indexName)
	}
	dst = c.appendBucketLocked(dst, col.bucketOf(indexedValue))
	c.mu.RUnlock()
	yieldAfterBulkRead(len(dst))
	return dst, nil
}

// yieldAfterBulkRead lets other goroutines run after a read that copied n
// objects, when n is large. Callers of big reads (listers over a namespace
// of thousands of objects) usually go on to filter what they got, a long
// stretch of CPU; several of them looping can keep the informer's own
// goroutines (which must write to this store) waiting for a whole
// scheduling slice. Yielding between the copy and the filtering bounds
// that wait to one read. It costs a fraction of a microsecond, against the
// microseconds the copy itself took.
func yieldAfterBulkRead(n int) {
	if n >= tuning.storeBulkRead {
		runtime.Gosched()
	}
}

// IndexKeys returns the keys filed under indexedValue in the named index,
// sorted, as the reference returns them. The sorted list is cached per
// value until its membership changes.
func (c *threadSafeMap) IndexKeys(indexName, indexedValue string) ([]string, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	col := c.idx.column(indexName)
	if col == nil {
		return nil, fmt.Errorf("Index with name %s does not exist", indexName)
	}
	bk := col.bucketOf(indexedValue)
	if bk == nil {
		return []string{}, nil
	}
	return bk.sortedKeys(&c.tab), nil
}

// ListIndexFuncValues returns every value of the named index; an unknown
// name yields an empty list.
func (c *threadSafeMap) ListIndexFuncValues(indexName string) []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	col := c.idx.column(indexName)
	if col == nil {
		return []string{}
	}
	return col.values()
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
	// An index function failing on a stored object does not stop the new
	// indexes from being added; it panics once they are, as in client-go,
	// where they are registered before the stored objects are indexed.
	// The first failing object is filed in the new indexes that succeeded
	// on it; later failing ones in none (client-go's loop stops at the
	// first failure, and map order lets it meet every other object first).
	filed := make([]indexValues, c.tab.len())
	var failure interface{}
	for id, obj := range c.tab.objs {
		filed[id] = computeIndexValues(added, obj, nil)
		if f := filed[id].failure(c.tab.keys[id]); f != nil {
			if failure == nil {
				failure = f
			} else {
				filed[id] = filed[id].cleared()
			}
		}
	}
	cols := make([]*indexColumn, len(funcs.names))
	for i, name := range funcs.names {
		if col := c.idx.column(name); col != nil {
			cols[i] = col
			continue
		}
		col := newIndexColumn()
		j := added.index(name)
		for id := range filed {
			col.first = append(col.first, link{bucket: unfiled})
			col.file(int32(id), filed[id].of(j))
		}
		cols[i] = col
	}
	c.idx = &indexSet{funcs: funcs, cols: cols}
	c.funcs.Store(funcs)
	if failure != nil {
		panic(failure)
	}
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

// resourceVersionOf returns obj's resource version, if it has metadata. A
// typed nil object has none (its accessor would panic).
func resourceVersionOf(obj interface{}) (rv string, ok bool) {
	defer func() {
		if recover() != nil {
			rv, ok = "", false
		}
	}()
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return "", false
	}
	return accessor.GetResourceVersion(), true
}

// Replace swaps the content for items and records resourceVersion. An
// index function that fails makes it panic once every item is stored
// (see replace).
func (c *threadSafeMap) Replace(items map[string]interface{}, resourceVersion string) {
	list := make([]keyedObject, 0, len(items))
	for key, obj := range items {
		list = append(list, keyedObject{key: key, obj: obj})
	}
	c.replace(list, resourceVersion)
}

// replace makes items (later duplicates of a key win) the whole content of
// the store and records resourceVersion. An index function that fails
// panics once the replacement is done, as client-go's rebuild of the
// indexes does after storing the items: every item is stored; the first
// failing one is filed in the indexes that succeeded on it (and no longer
// in the failing ones), later failing ones in none.
//
// It diffs instead of rebuilding: an item whose stored object is the very
// same value is left alone (its index values cannot have changed, and a
// relist that reuses cached objects makes this the common case), other
// items are stored as updates or inserts, and stored keys missing from
// items are deleted. Index functions run outside the lock, and only for
// the items that changed.
func (c *threadSafeMap) replace(items []keyedObject, resourceVersion string) {
	funcs := c.funcs.Load()
	same := c.unchangedItems(items)
	vals := computeChangedValues(funcs, items, same)
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(items) > c.tab.len() {
		c.tab.reserve(len(items))
		c.idx.reserve(len(items))
	}
	kept := newBitset(c.tab.len() + len(items))
	changed := 0
	var failure interface{}
	for i, it := range items {
		id, ok := c.tab.lookup(it.key)
		if ok && same.has(i) && sameObject(c.tab.objs[id], it.obj) {
			kept.set(int(id))
			continue
		}
		var v indexValues
		if !same.has(i) {
			v = vals[changed]
			changed++
		}
		// client-go rebuilds every index after storing the items, so a
		// failing index holds none of the failing item's entries, old or
		// new; and its rebuild stops at the first failure.
		if f := v.failure(it.key); f != nil {
			if failure == nil {
				failure, v = f, v.unfilingFailed()
			} else {
				v = v.cleared()
			}
		}
		if f := c.putLocked(it.key, it.obj, v); f != nil && failure == nil {
			failure = f
		}
		id, _ = c.tab.lookup(it.key)
		kept.set(int(id))
	}
	c.dropUnkeptLocked(kept)
	c.noteRVLocked(resourceVersion)
	if failure != nil {
		panic(failure)
	}
}

// unchangedItems marks the items the relist rule finds unchanged (their
// key already holds the very same object), under the read lock. Keys
// missing from items are the rule's deletions; a store drops them by slot
// (dropUnkeptLocked) and needs no tombstones.
func (c *threadSafeMap) unchangedItems(items []keyedObject) bitset {
	same := newBitset(len(items))
	c.mu.RLock()
	defer c.mu.RUnlock()
	relist(relistRun{
		items: items,
		held:  c.tab.get,
		each: func(i int, kind relistKind, _ interface{}) {
			if kind == relistUnchanged {
				same.set(i)
			}
		},
	})
	return same
}

// computeChangedValues computes the index values of the items not marked
// same, in order, in one flat allocation.
func computeChangedValues(funcs *indexFuncs, items []keyedObject, same bitset) []indexValues {
	n := len(items) - same.count()
	width := len(funcs.fns)
	flat := make([]fnValues, n*width)
	vals := make([]indexValues, 0, n)
	for i, it := range items {
		if same.has(i) {
			continue
		}
		k := len(vals)
		vals = append(vals, computeIndexValues(funcs, it.obj, flat[k*width:k*width:(k+1)*width]))
	}
	return vals
}

// dropUnkeptLocked deletes every stored object whose slot is not in kept.
// It walks down from the end: the slot moved into a removed one comes from
// above, where every slot left is kept. The caller holds c.mu for writing.
func (c *threadSafeMap) dropUnkeptLocked(kept bitset) {
	for id := c.tab.len() - 1; id >= 0; id-- {
		if !kept.has(id) {
			c.removeSlotLocked(int32(id))
		}
	}
}

// bitset is a fixed-size set of small non-negative integers.
type bitset []uint64

func newBitset(n int) bitset { return make(bitset, (n+63)/64) }

func (b bitset) set(i int)      { b[i/64] |= 1 << (i % 64) }
func (b bitset) has(i int) bool { return b[i/64]&(1<<(i%64)) != 0 }

func (b bitset) count() int {
	n := 0
	for _, w := range b {
		n += bits.OnesCount64(w)
	}
	return n
}
