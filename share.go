package cache

import (
	"hash/maphash"
	"math"
	"reflect"
	"strings"
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
// Hazard: a caller that modifies a cached object (against the contract,
// caught by KUBE_CACHE_MUTATION_DETECTOR) now modifies every object sharing
// the modified part. Shared slices are handed out with their capacity cut
// to their length, so an append never writes into another object's backing
// array. A DeepCopy is as independent as ever.

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
	// plans caches a structPlan per struct type (reflect.Type to
	// *structPlan) and a site per container type.
	plans sync.Map
}

// shareShard is one lock's part of the table.
type shareShard struct {
	// mu guards table and sweepAt.
	mu      sync.Mutex
	table   map[shareKey]weak.Pointer[byte]
	sweepAt int
}

// shareKey identifies a value by its type, content hash and length (of a
// string or slice; 0 otherwise).
type shareKey struct {
	typ  reflect.Type
	hash uint64
	n    int
}

// site counts the lookups made for values at one position (a struct field,
// or the elements, keys or values of one container type) and how many found
// an equal value, to stop looking where that rarely happens.
type site struct {
	lookups, hits atomic.Int64
	off           atomic.Bool
}

func (s *site) enabled() bool { return !s.off.Load() }

func (s *site) record(hit bool) {
	if hit {
		s.hits.Add(1)
	}
	if n := s.lookups.Add(1); n == siteTrial && s.hits.Load()*siteMinHitRate < n {
		s.off.Store(true)
	}
}

// structPlan is what the walk needs to know about a struct type.
type structPlan struct {
	fields []fieldPlan
}

type fieldPlan struct {
	index    int
	exported bool
	site     *site
}

// containerSites are the sites of a slice or map type's elements (values)
// and keys, and of maps of the type held in interfaces (unstructured
// content).
type containerSites struct {
	elem, key, held site
}

func newValueSharer() *valueSharer {
	s := &valueSharer{seed: maphash.MakeSeed()}
	for i := range s.shards {
		s.shards[i].table = make(map[shareKey]weak.Pointer[byte])
		s.shards[i].sweepAt = 1024
	}
	return s
}

// defaultSharer is the table every informer shares values through, so
// that equal strings and values of different informers are one too.
var defaultSharer = newValueSharer()

// share makes the parts of obj point at equal values already cached. obj
// must be a pointer to a struct (or a map, as in unstructured objects) that
// nobody else reads yet: it is modified in place. Other values are left
// alone.
func (s *valueSharer) share(obj interface{}) {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return
	}
	e := v.Elem()
	switch e.Kind() {
	case reflect.Struct, reflect.Map:
		s.walk(e, nil, 0, true)
	}
}

func (s *valueSharer) structPlanOf(t reflect.Type) *structPlan {
	if p, ok := s.plans.Load(t); ok {
		return p.(*structPlan)
	}
	p := &structPlan{fields: make([]fieldPlan, t.NumField())}
	for i := range p.fields {
		p.fields[i] = fieldPlan{index: i, exported: t.Field(i).IsExported(), site: new(site)}
	}
	got, _ := s.plans.LoadOrStore(t, p)
	return got.(*structPlan)
}

func (s *valueSharer) containerSitesOf(t reflect.Type) *containerSites {
	if p, ok := s.plans.Load(t); ok {
		return p.(*containerSites)
	}
	got, _ := s.plans.LoadOrStore(t, new(containerSites))
	return got.(*containerSites)
}

// Hash mixing: FNV-style multiply over 64-bit words.
const (
	hashPrime  = 0x100000001b3
	hashOffset = 0xcbf29ce484222325
)

func mix(h, x uint64) uint64 { return (h ^ x) * hashPrime }

// walk shares the parts of v (addressable) and returns a hash of its
// content. st is the site of v's position, nil where v itself must not be
// replaced; settable says whether v may be set (false under unexported
// fields, whose values are only hashed).
func (s *valueSharer) walk(v reflect.Value, st *site, depth int, settable bool) uint64 {
	if depth > maxShareDepth {
		return uint64(v.Kind())
	}
	switch v.Kind() {
	case reflect.Bool:
		if v.Bool() {
			return 1
		}
		return 2
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return mix(hashOffset, uint64(v.Int()))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return mix(hashOffset, v.Uint())
	case reflect.Float32, reflect.Float64:
		return mix(hashOffset, math.Float64bits(v.Float()))
	case reflect.Complex64, reflect.Complex128:
		c := v.Complex()
		return mix(mix(hashOffset, math.Float64bits(real(c))), math.Float64bits(imag(c)))
	case reflect.String:
		return s.walkString(v, st, settable)
	case reflect.Struct:
		return s.walkStruct(v, depth, settable)
	case reflect.Pointer:
		if v.IsNil() {
			return 3
		}
		if !settable {
			// Under an unexported field (a time.Time's location, say):
			// by address, without descending.
			return mix(hashOffset+4, uint64(uintptr(v.UnsafePointer())))
		}
		h := mix(hashOffset+4, s.walk(v.Elem(), nil, depth+1, settable))
		if settable {
			s.replace(v, st, h, 0)
		}
		return h
	case reflect.Slice:
		return s.walkSlice(v, st, depth, settable)
	case reflect.Array:
		h := uint64(hashOffset + 6)
		for i := range v.Len() {
			h = mix(h, s.walk(v.Index(i), nil, depth+1, settable))
		}
		return h
	case reflect.Map:
		return s.walkMap(v, st, depth, settable)
	case reflect.Interface:
		if v.IsNil() {
			return 7
		}
		return s.walkInterface(v, depth, settable)
	}
	// Funcs, channels, unsafe pointers: by address, never equal by content.
	if v.CanAddr() {
		return uint64(v.UnsafeAddr())
	}
	return 9
}

func (s *valueSharer) walkString(v reflect.Value, st *site, settable bool) uint64 {
	str := v.String()
	h := maphash.String(s.seed, str)
	if st == nil || !settable || len(str) == 0 || !st.enabled() {
		return h
	}
	key := shareKey{typ: v.Type(), hash: h, n: len(str)}
	sh := &s.shards[h%shareShards]
	if p := sh.lookup(key); p != nil {
		canon := unsafe.String(p, len(str))
		if canon == str {
			st.record(true)
			if p != unsafe.StringData(str) {
				v.SetString(canon)
			}
			return h
		}
	}
	st.record(false)
	// The table only refers to heap memory it made itself (a string may be
	// a literal in the binary's data, which a weak pointer cannot refer
	// to).
	own := strings.Clone(str)
	v.SetString(own)
	sh.insert(key, unsafe.StringData(own))
	return h
}

func (s *valueSharer) walkStruct(v reflect.Value, depth int, settable bool) uint64 {
	plan := s.structPlanOf(v.Type())
	h := uint64(hashOffset + 5)
	for i := range plan.fields {
		f := &plan.fields[i]
		h = mix(h, s.walk(v.Field(f.index), f.site, depth+1, settable && f.exported))
	}
	return h
}

func (s *valueSharer) walkSlice(v reflect.Value, st *site, depth int, settable bool) uint64 {
	if v.IsNil() {
		return 10
	}
	n := v.Len()
	h := mix(hashOffset+11, uint64(n))
	if v.Type().Elem().Kind() == reflect.Uint8 {
		h = mix(h, maphash.Bytes(s.seed, v.Bytes()))
	} else {
		cs := s.containerSitesOf(v.Type())
		for i := range n {
			h = mix(h, s.walk(v.Index(i), &cs.elem, depth+1, settable))
		}
	}
	if n > 0 && settable {
		s.replace(v, st, h, n)
	}
	return h
}

func (s *valueSharer) walkMap(v reflect.Value, st *site, depth int, settable bool) uint64 {
	if v.IsNil() {
		return 12
	}
	// First the content hash, read-only: when an equal map is shared, the
	// whole map is replaced and its entries need no work.
	var sum uint64 // entries hashed in any order
	for it := v.MapRange(); it.Next(); {
		sum += mix(mix(hashOffset, s.walk(it.Key(), nil, depth+1, false)), s.walk(it.Value(), nil, depth+1, false))
	}
	h := mix(hashOffset+13, sum)
	if !settable || !v.CanSet() {
		return h
	}
	if s.useShared(v, st, h, v.Len()) {
		return h
	}
	// Entries first: once shared, the map must not change.
	s.shareEntries(v, depth)
	s.makeShared(v, st, h, v.Len())
	return h
}

// shareEntries shares the keys and values of map v, which is not shared
// as a whole.
func (s *valueSharer) shareEntries(v reflect.Value, depth int) {
	t := v.Type()
	cs := s.containerSitesOf(t)
	key := reflect.New(t.Key()).Elem()
	val := reflect.New(t.Elem()).Elem()
	var changedKeys, changedVals []reflect.Value
	for it := v.MapRange(); it.Next(); {
		key.SetIterKey(it)
		val.SetIterValue(it)
		oldKey, oldVal := identity(key), identity(val)
		s.walk(key, &cs.key, depth+1, true)
		s.walk(val, &cs.elem, depth+1, true)
		if identity(key) != oldKey || identity(val) != oldVal {
			k := reflect.New(t.Key()).Elem()
			k.Set(key)
			e := reflect.New(t.Elem()).Elem()
			e.Set(val)
			changedKeys, changedVals = append(changedKeys, k), append(changedVals, e)
		}
	}
	for i, k := range changedKeys {
		// A key of equal content replaces the entry's key: delete first.
		v.SetMapIndex(k, reflect.Value{})
		v.SetMapIndex(k, changedVals[i])
	}
}

// walkInterface hashes the dynamic value of v; maps, slices and pointers
// held in it are shared inside (they are references), and a map held in it
// is itself replaced by an equal shared one.
func (s *valueSharer) walkInterface(v reflect.Value, depth int, settable bool) uint64 {
	e := v.Elem()
	if !settable {
		return s.walk(e, nil, depth+1, false)
	}
	c := reflect.New(e.Type()).Elem()
	c.Set(e)
	switch e.Kind() {
	case reflect.Map:
		cs := s.containerSitesOf(e.Type())
		h := s.walk(c, &cs.held, depth+1, true)
		if v.CanSet() && c.UnsafePointer() != e.UnsafePointer() {
			v.Set(c)
		}
		return h
	case reflect.Pointer, reflect.Slice:
		return s.walk(c, nil, depth+1, true)
	}
	return s.walk(c, nil, depth+1, false)
}

// identity is what changes when walk replaces a value: the address of a
// string's bytes or of what a pointer, slice or map refers to.
func identity(v reflect.Value) uintptr {
	switch v.Kind() {
	case reflect.String:
		return uintptr(unsafe.Pointer(unsafe.StringData(v.String())))
	case reflect.Pointer, reflect.Slice, reflect.Map:
		return uintptr(v.UnsafePointer())
	case reflect.Interface:
		if v.IsNil() {
			return 0
		}
		return identity(v.Elem())
	}
	return 0
}

// replace points v (a pointer, a non-empty slice of length n, or a map) at
// the shared value of equal content, or makes v the shared value. It
// reports whether v now refers to a value shared before.
func (s *valueSharer) replace(v reflect.Value, st *site, h uint64, n int) bool {
	if s.useShared(v, st, h, n) {
		return true
	}
	s.makeShared(v, st, h, n)
	return false
}

// useShared points v at the shared value of equal content, if there is
// one, and reports whether it did.
func (s *valueSharer) useShared(v reflect.Value, st *site, h uint64, n int) bool {
	if st == nil || !st.enabled() || !v.CanSet() {
		return false
	}
	key := shareKey{typ: v.Type(), hash: h, n: n}
	p := s.shards[h%shareShards].lookup(key)
	if p == nil {
		return false
	}
	if p == (*byte)(v.UnsafePointer()) {
		st.record(true)
		return true
	}
	canon := fromPointer(v.Type(), unsafe.Pointer(p), n)
	if !reflect.DeepEqual(canon.Interface(), v.Interface()) {
		return false
	}
	st.record(true)
	v.Set(canon)
	return true
}

// makeShared makes a copy of v's value the shared value for its content,
// and points v at it. Nothing may modify the value afterwards.
func (s *valueSharer) makeShared(v reflect.Value, st *site, h uint64, n int) {
	if st == nil || !st.enabled() || !v.CanSet() {
		return
	}
	st.record(false)
	// The table only refers to heap memory it made itself: v may point at
	// a variable or a slice literal in the binary's data.
	c := heapCopy(v, n)
	v.Set(c)
	s.shards[h%shareShards].insert(shareKey{typ: v.Type(), hash: h, n: n}, (*byte)(c.UnsafePointer()))
}

// heapCopy returns a shallow copy of what v (a pointer, a slice of length
// n, or a map) refers to, newly allocated.
func heapCopy(v reflect.Value, n int) reflect.Value {
	switch v.Kind() {
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		p.Elem().Set(v.Elem())
		return p
	case reflect.Slice:
		c := reflect.MakeSlice(v.Type(), n, n)
		reflect.Copy(c, v)
		return c
	default: // map
		c := reflect.MakeMapWithSize(v.Type(), v.Len())
		for it := v.MapRange(); it.Next(); {
			c.SetMapIndex(it.Key(), it.Value())
		}
		return c
	}
}

// fromPointer rebuilds a value of type t (pointer, slice or map) from the
// address it refers to; a slice gets length and capacity n, so that
// appending to it never writes into the shared array.
func fromPointer(t reflect.Type, p unsafe.Pointer, n int) reflect.Value {
	switch t.Kind() {
	case reflect.Slice:
		return reflect.NewAt(t, unsafe.Pointer(&sliceHeader{data: p, len: n, cap: n})).Elem()
	default: // pointer or map: one pointer word
		return reflect.NewAt(t, unsafe.Pointer(&p)).Elem()
	}
}

// sliceHeader is the layout of a slice value.
type sliceHeader struct {
	data     unsafe.Pointer
	len, cap int
}

// lookup returns the live shared value for key, or nil.
func (sh *shareShard) lookup(key shareKey) *byte {
	sh.mu.Lock()
	wp, ok := sh.table[key]
	sh.mu.Unlock()
	if !ok {
		return nil
	}
	return wp.Value()
}

// insert makes p the shared value for key unless a live one is there (a
// collision: the first stays). Entries whose value died are swept when
// the table has doubled since the last sweep.
func (sh *shareShard) insert(key shareKey, p *byte) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if old, ok := sh.table[key]; ok && old.Value() != nil {
		return
	}
	sh.table[key] = weak.Make(p)
	if len(sh.table) < sh.sweepAt {
		return
	}
	for k, wp := range sh.table {
		if wp.Value() == nil {
			delete(sh.table, k)
		}
	}
	sh.sweepAt = max(2*len(sh.table), 1024)
}
