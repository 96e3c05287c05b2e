package cache

import (
	"math/bits"
	"sync/atomic"
)

// This file is the valueSharer's memory of values seen once.
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
// set it is replaced by an empty one twice as large (up to seenMaxBits),
// or by an empty one of the same size at that bound: keys seen once before
// then need a third sighting.

// seenMinBits and seenMaxBits bound the filter's size in bits (powers of
// two). An informer of a few objects keeps a few hundred bytes; one of a
// hundred thousand pods, a few hundred kilobytes. Chosen with
// BenchmarkValueSharer_Pods (heap per pod) and make bench-e2e.
const (
	seenMinBits = 1 << 12
	seenMaxBits = 1 << 22
)

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
func (s *valueSharer) admit(k uint64) (insert, repeated bool) {
	f := s.seen.Load()
	if len(f.words) == 0 {
		return true, false
	}
	saw := f.sawBefore(k)
	if f.full() {
		s.seen.CompareAndSwap(f, newSeenFilter(min(len(f.words)*64*2, seenMaxBits)))
	}
	return saw, saw
}
