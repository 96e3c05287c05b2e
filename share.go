package cache

import (
	"hash/maphash"
	"reflect"
	"sync"
	"sync/atomic"
	"unsafe"
	"weak"
)

// This file makes equal parts of cached objects one in memory.
//
// Objects of one kind repeat themselves: the pods of a ReplicaSet carry the
// same labels, containers' env, resources and probes, the same
// ownerReference and the same managedFields entry of their applier, yet each
// decoded pod holds its own copy of all of it. A valueSharer walks an object
// once, bottom-up, when it enters the cache, and points every pointer, slice,
// map and string field whose content equals a value already cached at that
// one value. Nothing is removed or changed: the object stays deep-equal to
// what was decoded, only its parts are no longer private to it.
//
// Values are found by a content hash computed during the walk and confirmed
// with reflect.DeepEqual, so a hash collision costs sharing, never
// correctness. The table holds weak pointers, so a shared value lives
// exactly as long as some object uses it. Positions whose values are rarely
// equal to another (names, UIDs, IPs, container IDs) stop being looked up
// after a trial, so per-object unique content costs no table entries.
//
// A pointer or slice at a position still looked up is looked up whole,
// by a hash of its content, before its parts are walked: when it equals a
// shared value, it is replaced at once and nothing is copied for its
// parts. Only values that end up in the cache are ever copied.
//
// Hazard: a caller that modifies a cached object (against the contract,
// caught by KUBE_CACHE_MUTATION_DETECTOR) now modifies every object sharing
// the modified part. Shared slices are handed out with their capacity cut
// to their length, so an append never writes into another object's backing
// array. A DeepCopy is as independent as ever.

// Hash mixing: FNV-style multiply over 64-bit words.
const (
	hashPrime  = 0x100000001b3
	hashOffset = 0xcbf29ce484222325
)

func mix(h, x uint64) uint64 { return (h ^ x) * hashPrime }

// Hashes of the empty cases and the seeds of the composite ones.
const (
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

// shareShards spreads the table over this many locks.
const shareShards = 32

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

// valueSharer is the table of shared values. Safe for concurrent use.
type valueSharer struct {
	seed   maphash.Seed
	shards [shareShards]shareShard
	// plans caches a *typePlan per reflect.Type (share_plan.go); planMu
	// serializes the making of new plans.
	plans  sync.Map
	planMu sync.Mutex
}

// shareShard is one lock's part of the table.
type shareShard struct {
	// mu guards table and sweepAt.
	mu sync.Mutex
	// table is keyed by shareKey.fold: a hash key is the cheapest to
	// look up; the entry holds the rest of the key to confirm it.
	table   map[uint64]shareEntry
	sweepAt int
}

// shareEntry is a shared value and the type and length it was kept for.
type shareEntry struct {
	typ unsafe.Pointer
	n   int
	p   weak.Pointer[byte]
}

// shareKey identifies a value by its type, content hash and length (of a
// string or slice; 0 otherwise).
type shareKey struct {
	typ  unsafe.Pointer // typeID
	hash uint64
	n    int
}

// fold makes one word of k, the table's key.
func (k shareKey) fold() uint64 {
	return mix(mix(k.hash, uint64(uintptr(k.typ))), uint64(k.n))
}

// typeID is what identifies t in a shareKey: the address of its type
// descriptor, one per type, cheaper to hash than the reflect.Type
// interface.
func typeID(t reflect.Type) unsafe.Pointer {
	return (*[2]unsafe.Pointer)(unsafe.Pointer(&t))[1]
}

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
	for i := range s.shards {
		s.shards[i].table = make(map[uint64]shareEntry)
		s.shards[i].sweepAt = 1024
	}
	return s
}

// defaultSharer is the table every informer shares values through, so
// that equal strings and values of different informers are one too.
var defaultSharer = newValueSharer()

// lookup returns the live shared value for key, or nil.
func (sh *shareShard) lookup(key shareKey) *byte {
	sh.mu.Lock()
	e, ok := sh.table[key.fold()]
	sh.mu.Unlock()
	if !ok || e.typ != key.typ || e.n != key.n {
		return nil
	}
	return e.p.Value()
}

// insert makes p the shared value for key unless a live one is there (a
// collision: the first stays). Entries whose value died are swept when
// the table has doubled since the last sweep.
func (sh *shareShard) insert(key shareKey, p *byte) {
	k := key.fold()
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if old, ok := sh.table[k]; ok && old.p.Value() != nil {
		return
	}
	sh.table[k] = shareEntry{typ: key.typ, n: key.n, p: weak.Make(p)}
	if len(sh.table) < sh.sweepAt {
		return
	}
	for k, e := range sh.table {
		if e.p.Value() == nil {
			delete(sh.table, k)
		}
	}
	sh.sweepAt = max(2*len(sh.table), 1024)
}
