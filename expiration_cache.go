package cache

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
	clockpkg "k8s.io/utils/clock"
)

// ExpirationCache is a Store whose entries expire. Every write stamps the
// object with the cache clock's time; an ExpirationPolicy then decides,
// whenever an entry is read, whether it is still valid. Expired entries are
// removed when a read finds them (Get, GetByKey, List), not in the
// background, so ListKeys may still name keys whose entries expired but
// were not read since.
//
// Reads of valid entries take no lock of the cache itself. Removing an
// expired entry and every write take the cache's lock, and the entry is
// checked again under it, so a write racing with an expiry is never lost.
// Objects returned are the stored ones: treat them as read-only.
type ExpirationCache struct {
	// mu serialises writes with the removal of expired entries. Reads
	// that find only valid entries do not take it.
	mu sync.Mutex
	// entries holds one *TimestampedEntry per key. It has its own lock and
	// tracks the newest resource version seen.
	entries ThreadSafeStore

	keyFunc KeyFunc
	clock   clockpkg.Clock
	policy  ExpirationPolicy
	// onExpired, if not nil, is called with mu held after an expired entry
	// was removed. Only the test fake sets it.
	onExpired func(key string)
}

var _ Store = (*ExpirationCache)(nil)

// ExpirationPolicy decides whether an entry of an ExpirationCache has
// expired. It is called on reads, possibly concurrently and more than once
// per entry, so it must be quick and must not call the cache.
type ExpirationPolicy interface {
	IsExpired(obj *TimestampedEntry) bool
}

// TTLPolicy expires entries older than TTL by Clock. A TTL of zero or less
// keeps entries forever. A nil Clock means the real clock.
type TTLPolicy struct {
	TTL time.Duration

	Clock clockpkg.Clock
}

// IsExpired reports whether more than TTL has passed since the entry was
// stamped.
func (p *TTLPolicy) IsExpired(obj *TimestampedEntry) bool {
	if p.TTL <= 0 {
		return false
	}
	clock := p.Clock
	if clock == nil {
		clock = clockpkg.RealClock{}
	}
	return clock.Since(obj.Timestamp) > p.TTL
}

// TimestampedEntry is an object of an ExpirationCache with the time it was
// written, by the cache's clock. Timestamps are local: don't compare them
// with times from another machine, such as an API server's.
type TimestampedEntry struct {
	Obj       interface{}
	Timestamp time.Time
	// key is the store key of Obj.
	key string
}

// NewTTLStore returns an ExpirationCache whose entries expire ttl after
// they were written, by the real clock.
func NewTTLStore(keyFunc KeyFunc, ttl time.Duration) Store {
	return NewExpirationStore(keyFunc, &TTLPolicy{TTL: ttl, Clock: clockpkg.RealClock{}})
}

// NewExpirationStore returns an ExpirationCache that stamps entries with
// the real clock and expires them by expirationPolicy. A nil policy never
// expires anything.
func NewExpirationStore(keyFunc KeyFunc, expirationPolicy ExpirationPolicy) Store {
	return newExpirationCache(keyFunc, expirationPolicy, clockpkg.RealClock{}, nil)
}

// newExpirationCache is the one constructor behind NewExpirationStore and
// NewFakeExpirationStore.
func newExpirationCache(keyFunc KeyFunc, policy ExpirationPolicy, clock clockpkg.Clock, onExpired func(string)) *ExpirationCache {
	if policy == nil {
		policy = neverExpire{}
	}
	if clock == nil {
		clock = clockpkg.RealClock{}
	}
	return &ExpirationCache{
		entries:   NewThreadSafeStore(Indexers{}, Indices{}),
		keyFunc:   keyFunc,
		clock:     clock,
		policy:    policy,
		onExpired: onExpired,
	}
}

// neverExpire is the ExpirationPolicy used when none is given.
type neverExpire struct{}

// IsExpired always says no.
func (neverExpire) IsExpired(*TimestampedEntry) bool { return false }

// keyOf computes obj's key, reporting a failure (or a panic of the key
// function) as a KeyError.
func (c *ExpirationCache) keyOf(obj interface{}) (string, error) {
	key, err := callKeyFunc(c.keyFunc, obj)
	if err != nil {
		return "", KeyError{Obj: obj, Err: err}
	}
	return key, nil
}

// entryOf returns the entry stored under key.
func (c *ExpirationCache) entryOf(key string) (*TimestampedEntry, bool) {
	item, ok := c.entries.Get(key)
	if !ok {
		return nil, false
	}
	entry, ok := item.(*TimestampedEntry)
	return entry, ok
}

// validEntry returns the object under key if its entry has not expired. An
// expired entry is removed.
func (c *ExpirationCache) validEntry(key string) (interface{}, bool) {
	entry, ok := c.entryOf(key)
	if !ok {
		return nil, false
	}
	if !c.policy.IsExpired(entry) {
		return entry.Obj, true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.expireLocked(key)
}

// expireLocked checks the entry under key again and removes it if it is
// still expired; a write may have replaced it since it was first checked.
// It returns the object if the entry is valid after all. The caller holds
// c.mu.
func (c *ExpirationCache) expireLocked(key string) (interface{}, bool) {
	entry, ok := c.entryOf(key)
	if !ok {
		return nil, false
	}
	if !c.policy.IsExpired(entry) {
		return entry.Obj, true
	}
	c.entries.Delete(key)
	if c.onExpired != nil {
		c.onExpired(key)
	}
	return nil, false
}

// Get returns the object stored under obj's key, unless its entry expired.
func (c *ExpirationCache) Get(obj interface{}) (interface{}, bool, error) {
	key, err := c.keyOf(obj)
	if err != nil {
		return nil, false, err
	}
	item, ok := c.validEntry(key)
	return item, ok, nil
}

// GetByKey returns the object stored under key, unless its entry expired.
// It never fails.
func (c *ExpirationCache) GetByKey(key string) (interface{}, bool, error) {
	item, ok := c.validEntry(key)
	return item, ok, nil
}

// List returns the objects whose entries have not expired, in no
// particular order, and removes the expired entries.
func (c *ExpirationCache) List() []interface{} {
	items := c.entries.List()
	out := make([]interface{}, 0, len(items))
	var expired []string
	for _, item := range items {
		entry, ok := item.(*TimestampedEntry)
		if !ok {
			continue
		}
		if c.policy.IsExpired(entry) {
			expired = append(expired, entry.key)
			continue
		}
		out = append(out, entry.Obj)
	}
	if len(expired) == 0 {
		return out
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, key := range expired {
		if obj, ok := c.expireLocked(key); ok {
			out = append(out, obj)
		}
	}
	return out
}

// ListKeys returns every stored key, including those of expired entries
// that no read has removed yet.
func (c *ExpirationCache) ListKeys() []string {
	return c.entries.ListKeys()
}

// Add stamps obj with the current time and stores it, replacing any entry
// under its key.
func (c *ExpirationCache) Add(obj interface{}) error {
	key, err := c.keyOf(obj)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries.Add(key, &TimestampedEntry{Obj: obj, Timestamp: c.clock.Now(), key: key})
	return nil
}

// Update is Add: it stores obj with a fresh timestamp.
func (c *ExpirationCache) Update(obj interface{}) error {
	return c.Add(obj)
}

// Delete removes the entry under obj's key; an absent key is not an error.
func (c *ExpirationCache) Delete(obj interface{}) error {
	key, err := c.keyOf(obj)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries.DeleteWithObject(key, obj)
	return nil
}

// Replace swaps the whole content for list, every object stamped with the
// same current time, and records resourceVersion. If a key cannot be
// computed, nothing changes. The cache takes list over.
func (c *ExpirationCache) Replace(list []interface{}, resourceVersion string) error {
	now := c.clock.Now()
	items := make(map[string]interface{}, len(list))
	for _, obj := range list {
		key, err := c.keyOf(obj)
		if err != nil {
			return err
		}
		items[key] = &TimestampedEntry{Obj: obj, Timestamp: now, key: key}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries.Replace(items, resourceVersion)
	return nil
}

// Resync does nothing: a cache has nothing to resync.
func (c *ExpirationCache) Resync() error {
	return nil
}

// Bookmark records rv as the newest resource version seen.
func (c *ExpirationCache) Bookmark(rv string) {
	c.entries.Bookmark(rv)
}

// LastStoreSyncResourceVersion returns the newest resource version seen
// through Replace, Bookmark or Delete.
func (c *ExpirationCache) LastStoreSyncResourceVersion() string {
	return c.entries.LastStoreSyncResourceVersion()
}

// FakeExpirationPolicy is an ExpirationPolicy for tests: every entry has
// expired except those whose key is in NeverExpire. RetrieveKeyFunc
// computes the key from the *TimestampedEntry itself; when it is nil, the
// entry's store key is used.
type FakeExpirationPolicy struct {
	NeverExpire     sets.Set[string]
	RetrieveKeyFunc KeyFunc
}

// IsExpired reports whether the entry's key is missing from NeverExpire. A
// key that cannot be computed counts as "".
func (p *FakeExpirationPolicy) IsExpired(obj *TimestampedEntry) bool {
	key := obj.key
	if p.RetrieveKeyFunc != nil {
		key, _ = p.RetrieveKeyFunc(obj)
	}
	return !p.NeverExpire.Has(key)
}

// NewFakeExpirationStore returns an ExpirationCache for tests: it stamps
// entries with cacheClock, expires them by expirationPolicy, and sends the
// key of every entry it removes because it expired on deletedKeys (not
// those removed by Delete or Replace). The send happens while the cache's
// lock is held, so deletedKeys must be buffered or read concurrently, or
// the cache blocks. A nil deletedKeys reports nothing.
func NewFakeExpirationStore(keyFunc KeyFunc, deletedKeys chan<- string, expirationPolicy ExpirationPolicy, cacheClock clockpkg.Clock) Store {
	var onExpired func(string)
	if deletedKeys != nil {
		onExpired = func(key string) { deletedKeys <- key }
	}
	return newExpirationCache(keyFunc, expirationPolicy, cacheClock, onExpired)
}
