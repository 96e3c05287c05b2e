package dedup

import (
	"hash/maphash"
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"
	"weak"
)

// This file is the table of shared values: its stripes and entries, the
// trial of each position (site) and the filter of values seen once.

// mix folds the word x into the hash h: a 64x64->128-bit multiply whose two
// halves are folded, so that every bit of the input reaches every bit of
// the result (a plain multiply carries no high bit down, and two sign flips
// of floats would cancel).
func mix(h, x uint64) uint64 {
	hi, lo := bits.Mul64(h^x, hashMultiplier)
	return hi ^ lo
}

// Hash constants: the multiplier (odd, with its bits spread) and the
// hashes of the empty cases and seeds of the composite ones.
const (
	hashMultiplier = 0x9e3779b97f4a7c15
	hashOffset     = 0xcbf29ce484222325

	hashTrue      = 1
	hashFalse     = 2
	hashNilPtr    = 3
	hashNilIface  = 7
	hashNilSlice  = 10
	hashNilMap    = 12
	hashPtrSeed   = hashOffset + 4
	hashStruct    = hashOffset + 5
	hashArray     = hashOffset + 6
	hashAddress   = hashOffset + 8
	hashSliceSeed = hashOffset + 11
	hashMapSeed   = hashOffset + 13
)

// dedupStripes spreads the table over this many locks.
const dedupStripes = 32

// The trial of a position is ruled by tuning's siteTrial, siteMinHitRate
// and siteMaxBackoff (tuning.go).

// maxDedupDepth bounds the walk; deeper values are hashed by address and
// not shared (API objects are nowhere near it).
const maxDedupDepth = 64

// Table is the table of one informer's shared values: what Share and
// ShareUpdate point equal parts at, and what a Guard checks. Safe for
// concurrent use. Values are shared only within one table, and only at the
// same position of objects of the same type.
type Table struct {
	seed    maphash.Seed
	stripes [dedupStripes]dedupStripe
	// plans caches a *typePlan per reflect.Type (plan.go); planMu
	// serializes the making of new plans and guards lastPlanID.
	plans      sync.Map
	planMu     sync.Mutex
	lastPlanID uint64
	// seen holds the keys of values seen once, not yet in the table
	// (below).
	seen atomic.Pointer[seenFilter]
}

// dedupStripe is one lock's part of the table.
type dedupStripe struct {
	// mu guards table and peak.
	mu sync.Mutex
	// table is keyed by dedupKey.fold: a hash key is the cheapest to
	// look up; the entry holds the whole key to confirm it.
	table map[uint64]dedupEntry
	// peak is the most entries table held since it was last rebuilt.
	peak int
	// dropped is the cleanup of this stripe's values, made once.
	dropped func(uint64)
}

// dedupEntry is a shared value, the key it was kept under, and the depth
// it was found at, which the guard (guard.go) needs to hash it again.
type dedupEntry struct {
	key   dedupKey
	depth int
	p     weak.Pointer[byte]
}

// dedupKey identifies a value by its type (the ID of its plan; 0 for every
// string), its position (the hash of its field path), its content hash and
// its length (of a string or slice; 0 otherwise).
type dedupKey struct {
	plan, pos, hash uint64
	n               int
}

// fold makes one word of k, the table's key.
func (k dedupKey) fold() uint64 {
	return mix(mix(mix(k.hash, k.pos), k.plan), uint64(k.n))
}

// stripeFor returns the stripe holding key k.
func (s *Table) stripeFor(k uint64) *dedupStripe { return &s.stripes[k%dedupStripes] }

// site counts the lookups made for values at one position (a struct field,
// or the elements, keys or values of one container type) and how many found
// an equal value, to stop looking where that rarely happens. A site that
// failed its trial is tried again after skipping siteTrial values, then
// twice, four times as many and so on (up to 1<<siteMaxBackoff times;
// tuning.go): values may start to repeat later (the conditions of pods
// created together, listed after others that were not).
type site struct {
	lookups, hits atomic.Int64
	off           atomic.Bool
	// skipped counts the values passed over since the site went off;
	// failures counts its failed trials.
	skipped, failures atomic.Int64
}

// enabled reports whether values at the site are looked up; an off site
// counts the value as skipped, and starts a new trial once it has skipped
// enough.
func (s *site) enabled() bool {
	if !s.off.Load() {
		return true
	}
	wait := int64(tuning.siteTrial) << min(s.failures.Load(), int64(tuning.siteMaxBackoff))
	if s.skipped.Add(1) < wait {
		return false
	}
	s.skipped.Store(0)
	s.hits.Store(0)
	s.lookups.Store(0)
	s.off.Store(false)
	return true
}

// record counts a lookup during the site's trial and ends the trial after
// siteTrial of them; afterwards it counts nothing (the counters are shared
// by every walk, and writing them costs more than the lookup).
func (s *site) record(hit bool) {
	if s.lookups.Load() >= int64(tuning.siteTrial) {
		return
	}
	if hit {
		s.hits.Add(1)
	}
	if n := s.lookups.Add(1); n == int64(tuning.siteTrial) && s.hits.Load()*int64(tuning.siteMinHitRate) < n {
		s.failures.Add(1)
		s.off.Store(true)
	}
}

// Options tune a new Table; the zero value is what informers use.
type Options struct {
	// ShareFirstSighting shares a value from the first time it is seen,
	// instead of from the second (no filter of values seen once): the
	// first object then gives up its own copy too. For tests that study
	// sharing on a handful of objects.
	ShareFirstSighting bool
}

// New returns an empty table.
func New(o Options) *Table {
	s := &Table{seed: maphash.MakeSeed()}
	s.seen.Store(newSeenFilter(tuning.seenMinBits))
	for i := range s.stripes {
		st := &s.stripes[i]
		st.table = make(map[uint64]dedupEntry)
		st.dropped = st.dropDead
	}
	if o.ShareFirstSighting {
		s.seen.Store(&seenFilter{})
	}
	return s
}

// lookup returns the live shared value for key, or nil.
func (st *dedupStripe) lookup(key dedupKey) *byte {
	st.mu.Lock()
	e, ok := st.table[key.fold()]
	st.mu.Unlock()
	if !ok || e.key != key {
		return nil
	}
	return e.p.Value()
}

// insert makes p, found at depth, the shared value for key unless a live
// one is there (a collision: the first stays). When p is no longer used,
// its entry goes (dropDead).
func (st *dedupStripe) insert(key dedupKey, depth int, p *byte) {
	k := key.fold()
	st.mu.Lock()
	defer st.mu.Unlock()
	if old, ok := st.table[k]; ok && old.p.Value() != nil {
		return
	}
	st.table[k] = dedupEntry{key: key, depth: depth, p: weak.Make(p)}
	st.peak = max(st.peak, len(st.table))
	runtime.AddCleanup(p, st.dropped, k)
}

// drop removes the entry e from the table, if it is still there.
func (st *dedupStripe) drop(e dedupEntry) {
	k := e.key.fold()
	st.mu.Lock()
	defer st.mu.Unlock()
	if cur, ok := st.table[k]; ok && cur.p == e.p {
		delete(st.table, k)
	}
}

// snapshot appends the stripe's entries of values other than strings to
// out.
func (st *dedupStripe) snapshot(out []dedupEntry) []dedupEntry {
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, e := range st.table {
		if e.key.plan != 0 {
			out = append(out, e)
		}
	}
	return out
}

// shrinkBelow is the fraction of its peak a stripe's table shrinks to
// before it is rebuilt (a Go map keeps the memory of its largest size), and
// shrinkMin the peak below which it never is.
const (
	shrinkBelow = 4
	shrinkMin   = 256
)

// dropDead is the cleanup of a value kept under the table key k: the
// entry goes, unless a live value took its place. A table that has shrunk
// to a fraction of its peak is rebuilt, to return its memory.
func (st *dedupStripe) dropDead(k uint64) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if e, ok := st.table[k]; ok && e.p.Value() == nil {
		delete(st.table, k)
	}
	if st.peak < shrinkMin || len(st.table)*shrinkBelow > st.peak {
		return
	}
	fresh := make(map[uint64]dedupEntry, len(st.table))
	for k, e := range st.table {
		fresh[k] = e
	}
	st.table, st.peak = fresh, len(fresh)
}

// A table's memory of values seen once.
//
// Most values at a position that repeats still occur once: a pod's own
// managedFields entry beside its ReplicaSet's applier entry, the labels of
// a pod that differ from its siblings'. Keeping each of them in the table
// costs a copy, an entry, a weak pointer and a cleanup, and the guard
// re-hashes it every round, for a value no other object will ever share. So
// a value's key goes first into a small filter of bits; only when a value
// of the same key comes again (a second object, or the filter wrongly
// saying so) does the value become a table entry, shared from then on. The
// first object keeps its own copy: one duplicate per shared value.
//
// The filter never forgets a key by itself. When a quarter of its bits are
// set it is replaced by an empty one twice as large (up to tuning.seenMaxBits),
// or by an empty one of the same size at that bound: keys seen once before
// then need a third sighting.

// seenFilter is a set of keys that may say a key is in it when it is not
// (a Bloom filter with two bits per key), never the other way round. Safe
// for concurrent use: bits are set atomically.
type seenFilter struct {
	words []atomic.Uint64
	// set counts the bits set; mask picks a bit number from a hash.
	set  atomic.Int64
	mask uint64
}

func newSeenFilter(nbits int) *seenFilter {
	return &seenFilter{words: make([]atomic.Uint64, nbits/64), mask: uint64(nbits - 1)}
}

// sawBefore reports whether k was (probably) added before, and adds it.
func (f *seenFilter) sawBefore(k uint64) bool {
	first := f.setBit(k & f.mask)
	second := f.setBit(bits.RotateLeft64(k, 32) & f.mask)
	return !first && !second
}

// setBit sets bit i and reports whether it was clear.
func (f *seenFilter) setBit(i uint64) bool {
	w, b := &f.words[i/64], uint64(1)<<(i%64)
	if w.Load()&b != 0 {
		return false
	}
	if w.Or(b)&b != 0 {
		return false
	}
	f.set.Add(1)
	return true
}

// full reports whether a quarter of the filter's bits are set, past which
// it says "seen" too often to be worth keeping.
func (f *seenFilter) full() bool {
	return len(f.words) > 0 && f.set.Load()*4 >= int64(len(f.words)*64)
}

// admit records that a value of key k, not in the table, is seen now, and
// says whether it is to be put in the table (insert) and whether a value
// of that key was (probably) seen before (repeated, a hit of its
// position's trial). A filter without bits (tests that study sharing
// itself) admits every value at once, as a miss.
func (s *Table) admit(k uint64) (insert, repeated bool) {
	f := s.seen.Load()
	if len(f.words) == 0 {
		return true, false
	}
	saw := f.sawBefore(k)
	if f.full() {
		s.seen.CompareAndSwap(f, newSeenFilter(min(len(f.words)*64*2, tuning.seenMaxBits)))
	}
	return saw, saw
}
