package cache

import (
	"container/list"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/klog/v2"
	clockpkg "k8s.io/utils/clock"
)

// MutationCache overlays an informer's store with the objects its user
// wrote recently, so that a controller reads its own writes before the
// informer catches up. It remembers, for a bounded time and number of keys,
// the last object written per key (Mutation) and the objects the informer
// reported deleted (OnDelete), and answers reads with whichever of the
// store's copy and its own is newer.
//
// Reads may still return an older object than the caller wrote: entries
// expire and are evicted, and a key missing from the store is reported
// missing unless IncludeAdds is set. Every answer is a state the object had
// at some point. Implementations are safe for concurrent use; returned
// objects are shared and read-only. The interface has an unexported method:
// only this package implements it.
type MutationCache interface {
	// GetByKey returns the newer of the store's object and the cache's.
	GetByKey(key string) (interface{}, bool, error)
	// ByIndex returns the objects of the indexer's named index with the
	// value indexKey, each replaced by the cache's newer copy if any.
	ByIndex(indexName, indexKey string) ([]interface{}, error)
	// Mutation records an object the caller just wrote (created or
	// updated). An object older than the one recorded, or one the
	// informer already reported deleted, is ignored.
	Mutation(interface{})
	// OnAddOrUpdate tells the cache that the store now holds obj, which
	// makes an older or equal cached copy of it useless.
	OnAddOrUpdate(obj runtime.Object)
	// OnDelete tells the cache that obj was deleted, so a cached copy of
	// it, and later writes of the same or an older version, are dropped.
	OnDelete(obj runtime.Object)

	// mutationCacheOnly keeps implementations in this package, so methods
	// can be added without breaking anyone.
	mutationCacheOnly()
}

// ResourceVersionComparator orders two objects by resource version: less
// than zero when lhs is older than rhs, zero when they are the same
// version, more than zero when lhs is newer.
type ResourceVersionComparator interface {
	CompareResourceVersion(lhs, rhs runtime.Object) int
}

// MutationCacheOptions configures NewIntegerResourceVersionMutationCacheWithOptions.
type MutationCacheOptions struct {
	// Indexer serves ByIndex; without one, ByIndex fails.
	Indexer Indexer

	// TTL is how long a write or deletion is remembered; zero means five
	// minutes.
	TTL time.Duration

	// IncludeAdds makes reads return remembered objects that the store
	// does not have (yet), instead of reporting them missing. Such an
	// object may outlive its deletion by up to TTL if the informer never
	// saw it, so callers must tolerate that.
	IncludeAdds bool

	// MaxCacheSize bounds the number of remembered keys; the least
	// recently used are forgotten first. Zero means 100; a negative value
	// is a programming error and panics.
	MaxCacheSize int
}

// Defaults of MutationCacheOptions.
const (
	defaultMutationCacheTTL  = 5 * time.Minute
	defaultMutationCacheSize = 100
)

// NewIntegerResourceVersionMutationCacheWithOptions returns a MutationCache
// over backingCache for objects whose resource versions are decimal
// integers that grow with every change, comparable across the objects of a
// resource (etcd's revisions are). A resource version that is not such an
// integer makes the store's copy win. logger receives the errors of
// objects without a key.
//
// Wire OnAddOrUpdate and OnDelete to the informer's event handlers: they
// drop remembered objects as soon as the store has caught up, and keep a
// stale write from resurrecting a deleted object.
func NewIntegerResourceVersionMutationCacheWithOptions(logger klog.Logger, backingCache Store, options MutationCacheOptions) MutationCache {
	return newMutationCache(logger, backingCache, options, clockpkg.RealClock{})
}

// NewIntegerResourceVersionMutationCache is
// NewIntegerResourceVersionMutationCacheWithOptions with room for 100 keys.
func NewIntegerResourceVersionMutationCache(logger klog.Logger, backingCache Store, indexer Indexer, ttl time.Duration, includeAdds bool) MutationCache {
	return NewIntegerResourceVersionMutationCacheWithOptions(logger, backingCache, MutationCacheOptions{
		Indexer:      indexer,
		TTL:          ttl,
		IncludeAdds:  includeAdds,
		MaxCacheSize: defaultMutationCacheSize,
	})
}

// newMutationCache applies the option defaults and builds the cache on
// clock.
func newMutationCache(logger klog.Logger, backing Store, options MutationCacheOptions, clock clockpkg.PassiveClock) *mutationCache {
	if options.MaxCacheSize < 0 {
		panic(fmt.Sprintf("mutation cache: MaxCacheSize must not be negative, got %d", options.MaxCacheSize))
	}
	if options.TTL == 0 {
		options.TTL = defaultMutationCacheTTL
	}
	if options.MaxCacheSize == 0 {
		options.MaxCacheSize = defaultMutationCacheSize
	}
	return &mutationCache{
		recent:      newExpiringLRU[mutationRecord](options.MaxCacheSize, clock),
		logger:      logger,
		backing:     backing,
		indexer:     options.Indexer,
		ttl:         options.TTL,
		includeAdds: options.IncludeAdds,
	}
}

// mutationCache is the MutationCache of this package. The backing store
// and the indexer are read without mu held; mu covers only recent, and
// index functions run after it is released.
type mutationCache struct {
	// mu guards recent.
	mu sync.Mutex
	// recent maps keys to the last write or deletion seen for them.
	recent *expiringLRU[mutationRecord]

	logger      klog.Logger
	backing     Store
	indexer     Indexer
	ttl         time.Duration
	includeAdds bool
}

var _ MutationCache = (*mutationCache)(nil)

// mutationRecord is what the cache remembers about one key: a written
// object, or the fact that an object was deleted.
type mutationRecord struct {
	// obj is the written object; nil for a deletion.
	obj interface{}
	// deleted marks a deletion (a tombstone): never returned to callers.
	deleted bool
	// versioned says rv and uid are known: always for a deletion; for a
	// write, when obj is a runtime.Object with object metadata.
	versioned bool
	rv        string
	uid       types.UID
}

// writeRecord returns the record of a write of obj.
func writeRecord(obj interface{}) mutationRecord {
	rec := mutationRecord{obj: obj}
	if _, ok := obj.(runtime.Object); !ok {
		return rec
	}
	if accessor, err := meta.Accessor(obj); err == nil {
		rec.versioned, rec.rv, rec.uid = true, accessor.GetResourceVersion(), accessor.GetUID()
	}
	return rec
}

// compareIntegerRVs compares two resource versions as unsigned decimal
// integers, the empty string counting as zero. ok is false when either is
// not such an integer.
func compareIntegerRVs(a, b string) (cmp int, ok bool) {
	x, errA := parseIntegerRV(a)
	y, errB := parseIntegerRV(b)
	if errA != nil || errB != nil {
		return 0, false
	}
	switch {
	case x < y:
		return -1, true
	case x > y:
		return 1, true
	default:
		return 0, true
	}
}

// parseIntegerRV parses one resource version for compareIntegerRVs.
func parseIntegerRV(rv string) (uint64, error) {
	if rv == "" {
		return 0, nil
	}
	return strconv.ParseUint(rv, 10, 64)
}

// resourceVersionOfObject returns obj's resource version, if it has object
// metadata.
func resourceVersionOfObject(obj interface{}) (string, bool) {
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return "", false
	}
	return accessor.GetResourceVersion(), true
}

// GetByKey returns the store's object under key, or the remembered one if
// it is newer. A key the store lacks is missing, unless IncludeAdds is set
// and a write (not a deletion) is remembered for it.
func (c *mutationCache) GetByKey(key string) (interface{}, bool, error) {
	obj, exists, err := c.backing.GetByKey(key)
	if err != nil {
		return nil, false, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if exists {
		return c.newerLocked(key, obj), true, nil
	}
	if !c.includeAdds {
		return nil, false, nil
	}
	rec, ok := c.recent.get(key)
	if !ok || rec.deleted {
		return nil, false, nil
	}
	return rec.obj, true, nil
}

// newerLocked returns the newer of stored, the store's object under key,
// and the remembered write. A remembered entry that is not newer is
// forgotten, being useless. The caller holds c.mu.
func (c *mutationCache) newerLocked(key string, stored interface{}) interface{} {
	if _, ok := stored.(runtime.Object); !ok {
		return stored
	}
	storedRV, ok := resourceVersionOfObject(stored)
	if !ok {
		return stored
	}
	rec, ok := c.recent.get(key)
	if !ok || !rec.versioned {
		return stored
	}
	cmp, comparable := compareIntegerRVs(storedRV, rec.rv)
	switch {
	case !comparable || cmp >= 0:
		c.recent.remove(key)
		return stored
	case rec.deleted:
		// The store lags behind a deletion; it is still the best answer.
		return stored
	default:
		return rec.obj
	}
}

// ByIndex returns the objects the indexer files under indexKey in the
// named index, each replaced by a newer remembered write. With
// IncludeAdds, remembered writes the indexer lacks follow, oldest first,
// if the index function files them under indexKey; one it fails on is
// skipped and logged.
func (c *mutationCache) ByIndex(indexName, indexKey string) ([]interface{}, error) {
	if c.indexer == nil {
		return nil, errors.New("no indexer has been provided to the mutation cache")
	}
	keys, err := c.indexer.IndexKeys(indexName, indexKey)
	if err != nil {
		return nil, err
	}
	type keyed struct {
		key string
		obj interface{}
	}
	stored := make([]keyed, 0, len(keys))
	for _, key := range keys {
		obj, exists, err := c.indexer.GetByKey(key)
		if err != nil {
			return nil, err
		}
		if exists {
			stored = append(stored, keyed{key, obj})
		}
	}

	var indexed map[string]struct{}
	if c.includeAdds {
		indexed = make(map[string]struct{}, len(keys))
		for _, key := range keys {
			indexed[key] = struct{}{}
		}
		if releaseBehaviour.mutationCacheSkipsVanished {
			clear(indexed)
			for _, s := range stored {
				indexed[s.key] = struct{}{}
			}
		}
	}

	items := make([]interface{}, 0, len(stored))
	var onlyRemembered []interface{}
	c.mu.Lock()
	for _, s := range stored {
		items = append(items, c.newerLocked(s.key, s.obj))
	}
	if c.includeAdds {
		onlyRemembered = c.rememberedWritesLocked(indexed)
	}
	c.mu.Unlock()

	if len(onlyRemembered) == 0 {
		return items, nil
	}
	indexFunc := c.indexer.GetIndexers()[indexName]
	if indexFunc == nil {
		return items, nil
	}
	for _, obj := range onlyRemembered {
		values, err := callIndexFunc(indexFunc, obj)
		if err != nil {
			c.logger.V(4).Info("Skipping a remembered write the index function fails on", "index", indexName, "err", err)
			continue
		}
		if slices.Contains(values, indexKey) {
			items = append(items, obj)
		}
	}
	return items, nil
}

// rememberedWritesLocked returns the remembered writes, oldest first, whose
// keys are not in skip. Reading them refreshes their recency in the same
// order, so the LRU order is kept. The caller holds c.mu.
func (c *mutationCache) rememberedWritesLocked(skip map[string]struct{}) []interface{} {
	var out []interface{}
	for _, key := range c.recent.keysOldestFirst() {
		if _, found := skip[key]; found {
			continue
		}
		rec, ok := c.recent.get(key)
		if !ok || rec.deleted {
			continue
		}
		out = append(out, rec.obj)
	}
	return out
}

// Mutation remembers obj as the latest write of its key, unless the cache
// knows it is stale: an older write is remembered, or the same version or
// the same object (by UID) was reported deleted. An object without a key
// is reported to the logger and ignored.
func (c *mutationCache) Mutation(obj interface{}) {
	key, err := DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		utilruntime.HandleErrorWithLogger(c.logger, err, "Mutation cache ignores an object without a key")
		return
	}
	rec := writeRecord(obj)
	c.mu.Lock()
	defer c.mu.Unlock()
	if prev, ok := c.recent.get(key); ok && rec.versioned && prev.versioned && isStaleWrite(rec, prev) {
		return
	}
	c.recent.add(key, rec, c.ttl)
}

// isStaleWrite reports whether the write rec must not replace prev, both
// versioned.
func isStaleWrite(rec, prev mutationRecord) bool {
	cmp, comparable := compareIntegerRVs(rec.rv, prev.rv)
	if comparable && cmp < 0 {
		return true
	}
	if !prev.deleted {
		return false
	}
	return comparable && cmp == 0 || rec.uid == prev.uid
}

// OnAddOrUpdate forgets the remembered write or deletion of obj's key if
// obj is at least as new: the store has caught up. A resource version
// that cannot be compared also lets the store win.
func (c *mutationCache) OnAddOrUpdate(obj runtime.Object) {
	key, err := DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		utilruntime.HandleErrorWithLogger(c.logger, err, "Mutation cache ignores an object without a key")
		return
	}
	rv, _ := resourceVersionOfObject(obj)
	c.mu.Lock()
	defer c.mu.Unlock()
	prev, ok := c.recent.get(key)
	if !ok || !prev.versioned {
		return
	}
	if cmp, comparable := compareIntegerRVs(rv, prev.rv); !comparable || cmp >= 0 {
		c.recent.remove(key)
	}
}

// OnDelete remembers that obj was deleted, replacing a remembered write of
// the same object (same UID) or of an older or equal version. A remembered
// write that is newer and of another UID is kept: it may be an object the
// caller created after the deletion. Objects without metadata are ignored.
func (c *mutationCache) OnDelete(obj runtime.Object) {
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	key, err := DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		utilruntime.HandleErrorWithLogger(c.logger, err, "Mutation cache ignores an object without a key")
		return
	}
	tombstone := mutationRecord{deleted: true, versioned: true, rv: accessor.GetResourceVersion(), uid: accessor.GetUID()}
	c.mu.Lock()
	defer c.mu.Unlock()
	if prev, ok := c.recent.get(key); ok && prev.versioned {
		cmp, comparable := compareIntegerRVs(tombstone.rv, prev.rv)
		supersedes := !comparable || cmp >= 0 || prev.uid == tombstone.uid
		if !supersedes {
			return
		}
	}
	c.recent.add(key, tombstone, c.ttl)
}

// mutationCacheOnly marks the implementation.
func (c *mutationCache) mutationCacheOnly() {}

// expiringLRU is a bounded map whose entries also expire: the lock-free
// core of mutationCache. Adding to a full map evicts the least recently
// used entry; get counts as a use, and removes an entry found expired. An
// entry is valid up to and including its expiry instant.
//
// Invariant: items and order hold the same entries; order runs from the
// most recently used (front) to the least (back).
type expiringLRU[V any] struct {
	capacity int
	clock    clockpkg.PassiveClock
	items    map[string]*list.Element
	order    list.List
}

// lruEntry is one entry of an expiringLRU.
type lruEntry[V any] struct {
	key     string
	value   V
	expires time.Time
}

// newExpiringLRU returns an empty map holding at most capacity (> 0)
// entries, reading time from clock.
func newExpiringLRU[V any](capacity int, clock clockpkg.PassiveClock) *expiringLRU[V] {
	return &expiringLRU[V]{capacity: capacity, clock: clock, items: map[string]*list.Element{}}
}

// add stores value under key for ttl, as the most recently used entry.
func (l *expiringLRU[V]) add(key string, value V, ttl time.Duration) {
	expires := l.clock.Now().Add(ttl)
	if el, ok := l.items[key]; ok {
		entry := el.Value.(*lruEntry[V])
		entry.value, entry.expires = value, expires
		l.order.MoveToFront(el)
		return
	}
	if l.order.Len() >= l.capacity {
		l.removeElement(l.order.Back())
	}
	l.items[key] = l.order.PushFront(&lruEntry[V]{key: key, value: value, expires: expires})
}

// get returns the value under key and marks it most recently used; an
// expired entry is removed and reported absent.
func (l *expiringLRU[V]) get(key string) (V, bool) {
	el, ok := l.items[key]
	if !ok {
		var zero V
		return zero, false
	}
	entry := el.Value.(*lruEntry[V])
	if l.clock.Now().After(entry.expires) {
		l.removeElement(el)
		var zero V
		return zero, false
	}
	l.order.MoveToFront(el)
	return entry.value, true
}

// remove drops the entry under key, if any.
func (l *expiringLRU[V]) remove(key string) {
	if el, ok := l.items[key]; ok {
		l.removeElement(el)
	}
}

// removeElement drops one entry.
func (l *expiringLRU[V]) removeElement(el *list.Element) {
	delete(l.items, el.Value.(*lruEntry[V]).key)
	l.order.Remove(el)
}

// keysOldestFirst returns the keys of the unexpired entries from the least
// to the most recently used, without marking any as used.
func (l *expiringLRU[V]) keysOldestFirst() []string {
	now := l.clock.Now()
	keys := make([]string, 0, l.order.Len())
	for el := l.order.Back(); el != nil; el = el.Prev() {
		entry := el.Value.(*lruEntry[V])
		if !now.After(entry.expires) {
			keys = append(keys, entry.key)
		}
	}
	return keys
}
