package cache

import (
	"hash/maphash"
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"
	"weak"
)

// This file makes equal parts of cached objects one in memory.
//
// Objects of one kind repeat themselves: the pods of a ReplicaSet carry the
// same labels, containers' env, resources and probes, the same
// ownerReference and the same managedFields entry of their applier, yet each
// decoded pod holds its own copy of all of it. A valueSharer walks an object
// once, bottom-up, when it enters the cache, and points every pointer, slice,
// map and string field whose content equals a value already cached at the
// same position at that one value. Nothing is removed or changed: the
// object stays byte for byte what was decoded, only its parts are no
// longer private to it.
//
// Scope. Each informer (each queue made by newInformerQueue) has its own
// valueSharer, and a value is shared only with values at the same position:
// the same field path from the object's root (share_walk.go's position),
// the same type. Nothing joins two informers, two types or two fields.
//
// Exactness. Values are found by a content hash computed during the walk
// and confirmed by an exact comparison (share_equal.go: floats by their
// bits, NaN never), so a hash collision costs sharing, never correctness.
//
// Reads never write shared memory. A struct with unexported state (such as
// resource.Quantity, whose String fills a cached string) is never shared
// whole, nor is a pointer, slice or map through which a reader could reach
// one by address (share_plan.go's hidden and exposes).
//
// Memory. The table holds weak pointers, and each value it holds carries a
// cleanup that drops its entry when the last object using it goes.
// Positions whose values are rarely equal to another (names, UIDs, IPs,
// container IDs) stop being looked up after a trial, so per-object unique
// content costs no table entries.
//
// A pointer or slice at a position still looked up is looked up whole,
// by a hash of its content, before its parts are walked: when it equals a
// shared value, it is replaced at once and nothing is copied for its
// parts. Only values that end up in the cache are ever copied.
//
// Hazard: a caller that modifies a cached object (against the contract,
// caught by KUBE_CACHE_MUTATION_DETECTOR) now modifies every object of the
// same informer sharing the modified part. Shared slices are handed out with
// their capacity cut to their length, so an append never writes into
// another object's backing array. A DeepCopy is as independent as ever.

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

// shareStripes spreads the table over this many locks.
const shareStripes = 32

// Trial of a position: after siteTrial lookups, a position whose lookups
// found an equal value less than once in siteMinHitRate is no longer looked
// up.
const (
	siteTrial      = 512
	siteMinHitRate = 8
)

// maxShareDepth bounds the walk; deeper values are hashed by address and
// not shared (API objects are nowhere near it).
const maxShareDepth = 64

// valueSharer is the table of one informer's shared values. Safe for
// concurrent use.
type valueSharer struct {
	seed    maphash.Seed
	stripes [shareStripes]shareStripe
	// plans caches a *typePlan per reflect.Type (share_plan.go); planMu
	// serializes the making of new plans and guards lastPlanID.
	plans      sync.Map
	planMu     sync.Mutex
	lastPlanID uint64
}

// shareStripe is one lock's part of the table.
type shareStripe struct {
	// mu guards table and peak.
	mu sync.Mutex
	// table is keyed by shareKey.fold: a hash key is the cheapest to
	// look up; the entry holds the whole key to confirm it.
	table map[uint64]shareEntry
	// peak is the most entries table held since it was last rebuilt.
	peak int
	// dropped is the cleanup of this stripe's values, made once.
	dropped func(uint64)
}

// shareEntry is a shared value, the key it was kept under, and the depth
// it was found at, which the guard (share_guard.go) needs to hash it again.
type shareEntry struct {
	key   shareKey
	depth int
	p     weak.Pointer[byte]
}

// shareKey identifies a value by its type (the ID of its plan; 0 for every
// string), its position (the hash of its field path), its content hash and
// its length (of a string or slice; 0 otherwise).
type shareKey struct {
	plan, pos, hash uint64
	n               int
}

// fold makes one word of k, the table's key.
func (k shareKey) fold() uint64 {
	return mix(mix(mix(k.hash, k.pos), k.plan), uint64(k.n))
}

// stripeFor returns the stripe holding key k.
func (s *valueSharer) stripeFor(k uint64) *shareStripe { return &s.stripes[k%shareStripes] }

// site counts the lookups made for values at one position (a struct field,
// or the elements, keys or values of one container type) and how many found
// an equal value, to stop looking where that rarely happens. A site that
// failed its trial is tried again after skipping siteTrial values, then
// twice, four times as many and so on (up to 64 times): values may start
// to repeat later (the conditions of pods created together, listed after
// others that were not).
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
	wait := int64(siteTrial) << min(s.failures.Load(), siteMaxBackoff)
	if s.skipped.Add(1) < wait {
		return false
	}
	s.skipped.Store(0)
	s.hits.Store(0)
	s.lookups.Store(0)
	s.off.Store(false)
	return true
}

// siteMaxBackoff bounds the doubling of the values an off site skips.
const siteMaxBackoff = 6

// record counts a lookup during the site's trial and ends the trial after
// siteTrial of them; afterwards it counts nothing (the counters are shared
// by every walk, and writing them costs more than the lookup).
func (s *site) record(hit bool) {
	if s.lookups.Load() >= siteTrial {
		return
	}
	if hit {
		s.hits.Add(1)
	}
	if n := s.lookups.Add(1); n == siteTrial && s.hits.Load()*siteMinHitRate < n {
		s.failures.Add(1)
		s.off.Store(true)
	}
}

func newValueSharer() *valueSharer {
	s := &valueSharer{seed: maphash.MakeSeed()}
	for i := range s.stripes {
		st := &s.stripes[i]
		st.table = make(map[uint64]shareEntry)
		st.dropped = st.dropDead
	}
	return s
}

// lookup returns the live shared value for key, or nil.
func (st *shareStripe) lookup(key shareKey) *byte {
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
func (st *shareStripe) insert(key shareKey, depth int, p *byte) {
	k := key.fold()
	st.mu.Lock()
	defer st.mu.Unlock()
	if old, ok := st.table[k]; ok && old.p.Value() != nil {
		return
	}
	st.table[k] = shareEntry{key: key, depth: depth, p: weak.Make(p)}
	st.peak = max(st.peak, len(st.table))
	runtime.AddCleanup(p, st.dropped, k)
}

// drop removes the entry e from the table, if it is still there.
func (st *shareStripe) drop(e shareEntry) {
	k := e.key.fold()
	st.mu.Lock()
	defer st.mu.Unlock()
	if cur, ok := st.table[k]; ok && cur.p == e.p {
		delete(st.table, k)
	}
}

// snapshot appends the stripe's entries of values other than strings to
// out.
func (st *shareStripe) snapshot(out []shareEntry) []shareEntry {
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
func (st *shareStripe) dropDead(k uint64) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if e, ok := st.table[k]; ok && e.p.Value() == nil {
		delete(st.table, k)
	}
	if st.peak < shrinkMin || len(st.table)*shrinkBelow > st.peak {
		return
	}
	fresh := make(map[uint64]shareEntry, len(st.table))
	for k, e := range st.table {
		fresh[k] = e
	}
	st.table, st.peak = fresh, len(fresh)
}
