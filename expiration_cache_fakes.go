package cache

import (
	"k8s.io/apimachinery/pkg/util/sets"
	clockpkg "k8s.io/utils/clock"
)

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
