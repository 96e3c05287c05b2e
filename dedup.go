package cache

import (
	"hash/maphash"
	"math/bits"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"weak"
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

// This file describes, once per type, what a deduper's walk (dedup.go,
// dedup_walk.go) needs to know to go through a value of that type by
// address: where each field lies, which parts refer to other memory, which
// hold state a read may write, and the sites that count how often a
// position finds an equal value. With a plan, the walk reads memory
// directly instead of through reflect.Value, which costs a few nanoseconds
// per field instead of tens.

// typePlan is what the walk knows about one type.
type typePlan struct {
	t reflect.Type
	// id numbers the plan within its deduper; it stands for the type in
	// the table's keys (never 0: that is every string's).
	id   uint64
	kind reflect.Kind
	size uintptr
	// flat says the type refers to no other memory and holds no floats:
	// its content is its bytes, compared and hashed as such, and nothing
	// in it is ever replaced.
	flat bool
	// dense says a flat type has no padding: equal values have equal
	// bytes. (Padding may hold anything: a value built on the stack
	// copies whatever was there.)
	dense bool
	// fields are a struct's fields, in order; elem is what a pointer
	// points at, a slice's or array's element, a map's value; key is a
	// map's key; n an array's length.
	fields []fieldPlan
	elem   *typePlan
	key    *typePlan
	n      int
	// strMap says the type is map[string]string, whose entries are read
	// directly; stringKeys that a map's keys are strings, so that the
	// values under each key have a position of their own.
	strMap, stringKeys bool
	// hidden says a value of the type holds, in its own memory, state that
	// a read may write: a struct with unexported fields (resource.Quantity
	// caches its string on String()), unless its reads are known to write
	// nothing (readOnlyStructs). exposes says a reader can reach such state
	// by address through a value of the type: a pointer or slice to it, or
	// a map whose values hold such a pointer. A value that hides or
	// exposes such state is never shared whole, nor compared with another
	// object's (another goroutine may be reading it, and so writing).
	hidden, exposes bool
	// entries holds a map type's *mapEntry values for reuse.
	entries sync.Pool
	// sites are the positions of a slice's, array's or map's elements
	// and keys, and of values of this type held in interfaces.
	sites containerSites
}

// fieldPlan is one field of a struct plan.
type fieldPlan struct {
	off      uintptr
	plan     *typePlan
	exported bool
	site     *site
}

// containerSites are the sites of a slice, array or map type's elements
// (values) and keys, and of maps or strings of the type held in interfaces
// (unstructured content).
type containerSites struct {
	elem, key, held site
}

// readOnlyStructs are structs with unexported fields whose methods never
// write them on a read: time.Time's readers all take a copy.
var readOnlyStructs = map[reflect.Type]bool{
	reflect.TypeFor[time.Time](): true,
}

var stringMapType = reflect.TypeFor[map[string]string]()

// planOf returns the plan of t, making it (and the plans of the types it
// refers to) on first use. Plans are made under planMu, so that each type
// has one plan and one set of sites however many walks start at once.
func (s *deduper) planOf(t reflect.Type) *typePlan {
	if p, ok := s.plans.Load(t); ok {
		return p.(*typePlan)
	}
	s.planMu.Lock()
	defer s.planMu.Unlock()
	made := map[reflect.Type]*typePlan{}
	p := s.buildPlan(t, made)
	markHidden(made)
	for typ, plan := range made {
		s.plans.Store(typ, plan)
	}
	return p
}

// buildPlan makes the plan of t. made holds the plans begun by this call,
// so that a type referring to itself (through a pointer, a slice or a map)
// refers to its own plan.
func (s *deduper) buildPlan(t reflect.Type, made map[reflect.Type]*typePlan) *typePlan {
	if p, ok := s.plans.Load(t); ok {
		return p.(*typePlan)
	}
	if p, ok := made[t]; ok {
		return p
	}
	s.lastPlanID++
	p := &typePlan{t: t, id: s.lastPlanID, kind: t.Kind(), size: t.Size()}
	made[t] = p
	switch p.kind {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		p.flat, p.dense = true, true
	case reflect.Struct:
		s.buildStructPlan(p, made)
	case reflect.Array:
		p.elem = s.buildPlan(t.Elem(), made)
		p.n = t.Len()
		p.flat, p.dense = p.elem.flat, p.elem.dense
	case reflect.Pointer, reflect.Slice:
		p.elem = s.buildPlan(t.Elem(), made)
	case reflect.Map:
		p.key = s.buildPlan(t.Key(), made)
		p.elem = s.buildPlan(t.Elem(), made)
		p.strMap = t == stringMapType
		p.stringKeys = t.Key().Kind() == reflect.String
	}
	return p
}

func (s *deduper) buildStructPlan(p *typePlan, made map[reflect.Type]*typePlan) {
	p.fields = make([]fieldPlan, p.t.NumField())
	p.flat, p.dense = true, true
	var filled uintptr
	for i := range p.fields {
		f := p.t.Field(i)
		fp := s.buildPlan(f.Type, made)
		p.fields[i] = fieldPlan{off: f.Offset, plan: fp, exported: f.IsExported(), site: new(site)}
		p.flat = p.flat && fp.flat
		p.dense = p.dense && fp.dense
		filled += fp.size
	}
	p.dense = p.flat && p.dense && filled == p.size
}

// markHidden sets hidden and exposes on the plans just made, repeating
// until nothing changes (types may refer to each other in a cycle; the
// flags only ever turn on).
func markHidden(made map[reflect.Type]*typePlan) {
	for changed := true; changed; {
		changed = false
		for _, p := range made {
			h, x := p.hidesState(), p.exposesState()
			if h != p.hidden || x != p.exposes {
				p.hidden, p.exposes, changed = h, x, true
			}
		}
	}
}

// hidesState reports whether the type's own memory holds state a read
// may write.
func (p *typePlan) hidesState() bool {
	switch p.kind {
	case reflect.Struct:
		for _, f := range p.fields {
			if (!f.exported && !readOnlyStructs[p.t]) || (f.exported && f.plan.hidden) {
				return true
			}
		}
	case reflect.Array:
		return p.elem.hidden
	}
	return false
}

// exposesState reports whether a reader can reach, by address through a
// value of the type, state a read may write. Map values are copies when
// read, so a map exposes only what its values point at.
func (p *typePlan) exposesState() bool {
	switch p.kind {
	case reflect.Pointer, reflect.Slice:
		return p.elem.hidden || p.elem.exposes
	case reflect.Struct:
		for _, f := range p.fields {
			if f.exported && f.plan.exposes {
				return true
			}
		}
	case reflect.Array:
		return p.elem.exposes
	case reflect.Map:
		return p.elem.exposes || p.key.exposes
	}
	return false
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
