package cache

import (
	"fmt"
	"hash/maphash"
	"math/bits"
	"os"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"weak"

	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
)

// This file makes equal parts of cached objects one in memory.
//
// Objects of one kind repeat themselves: the pods of a ReplicaSet carry the
// same labels, containers' env, resources and probes, the same
// ownerReference and the same managedFields entry of their applier, yet each
// decoded pod holds its own copy of all of it. A deduper walks an object
// once, bottom-up, when it enters the cache, and points every pointer, slice,
// map and string field whose content equals a value already cached at the
// same position at that one value. Nothing is removed or changed: the
// object stays byte for byte what was decoded, only its parts are no
// longer private to it.
//
// Scope. Each informer (each queue made by newInformerQueue) has its own
// deduper, and a value is shared only with values at the same position:
// the same field path from the object's root (dedup_walk.go's position),
// the same type. Nothing joins two informers, two types or two fields.
//
// Exactness. Values are found by a content hash computed during the walk
// and confirmed by an exact comparison (dedup_compare.go: floats by their
// bits, NaN never), so a hash collision costs sharing, never correctness.
//
// Reads never write shared memory. A struct with unexported state (such as
// resource.Quantity, whose String fills a cached string) is never shared
// whole, nor is a pointer, slice or map through which a reader could reach
// one by address (dedup_plan.go's hidden and exposes).
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

// dedupStripes spreads the table over this many locks.
const dedupStripes = 32

// The trial of a position is ruled by tuning's siteTrial, siteMinHitRate
// and siteMaxBackoff (tuning.go).

// maxDedupDepth bounds the walk; deeper values are hashed by address and
// not shared (API objects are nowhere near it).
const maxDedupDepth = 64

// deduper is the table of one informer's shared values. Safe for
// concurrent use.
type deduper struct {
	seed    maphash.Seed
	stripes [dedupStripes]dedupStripe
	// plans caches a *typePlan per reflect.Type (dedup_plan.go); planMu
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
// it was found at, which the guard (dedup_guard.go) needs to hash it again.
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
func (s *deduper) stripeFor(k uint64) *dedupStripe { return &s.stripes[k%dedupStripes] }

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

// onNewDeduper, when set (tests), is called with each new deduper.
var onNewDeduper func(s *deduper)

func newDeduper() *deduper {
	s := &deduper{seed: maphash.MakeSeed()}
	s.seen.Store(newSeenFilter(tuning.seenMinBits))
	for i := range s.stripes {
		st := &s.stripes[i]
		st.table = make(map[uint64]dedupEntry)
		st.dropped = st.dropDead
	}
	if onNewDeduper != nil {
		onNewDeduper(s)
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

// dedupEnv switches off, when set to a false value, the sharing of
// equal parts of cached objects (dedup.go) for every informer of the
// process; it is on by default. A value that is not one of the usual
// boolean spellings turns sharing off too, and says why: a switch meant to
// turn a feature off must not leave it on by a typo. With sharing off, each
// cached object is the very one its source returned, as in client-go. The
// objects a ListerWatcher or transform returned are never written
// (dedupCopy). SetValueSharing turns it off for one informer.
const dedupEnv = "KCACHE_SHARE_VALUES"

// dedupEnabled reads dedupEnv once.
var dedupEnabled = sync.OnceValue(func() bool {
	on, err := parseDedupSwitch(os.Getenv(dedupEnv))
	if err != nil {
		klog.Background().Error(err, "Turning value sharing off", "variable", dedupEnv)
	}
	return on
})

// parseDedupSwitch reads the value of dedupEnv: empty (unset) is on;
// true/false, 1/0, on/off and yes/no, in any case and with spaces around,
// say it; anything else is off, with an error saying why.
func parseDedupSwitch(raw string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(raw)) {
	case "", "true", "1", "on", "yes":
		return true, nil
	case "false", "0", "off", "no":
		return false, nil
	}
	return false, fmt.Errorf("%q is not one of true, false, 1, 0, on, off, yes, no", raw)
}

// withDedup returns the transform an informer's queue applies:
// transform (which may be nil), then the sharing of the result's parts with
// the objects already cached, when sharing is on. cached, if not nil, is
// the informer's store: an object that replaces one cached under its key
// is compared with that one (dedup_update.go), later by compactor when there
// is one (dedup_update.go; the object is then cached as it is for now),
// at once otherwise.
func withDedup(transform TransformFunc, dd *deduper, cached KeyGetter, compactor *dedupCompactor) TransformFunc {
	if dd == nil {
		return transform
	}
	return func(obj interface{}) (interface{}, error) {
		if transform != nil {
			out, err := transform(obj)
			if err != nil {
				return nil, err
			}
			obj = out
		}
		key, twin := cachedTwin(cached, obj)
		if twin != nil && compactor != nil {
			compactor.note(key, twin, time.Now())
			return obj, nil
		}
		return dedupCopyLike(dd, obj, twin), nil
	}
}

// cachedTwin returns obj's key and the object cached under it, or nil.
func cachedTwin(cached KeyGetter, obj interface{}) (string, interface{}) {
	if cached == nil {
		return "", nil
	}
	// A nil pointer is left to panic where client-go's would, later.
	if v := reflect.ValueOf(obj); v.Kind() != reflect.Pointer || v.IsNil() {
		return "", nil
	}
	key, err := MetaNamespaceKeyFunc(obj)
	if err != nil {
		return "", nil
	}
	twin, exists, err := cached.GetByKey(key)
	if err != nil || !exists {
		return "", nil
	}
	return key, twin
}

// dedupCopy returns the object the cache keeps for obj: obj with its parts
// pointing at equal values of the objects already cached. obj itself is
// never written (the walk copies the path to each replaced part): the
// source (a fake clientset, a transform returning its input) may hand the
// same object to others, who may be reading it now. Values that are not
// runtime.Objects are kept as they are, unshared.
func dedupCopy(dd *deduper, obj interface{}) interface{} {
	return dedupCopyLike(dd, obj, nil)
}

// dedupCopyLike is dedupCopy for an object that replaces twin (nil: none)
// in the cache.
func dedupCopyLike(dd *deduper, obj, twin interface{}) interface{} {
	ro, ok := obj.(apiruntime.Object)
	if !ok || ro == nil {
		return obj
	}
	if twin != nil {
		return dd.dedupLike(ro, twin)
	}
	return dd.dedup(ro)
}

// informerDeduper returns a new deduper for one informer's queue, or nil
// when sharing is off for the process or, by choice (SetValueSharing),
// for that informer. Each informer has its own: no value is ever shared
// between two informers.
func informerDeduper(enabled bool) *deduper {
	if !enabled || !dedupEnabled() {
		return nil
	}
	return newDeduper()
}

// The deduper's memory of values seen once.
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
func (s *deduper) admit(k uint64) (insert, repeated bool) {
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
