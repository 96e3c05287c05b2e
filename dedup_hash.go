package cache

import (
	"hash/maphash"
	"math"
	"reflect"
)

// This file is the content hash of the values a valueSharer looks up. The
// walk (share_walk.go) computes the same hash while it shares, bottom-up,
// from the same rules: hashing a value here and walking it give one hash,
// which TestValueSharer_HashMatchesWalk holds. The hash depends on content
// only; where a value lies is part of its table key, not of its hash.

// hashValue returns the content hash of the value of plan's type at a.
// Under an unexported field (settable false) pointers are hashed by
// address, as the walk leaves them.
func (s *valueSharer) hashValue(plan *typePlan, a addr, depth int, settable bool) uint64 {
	if depth > maxShareDepth {
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
	// are ever equal (share_equal.go), so they are never shared.
	return mix(hashAddress, addressBits(loadWord(a)))
}

// hashFlat hashes a value made only of booleans and integers by its bytes.
func (s *valueSharer) hashFlat(plan *typePlan, a addr) uint64 {
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
func (s *valueSharer) hashSparse(plan *typePlan, a addr) uint64 {
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
func (s *valueSharer) hashSlice(plan *typePlan, hdr sliceHeader, depth int, settable bool) uint64 {
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
func (s *valueSharer) hashEntries(plan *typePlan, m addr, depth int) uint64 {
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
func (s *valueSharer) hashHeld(plan *typePlan, a addr, depth int, settable bool) uint64 {
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
