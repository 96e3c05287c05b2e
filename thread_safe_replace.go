package cache

import "math/bits"

// Replace swaps the content for items and records resourceVersion. Index
// failures are logged per key.
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
