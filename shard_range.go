package cache

import (
	"fmt"
	"hash/fnv"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
)

// This file holds a parsed shard selector and the hash that places an
// object in it. It needs nothing from apimachinery beyond object metadata,
// so sharding works with every apimachinery minor this module supports.

// ShardRange is one shardRange call of a selector: the objects whose
// Field hashes into [Start, End).
type ShardRange struct {
	// Field is the hashed field: object.metadata.uid or
	// object.metadata.namespace.
	Field string
	// Start is the inclusive lower bound: "0x" and 16 lowercase hex digits.
	Start string
	// End is the exclusive upper bound, in the same form as Start, or
	// "0x10000000000000000" (2^64) for the end of the hash space.
	End string
}

// ShardSelector is a parsed, checked shard selector (see
// ParseShardSelector). It never changes once made and is safe for
// concurrent use.
type ShardSelector struct {
	// ranges holds at least one range; every range has the same Field.
	ranges []ShardRange
}

// Ranges returns a copy of the selector's ranges, in the order written.
func (s *ShardSelector) Ranges() []ShardRange {
	return append([]ShardRange(nil), s.ranges...)
}

// String returns the selector's canonical form: each range as
// shardRange(field, 'start', 'end'), joined by " || ". It is the text sent
// in ListOptions.ShardSelector and the text a server echoes in
// ListMeta.ShardInfo.
func (s *ShardSelector) String() string {
	parts := make([]string, len(s.ranges))
	for i, r := range s.ranges {
		parts[i] = fmt.Sprintf("shardRange(%s, '%s', '%s')", r.Field, r.Start, r.End)
	}
	return strings.Join(parts, " || ")
}

// Matches reports whether obj lies in one of the selector's ranges, hashing
// its field as an API server with the ShardedListAndWatch feature does:
// 64-bit FNV-1a of the field's bytes. An object without object metadata is
// an error.
func (s *ShardSelector) Matches(obj runtime.Object) (bool, error) {
	value, err := shardFieldValue(obj, s.ranges[0].Field)
	if err != nil {
		return false, err
	}
	hash := shardHash(value)
	for _, r := range s.ranges {
		if !hexBelow(hash, r.Start) && hexBelow(hash, r.End) {
			return true, nil
		}
	}
	return false, nil
}

// shardHash returns the position of a field value in the hash space, in the
// form of a range bound: "0x" and the 16 lowercase hex digits of the value's
// 64-bit FNV-1a hash. It is the hash an API server with the
// ShardedListAndWatch feature computes.
func shardHash(value string) string {
	h := fnv.New64a()
	h.Write([]byte(value))
	return fmt.Sprintf("0x%016x", h.Sum64())
}

// hexBelow reports a < b for bounds written as "0x" and lowercase hex
// digits without leading zeros beyond the 16 required: the shorter is the
// smaller, and equal lengths compare as text.
func hexBelow(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

// shardFieldValue reads the field a range hashes from obj's metadata.
func shardFieldValue(obj runtime.Object, field string) (string, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return "", fmt.Errorf("shard selector: reading %s: %w", field, err)
	}
	switch field {
	case shardFieldUID:
		return string(m.GetUID()), nil
	case shardFieldNamespace:
		return m.GetNamespace(), nil
	}
	return "", fmt.Errorf("shard selector: unsupported field %q", field)
}

// The fields a shard range may hash.
const (
	shardFieldUID       = "object.metadata.uid"
	shardFieldNamespace = "object.metadata.namespace"
)
