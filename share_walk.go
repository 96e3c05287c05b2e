package cache

import (
	"hash/maphash"
	"math"
	"reflect"
	"strings"
	"unsafe"
)

// This file is the walk of a valueSharer (share.go) over one object.
//
// The walk hashes the object's content bottom-up and, at each position
// still looked up, finds the shared value equal to the part there. It
// never writes into the object it is given: that object belongs to
// whoever returned it (a ListerWatcher, a transform), who may hand it to
// others. When a part is to point at a shared value, the walk copies the
// frames on the path from the root down to that part, each at most once
// however many of its parts change, and returns the copy; subtrees with
// nothing to replace stay the very memory of the input. So an object made
// only of values already shared costs a copy of its spine, not of its
// whole.

// change is what the walk replaces a value with: a value of the same type,
// newly made or shared. The zero change replaces nothing.
type change struct {
	v reflect.Value
	// s is the replacement of a string (v is then not valid): kept as a
	// string, so that replacing one costs no allocation.
	s     string
	isStr bool
	// shared is the address of the shared value replacing a pointer, a
	// map or a slice of length n (v is then not valid): kept as an
	// address, so that replacing one costs no allocation.
	shared unsafe.Pointer
	n      int
}

func (c change) ok() bool { return c.isStr || c.shared != nil || c.v.IsValid() }

// setTo stores the replacement in dst, a settable value of its type.
func (c change) setTo(dst reflect.Value) {
	switch {
	case c.isStr:
		dst.SetString(c.s)
	case c.shared == nil:
		dst.Set(c.v)
	case dst.CanAddr() && dst.Kind() == reflect.Slice:
		*(*sliceHeader)(dst.Addr().UnsafePointer()) = sliceHeader{data: c.shared, len: c.n, cap: c.n}
	case dst.CanAddr():
		*(*unsafe.Pointer)(dst.Addr().UnsafePointer()) = c.shared
	default:
		dst.Set(fromPointer(dst.Type(), c.shared, c.n))
	}
}

// value returns the replacement as a value of type t.
func (c change) value(t reflect.Type) reflect.Value {
	if !c.isStr && c.shared == nil {
		return c.v
	}
	v := reflect.New(t).Elem()
	c.setTo(v)
	return v
}

// share returns obj with its parts pointing at equal values already shared,
// making the values of obj's parts shared for objects to come. obj is
// never written: when a part changes, the result is a new object made of
// copies of the frames above the changed parts and of obj's other parts;
// when nothing changes it is obj itself. Only non-nil pointers to structs
// or maps are walked; anything else is returned as it is.
func (s *valueSharer) share(obj interface{}) interface{} {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return obj
	}
	e := v.Elem()
	if e.Kind() != reflect.Struct && e.Kind() != reflect.Map {
		return obj
	}
	_, c := s.walk(e, nil, 0, true)
	if !c.ok() {
		return obj
	}
	return pointerTo(c.value(e.Type())).Interface()
}

// pointerTo returns a pointer to a replacement value: its own address when
// it was made by the walk (structs and arrays are made addressable), a new
// variable holding it otherwise.
func pointerTo(v reflect.Value) reflect.Value {
	if v.CanAddr() && (v.Kind() == reflect.Struct || v.Kind() == reflect.Array) {
		return v.Addr()
	}
	p := reflect.New(v.Type())
	p.Elem().Set(v)
	return p
}

// Hash mixing: FNV-style multiply over 64-bit words.
const (
	hashPrime  = 0x100000001b3
	hashOffset = 0xcbf29ce484222325
)

func mix(h, x uint64) uint64 { return (h ^ x) * hashPrime }

// walk returns a hash of v's content and what v is to be replaced with. st
// is the site of v's position, nil where v itself is not looked up (its
// parts still are); settable is false under unexported fields, whose
// values are only hashed (pointers there by address).
func (s *valueSharer) walk(v reflect.Value, st *site, depth int, settable bool) (uint64, change) {
	if depth > maxShareDepth {
		return uint64(v.Kind()), change{}
	}
	switch v.Kind() {
	case reflect.Bool:
		if v.Bool() {
			return 1, change{}
		}
		return 2, change{}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return mix(hashOffset, uint64(v.Int())), change{}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return mix(hashOffset, v.Uint()), change{}
	case reflect.Float32, reflect.Float64:
		return mix(hashOffset, math.Float64bits(v.Float())), change{}
	case reflect.Complex64, reflect.Complex128:
		c := v.Complex()
		return mix(mix(hashOffset, math.Float64bits(real(c))), math.Float64bits(imag(c))), change{}
	case reflect.String:
		return s.walkString(v, st, settable)
	case reflect.Struct:
		return s.walkStruct(v, depth, settable)
	case reflect.Pointer:
		return s.walkPointer(v, st, depth, settable)
	case reflect.Slice:
		return s.walkSlice(v, st, depth, settable)
	case reflect.Array:
		return s.walkArray(v, depth, settable)
	case reflect.Map:
		return s.walkMap(v, st, depth, settable)
	case reflect.Interface:
		return s.walkInterface(v, depth, settable)
	}
	// Funcs, channels, unsafe pointers: by address; reflect.DeepEqual
	// holds no two non-nil ones equal, so they are never shared.
	return mix(hashOffset+8, uint64(v.Pointer())), change{}
}

func (s *valueSharer) walkString(v reflect.Value, st *site, settable bool) (uint64, change) {
	str := v.String()
	h := maphash.String(s.seed, str)
	if st == nil || !settable || len(str) == 0 || !st.enabled() {
		return h, change{}
	}
	key := shareKey{typ: v.Type(), hash: h, n: len(str)}
	sh := &s.shards[h%shareShards]
	if p := sh.lookup(key); p != nil {
		if canon := unsafe.String(p, len(str)); canon == str {
			st.record(true)
			if p == unsafe.StringData(str) {
				return h, change{}
			}
			return h, change{s: canon, isStr: true}
		}
	}
	st.record(false)
	// The table refers only to memory it made itself, never to the
	// input's.
	own := strings.Clone(str)
	sh.insert(key, unsafe.StringData(own))
	return h, change{s: own, isStr: true}
}

func (s *valueSharer) walkStruct(v reflect.Value, depth int, settable bool) (uint64, change) {
	plan := s.structPlanOf(v.Type())
	h := uint64(hashOffset + 5)
	var out reflect.Value
	for i := range plan.fields {
		f := &plan.fields[i]
		fh, c := s.walk(v.Field(f.index), f.site, depth+1, settable && f.exported)
		h = mix(h, fh)
		if c.ok() {
			if !out.IsValid() {
				out = reflect.New(v.Type()).Elem()
				out.Set(v)
			}
			c.setTo(out.Field(f.index))
		}
	}
	return h, change{v: out}
}

func (s *valueSharer) walkPointer(v reflect.Value, st *site, depth int, settable bool) (uint64, change) {
	if v.IsNil() {
		return 3, change{}
	}
	if !settable {
		// Under an unexported field (a time.Time's location, say): by
		// address, without descending.
		return mix(hashOffset+4, uint64(uintptr(v.UnsafePointer()))), change{}
	}
	eh, c := s.walk(v.Elem(), nil, depth+1, true)
	h := mix(hashOffset+4, eh)
	cur, owned := v, false
	if c.ok() {
		if !c.v.CanAddr() || (c.v.Kind() != reflect.Struct && c.v.Kind() != reflect.Array) {
			cur = reflect.New(v.Type().Elem())
			c.setTo(cur.Elem())
		} else {
			cur = c.v.Addr()
		}
		owned = true
	}
	return h, s.settle(v, cur, owned, st, h, 0)
}

func (s *valueSharer) walkSlice(v reflect.Value, st *site, depth int, settable bool) (uint64, change) {
	if v.IsNil() {
		return 10, change{}
	}
	n := v.Len()
	h := mix(hashOffset+11, uint64(n))
	var out reflect.Value
	if v.Type().Elem().Kind() == reflect.Uint8 {
		h = mix(h, maphash.Bytes(s.seed, v.Bytes()))
	} else {
		cs := s.containerSitesOf(v.Type())
		for i := range n {
			eh, c := s.walk(v.Index(i), &cs.elem, depth+1, settable)
			h = mix(h, eh)
			if c.ok() {
				if !out.IsValid() {
					out = reflect.MakeSlice(v.Type(), n, n)
					reflect.Copy(out, v)
				}
				c.setTo(out.Index(i))
			}
		}
	}
	if n == 0 || !settable {
		return h, change{v: out}
	}
	if out.IsValid() {
		return h, s.settle(v, out, true, st, h, n)
	}
	return h, s.settle(v, v, false, st, h, n)
}

func (s *valueSharer) walkArray(v reflect.Value, depth int, settable bool) (uint64, change) {
	h := uint64(hashOffset + 6)
	cs := s.containerSitesOf(v.Type())
	var out reflect.Value
	for i := range v.Len() {
		eh, c := s.walk(v.Index(i), &cs.elem, depth+1, settable)
		h = mix(h, eh)
		if c.ok() {
			if !out.IsValid() {
				out = reflect.New(v.Type()).Elem()
				out.Set(v)
			}
			c.setTo(out.Index(i))
		}
	}
	return h, change{v: out}
}

func (s *valueSharer) walkMap(v reflect.Value, st *site, depth int, settable bool) (uint64, change) {
	if v.IsNil() {
		return 12, change{}
	}
	// First the content hash, read-only: when an equal map is shared, the
	// whole map is replaced and its entries need no work.
	sum := s.hashEntries(v, depth)
	h := mix(hashOffset+13, sum)
	if !settable {
		return h, change{}
	}
	if c, found := s.findShared(v, v, st, h, v.Len()); found {
		return h, c
	}
	out := s.shareEntries(v, depth)
	if out.IsValid() {
		return h, s.keepShared(out, true, st, h, v.Len())
	}
	return h, s.keepShared(v, false, st, h, v.Len())
}

// hashEntries returns a hash of map v's entries, independent of their
// order; it shares nothing.
func (s *valueSharer) hashEntries(v reflect.Value, depth int) uint64 {
	var sum uint64
	if m, ok := asStringMap(v); ok {
		for k, e := range m {
			sum += mix(mix(hashOffset, maphash.String(s.seed, k)), maphash.String(s.seed, e))
		}
		return sum
	}
	e := newMapEntry(v)
	for it := v.MapRange(); it.Next(); {
		key, val := e.read(it)
		kh, _ := s.walk(key, nil, depth+1, false)
		vh, _ := s.walk(val, nil, depth+1, false)
		sum += mix(mix(hashOffset, kh), vh)
	}
	return sum
}

// shareEntries shares the keys and values of map v, which is not shared
// as a whole, and returns the copy of v with entries replaced, or an
// invalid value when none is.
func (s *valueSharer) shareEntries(v reflect.Value, depth int) reflect.Value {
	t := v.Type()
	cs := s.containerSitesOf(t)
	var out reflect.Value
	for it := v.MapRange(); it.Next(); {
		k, e := it.Key(), it.Value()
		_, ck := s.walk(k, &cs.key, depth+1, true)
		_, ce := s.walk(e, &cs.elem, depth+1, true)
		if !ck.ok() && !ce.ok() {
			continue
		}
		if !out.IsValid() {
			out = heapCopy(v, 0)
		}
		if ck.ok() {
			// An equal key does not replace the stored one: delete first.
			out.SetMapIndex(k, reflect.Value{})
			k = ck.value(t.Key())
		}
		if ce.ok() {
			e = ce.value(t.Elem())
		}
		out.SetMapIndex(k, e)
	}
	return out
}

// walkInterface hashes the dynamic value of v. Maps and strings held in
// it are looked up as values of their own position (unstructured
// content); pointers and slices are not, but their parts are.
func (s *valueSharer) walkInterface(v reflect.Value, depth int, settable bool) (uint64, change) {
	if v.IsNil() {
		return 7, change{}
	}
	e := v.Elem()
	var h uint64
	var c change
	switch {
	case !settable:
		h, _ = s.walk(e, nil, depth+1, false)
	case e.Kind() == reflect.Map || e.Kind() == reflect.String:
		h, c = s.walk(e, &s.containerSitesOf(e.Type()).held, depth+1, true)
	case e.Kind() == reflect.Pointer || e.Kind() == reflect.Slice:
		h, c = s.walk(e, nil, depth+1, true)
	default:
		h, _ = s.walk(e, nil, depth+1, false)
	}
	if !c.ok() {
		return h, change{}
	}
	out := reflect.New(v.Type()).Elem()
	out.Set(c.value(e.Type()))
	return h, change{v: out}
}

// settle finishes a pointer, a non-empty slice of length n or a map at
// position st: orig as found in the object, cur the same with its parts
// replaced (a new value, owned) or orig itself. It returns what orig is to
// be replaced with: the shared value equal to cur if there is one, else
// cur made the shared value for those to come, or cur as it is where
// nothing is looked up.
func (s *valueSharer) settle(orig, cur reflect.Value, owned bool, st *site, h uint64, n int) change {
	if c, found := s.findShared(orig, cur, st, h, n); found {
		return c
	}
	return s.keepShared(cur, owned, st, h, n)
}

// findShared looks up the shared value equal to cur (orig with some parts
// replaced, or orig) and reports whether there is one; the change is none
// when orig is that value already.
func (s *valueSharer) findShared(orig, cur reflect.Value, st *site, h uint64, n int) (change, bool) {
	if st == nil || !st.enabled() {
		return change{}, false
	}
	p := s.shards[h%shareShards].lookup(shareKey{typ: cur.Type(), hash: h, n: n})
	if p == nil {
		return change{}, false
	}
	if p == (*byte)(orig.UnsafePointer()) && (orig.Kind() != reflect.Slice || orig.Cap() == n) {
		st.record(true)
		return change{}, true
	}
	if !sameAsShared(unsafe.Pointer(p), cur, n) {
		return change{}, false
	}
	st.record(true)
	return change{shared: unsafe.Pointer(p), n: n}, true
}

// keepShared makes cur the shared value for its content where st is looked
// up (a copy of it unless owned: the table refers only to memory the cache
// made) and returns what the object is to hold: that value, or cur if
// owned, or nothing.
func (s *valueSharer) keepShared(cur reflect.Value, owned bool, st *site, h uint64, n int) change {
	if st != nil && st.enabled() {
		st.record(false)
		if !owned {
			cur, owned = heapCopy(cur, n), true
		}
		s.shards[h%shareShards].insert(shareKey{typ: cur.Type(), hash: h, n: n}, (*byte)(cur.UnsafePointer()))
	}
	if owned {
		return change{v: cur}
	}
	return change{}
}
