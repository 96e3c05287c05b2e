package dedup

import (
	"bytes"
	"hash/maphash"
	"maps"
	"math"
	"reflect"
)

// This file is the content hash of the values a table looks up. The
// walk (walk.go) computes the same hash while it shares, bottom-up,
// from the same rules: hashing a value here and walking it give one hash,
// which TestDeduper_HashMatchesWalk holds. The hash depends on content
// only; where a value lies is part of its table key, not of its hash.

// hashValue returns the content hash of the value of plan's type at a.
// Under an unexported field (settable false) pointers are hashed by
// address, as the walk leaves them.
func (s *Table) hashValue(plan *typePlan, a addr, depth int, settable bool) uint64 {
	if depth > maxDedupDepth {
		return uint64(plan.kind)
	}
	if plan.flat {
		return s.hashFlat(plan, a)
	}
	switch plan.kind {
	case reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return hashFloats(plan.kind, a)
	case reflect.String:
		return maphash.String(s.seed, loadString(a))
	case reflect.Struct:
		h := uint64(hashStruct)
		for i := range plan.fields {
			f := &plan.fields[i]
			h = mix(h, s.hashValue(f.plan, offset(a, f.off), depth+1, settable && f.exported))
		}
		return h
	case reflect.Array:
		h := uint64(hashArray)
		for i := range plan.n {
			h = mix(h, s.hashValue(plan.elem, offset(a, uintptr(i)*plan.elem.size), depth+1, settable))
		}
		return h
	case reflect.Pointer:
		p := loadWord(a)
		switch {
		case p == nil:
			return hashNilPtr
		case !settable:
			return mix(hashPtrSeed, addressBits(p))
		}
		return mix(hashPtrSeed, s.hashValue(plan.elem, p, depth+1, true))
	case reflect.Slice:
		return s.hashSlice(plan, loadSlice(a), depth, settable)
	case reflect.Map:
		m := loadWord(a)
		if m == nil {
			return hashNilMap
		}
		return mix(hashMapSeed, s.hashEntries(plan, m, depth))
	case reflect.Interface:
		return s.hashHeld(plan, a, depth, settable)
	}
	// Funcs, channels, unsafe pointers: by address; no two non-nil ones
	// are ever equal (equalAt, below), so they are never shared.
	return mix(hashAddress, addressBits(loadWord(a)))
}

// hashFlat hashes a value made only of booleans and integers by its bytes.
func (s *Table) hashFlat(plan *typePlan, a addr) uint64 {
	switch plan.kind {
	case reflect.Bool:
		if loadBool(a) {
			return hashTrue
		}
		return hashFalse
	case reflect.Struct, reflect.Array:
		if plan.dense {
			return maphash.Bytes(s.seed, bytesAt(a, plan.size))
		}
		return s.hashSparse(plan, a)
	}
	switch plan.size {
	case 1:
		return mix(hashOffset, uint64(loadUint8(a)))
	case 2:
		return mix(hashOffset, uint64(loadUint16(a)))
	case 4:
		return mix(hashOffset, uint64(loadUint32(a)))
	}
	return mix(hashOffset, loadUint64(a))
}

// hashSparse hashes a flat struct or array with padding, part by part.
func (s *Table) hashSparse(plan *typePlan, a addr) uint64 {
	h := uint64(hashStruct)
	if plan.kind == reflect.Array {
		for i := range plan.n {
			h = mix(h, s.hashFlat(plan.elem, offset(a, uintptr(i)*plan.elem.size)))
		}
		return h
	}
	for i := range plan.fields {
		f := &plan.fields[i]
		h = mix(h, s.hashFlat(f.plan, offset(a, f.off)))
	}
	return h
}

// hashFloats hashes a float or complex number by its bits: -0 and +0
// differ, as they do in JSON.
func hashFloats(kind reflect.Kind, a addr) uint64 {
	switch kind {
	case reflect.Float32:
		return mix(hashOffset, uint64(math.Float32bits(loadFloat32(a))))
	case reflect.Float64:
		return mix(hashOffset, math.Float64bits(loadFloat64(a)))
	case reflect.Complex64:
		c := loadComplex64(a)
		return mix(mix(hashOffset, uint64(math.Float32bits(real(c)))), uint64(math.Float32bits(imag(c))))
	}
	c := loadComplex128(a)
	return mix(mix(hashOffset, math.Float64bits(real(c))), math.Float64bits(imag(c)))
}

// hashSlice hashes the slice with header hdr.
func (s *Table) hashSlice(plan *typePlan, hdr sliceHeader, depth int, settable bool) uint64 {
	if hdr.data == nil {
		return hashNilSlice
	}
	h := mix(hashSliceSeed, uint64(hdr.len))
	if plan.elem.kind == reflect.Uint8 {
		return mix(h, maphash.Bytes(s.seed, bytesAt(hdr.data, uintptr(hdr.len))))
	}
	for i := range hdr.len {
		h = mix(h, s.hashValue(plan.elem, offset(hdr.data, uintptr(i)*plan.elem.size), depth+1, settable))
	}
	return h
}

// hashEntries returns a hash of the entries of map m (of plan's type),
// independent of their order. Pointers in entries are hashed by address.
func (s *Table) hashEntries(plan *typePlan, m addr, depth int) uint64 {
	var sum uint64
	if plan.strMap {
		for k, e := range stringMapOf(m) {
			sum += mix(mix(hashOffset, maphash.String(s.seed, k)), maphash.String(s.seed, e))
		}
		return sum
	}
	e := entriesOf(plan, m)
	defer e.done()
	for ka, va, ok := e.next(); ok; ka, va, ok = e.next() {
		kh := s.hashValue(plan.key, ka, depth+1, false)
		vh := s.hashValue(plan.elem, va, depth+1, false)
		sum += mix(mix(hashOffset, kh), vh)
	}
	return sum
}

// hashHeld hashes the value held in the interface at a. Maps, strings,
// pointers and slices held are hashed as where the interface lies; other
// values as under an unexported field, since the walk replaces nothing
// in them.
func (s *Table) hashHeld(plan *typePlan, a addr, depth int, settable bool) uint64 {
	e := reflect.NewAt(plan.t, a).Elem().Elem()
	if !e.IsValid() {
		return hashNilIface
	}
	switch e.Kind() {
	case reflect.String:
		return maphash.String(s.seed, e.String())
	case reflect.Bool:
		if e.Bool() {
			return hashTrue
		}
		return hashFalse
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return mix(hashOffset, uint64(e.Int()))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return mix(hashOffset, e.Uint())
	case reflect.Float32, reflect.Float64:
		return mix(hashOffset, math.Float64bits(e.Float()))
	case reflect.Map, reflect.Pointer, reflect.Slice:
	default:
		settable = false
	}
	held := heldCopy(e)
	return s.hashValue(s.planOf(e.Type()), held, depth+1, settable)
}

// heldCopy returns the address of a copy of e, a value held in an
// interface.
func heldCopy(e reflect.Value) addr {
	switch e.Kind() {
	case reflect.Map, reflect.Pointer:
		return boxWord(e.UnsafePointer())
	case reflect.Slice:
		return boxSlice(sliceHeader{data: e.UnsafePointer(), len: e.Len(), cap: e.Cap()})
	}
	c := reflect.New(e.Type())
	c.Elem().Set(e)
	return c.UnsafePointer()
}

// mapEntry is what going through the entries of a map of one type needs:
// a variable holding the map, an iterator, and variables for a key, a
// value and another value, into which entries are read without allocating.
// Each plan of a map type keeps its own in a pool (typePlan.entries), so
// that walking a map allocates none of them; a walk nested in another
// takes another.
type mapEntry struct {
	plan            *typePlan
	m, m2           reflect.Value
	it              reflect.MapIter
	key, val, other reflect.Value
}

// entriesOf returns a mapEntry iterating the map m of plan's type; done
// gives it back.
func entriesOf(plan *typePlan, m addr) *mapEntry {
	e, _ := plan.entries.Get().(*mapEntry)
	if e == nil {
		t := plan.t
		e = &mapEntry{plan: plan, m: reflect.New(t).Elem(), m2: reflect.New(t).Elem(),
			key: reflect.New(t.Key()).Elem(), val: reflect.New(t.Elem()).Elem(), other: reflect.New(t.Elem()).Elem()}
	}
	storeWord(e.m.Addr().UnsafePointer(), m)
	e.it.Reset(e.m)
	return e
}

// next reads the next entry and returns the addresses of its key and
// value, or false at the end.
func (e *mapEntry) next() (key, val addr, ok bool) {
	if !e.it.Next() {
		return nil, nil, false
	}
	e.key.SetIterKey(&e.it)
	e.val.SetIterValue(&e.it)
	return e.key.Addr().UnsafePointer(), e.val.Addr().UnsafePointer(), true
}

// done clears e, so that the pool keeps nothing alive, and gives it back.
func (e *mapEntry) done() {
	e.it.Reset(reflect.Value{})
	e.m.SetZero()
	e.m2.SetZero()
	e.key.SetZero()
	e.val.SetZero()
	e.other.SetZero()
	e.plan.entries.Put(e)
}

// What follows compares a value found in the object a table walks with
// the shared value of the same hash, or with the part of the cached object
// it replaces, by address and plan, without making interface values of
// them. Equal means the same bytes once encoded: floats are compared by
// their bits (-0 is not +0) and a NaN equals nothing; nil and empty differ;
// funcs are equal only when both are nil. A cached value that reaches
// state a read may write (plan.go, reaches below) is never compared:
// that would read memory that another goroutine may be reading, and so
// writing. Callers check it (walkTwin); the table holds no such value.

// sameAsKept reports whether the shared value at p equals the one at
// cur, both of what plan's type refers to: a pointer's target, the arrays
// of two slices of length n, or two maps.
func (s *Table) sameAsKept(plan *typePlan, p, cur addr, n int) bool {
	switch plan.kind {
	case reflect.Pointer:
		return s.equalAt(plan.elem, p, cur, 1)
	case reflect.Slice:
		return s.equalArrays(plan.elem, p, cur, n, 1)
	}
	return s.equalMaps(plan, p, cur, 1)
}

// equalAt reports whether the values at a and b, of plan's type, are
// equal; values beyond maxDedupDepth never are.
func (s *Table) equalAt(plan *typePlan, a, b addr, depth int) bool {
	if depth > maxDedupDepth {
		return false
	}
	if plan.dense {
		// Booleans and integers without padding: equal bytes are equal
		// values.
		return plan.size == 0 || bytes.Equal(bytesAt(a, plan.size), bytesAt(b, plan.size))
	}
	switch plan.kind {
	case reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return sameFloats(plan.kind, a, b)
	case reflect.String:
		return loadString(a) == loadString(b)
	case reflect.Struct:
		for i := range plan.equalRuns {
			if !s.equalRun(&plan.equalRuns[i], a, b, depth) {
				return false
			}
		}
		return true
	case reflect.Array:
		return s.equalArrays(plan.elem, a, b, plan.n, depth)
	case reflect.Pointer, reflect.Slice, reflect.Map:
		return s.equalReferred(plan, a, b, depth)
	case reflect.Interface:
		return s.equalHeld(plan, a, b, depth)
	case reflect.Func:
		return loadWord(a) == nil && loadWord(b) == nil
	}
	return loadWord(a) == loadWord(b) // channels, unsafe pointers
}

// equalRun compares the part r of the structs at a and b.
func (s *Table) equalRun(r *fieldRun, a, b addr, depth int) bool {
	switch r.kind {
	case runBytes:
		return bytes.Equal(bytesAt(offset(a, r.off), r.size), bytesAt(offset(b, r.off), r.size))
	case runString:
		return loadString(offset(a, r.off)) == loadString(offset(b, r.off))
	}
	return s.equalAt(r.plan, offset(a, r.off), offset(b, r.off), depth+1)
}

// equalReferred compares the pointers, slices or maps at a and b by what
// they refer to.
func (s *Table) equalReferred(plan *typePlan, a, b addr, depth int) bool {
	switch plan.kind {
	case reflect.Pointer:
		pa, pb := loadWord(a), loadWord(b)
		if pa == pb {
			return true
		}
		return pa != nil && pb != nil && s.equalAt(plan.elem, pa, pb, depth+1)
	case reflect.Slice:
		ha, hb := loadSlice(a), loadSlice(b)
		if (ha.data == nil) != (hb.data == nil) || ha.len != hb.len {
			return false
		}
		return ha.data == hb.data || s.equalArrays(plan.elem, ha.data, hb.data, ha.len, depth)
	}
	return s.equalMaps(plan, loadWord(a), loadWord(b), depth)
}

// sameFloats compares two floats or complex numbers by their bits; a NaN
// equals nothing, not even the same bits.
func sameFloats(kind reflect.Kind, a, b addr) bool {
	switch kind {
	case reflect.Float32:
		return sameBits32(loadFloat32(a), loadFloat32(b))
	case reflect.Float64:
		return sameBits64(loadFloat64(a), loadFloat64(b))
	case reflect.Complex64:
		x, y := loadComplex64(a), loadComplex64(b)
		return sameBits32(real(x), real(y)) && sameBits32(imag(x), imag(y))
	}
	x, y := loadComplex128(a), loadComplex128(b)
	return sameBits64(real(x), real(y)) && sameBits64(imag(x), imag(y))
}

func sameBits32(x, y float32) bool {
	return !math.IsNaN(float64(x)) && math.Float32bits(x) == math.Float32bits(y)
}

func sameBits64(x, y float64) bool {
	return !math.IsNaN(x) && math.Float64bits(x) == math.Float64bits(y)
}

// equalArrays compares n elements of elem's type at a and b.
func (s *Table) equalArrays(elem *typePlan, a, b addr, n, depth int) bool {
	if elem.kind == reflect.Uint8 {
		return bytes.Equal(bytesAt(a, uintptr(n)), bytesAt(b, uintptr(n)))
	}
	for i := range n {
		off := uintptr(i) * elem.size
		if !s.equalAt(elem, offset(a, off), offset(b, off), depth+1) {
			return false
		}
	}
	return true
}

// equalMaps compares the maps ma and mb of plan's type.
func (s *Table) equalMaps(plan *typePlan, ma, mb addr, depth int) bool {
	if ma == mb {
		return true
	}
	if ma == nil || mb == nil {
		return false
	}
	if plan.strMap {
		return maps.Equal(stringMapOf(ma), stringMapOf(mb))
	}
	e := entriesOf(plan, ma)
	defer e.done()
	storeWord(e.m2.Addr().UnsafePointer(), mb)
	if e.m.Len() != e.m2.Len() {
		return false
	}
	for _, va, ok := e.next(); ok; _, va, ok = e.next() {
		found := e.m2.MapIndex(e.key)
		if !found.IsValid() {
			return false
		}
		e.other.Set(found)
		if !s.equalAt(plan.elem, va, e.other.Addr().UnsafePointer(), depth+1) {
			return false
		}
	}
	return true
}

// equalHeld compares the values held in the interfaces at a and b.
func (s *Table) equalHeld(plan *typePlan, a, b addr, depth int) bool {
	ea, eb := reflect.NewAt(plan.t, a).Elem().Elem(), reflect.NewAt(plan.t, b).Elem().Elem()
	if !ea.IsValid() || !eb.IsValid() {
		return ea.IsValid() == eb.IsValid()
	}
	if ea.Type() != eb.Type() {
		return false
	}
	if ea.Kind() == reflect.String {
		return ea.String() == eb.String()
	}
	held := s.planOf(ea.Type())
	if held.hidden || held.exposes {
		return false
	}
	return s.equalAt(held, heldCopy(ea), heldCopy(eb), depth+1)
}

// reaches reports whether a reader of the pointer, slice or map of plan's
// type at a can reach, by address, a value that hides state a read may
// write (plan.exposes says one of its type may; this says whether this one
// does). Only parts whose types may lead to one are followed, so a
// container's env vars cost a look at each one's valueFrom pointer. Such a
// value is never shared whole, nor compared with a cached one.
func (s *Table) reaches(plan *typePlan, a addr, depth int) bool {
	if !plan.exposes {
		return false
	}
	if depth > maxDedupDepth {
		return true
	}
	switch plan.kind {
	case reflect.Pointer:
		p := loadWord(a)
		return p != nil && (plan.elem.hidden || s.reachesIn(plan.elem, p, depth+1))
	case reflect.Slice:
		h := loadSlice(a)
		if h.data == nil || h.len == 0 {
			return false
		}
		if plan.elem.hidden {
			return true
		}
		for i := range h.len {
			if s.reachesIn(plan.elem, offset(h.data, uintptr(i)*plan.elem.size), depth+1) {
				return true
			}
		}
		return false
	case reflect.Map:
		m := loadWord(a)
		if m == nil {
			return false
		}
		e := entriesOf(plan, m)
		defer e.done()
		for ka, va, ok := e.next(); ok; ka, va, ok = e.next() {
			if s.reachesIn(plan.key, ka, depth+1) || s.reachesIn(plan.elem, va, depth+1) {
				return true
			}
		}
		return false
	}
	return s.reachesIn(plan, a, depth)
}

// reachesIn is reaches for a value of any kind held inline at a.
func (s *Table) reachesIn(plan *typePlan, a addr, depth int) bool {
	if !plan.exposes {
		return false
	}
	switch plan.kind {
	case reflect.Struct:
		for i := range plan.fields {
			f := &plan.fields[i]
			if f.exported && s.reachesIn(f.plan, offset(a, f.off), depth+1) {
				return true
			}
		}
		return false
	case reflect.Array:
		for i := range plan.n {
			if s.reachesIn(plan.elem, offset(a, uintptr(i)*plan.elem.size), depth+1) {
				return true
			}
		}
		return false
	}
	return s.reaches(plan, a, depth)
}
