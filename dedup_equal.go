package cache

import (
	"bytes"
	"maps"
	"math"
	"reflect"
)

// This file compares a value found in the object a valueSharer walks with
// the shared value of the same hash, or with the part of the cached object
// it replaces, by address and plan, without making interface values of
// them. Equal means the same bytes once encoded: floats are compared by
// their bits (-0 is not +0) and a NaN equals nothing; nil and empty differ;
// funcs are equal only when both are nil. A cached value that reaches
// state a read may write (share_plan.go, reaches below) is never compared:
// that would read memory that another goroutine may be reading, and so
// writing. Callers check it (walkTwin); the table holds no such value.

// sameAsShared reports whether the shared value at p equals the one at
// cur, both of what plan's type refers to: a pointer's target, the arrays
// of two slices of length n, or two maps.
func (s *valueSharer) sameAsShared(plan *typePlan, p, cur addr, n int) bool {
	switch plan.kind {
	case reflect.Pointer:
		return s.equalAt(plan.elem, p, cur, 1)
	case reflect.Slice:
		return s.equalArrays(plan.elem, p, cur, n, 1)
	}
	return s.equalMaps(plan, p, cur, 1)
}

// equalAt reports whether the values at a and b, of plan's type, are
// equal; values beyond maxShareDepth never are.
func (s *valueSharer) equalAt(plan *typePlan, a, b addr, depth int) bool {
	if depth > maxShareDepth {
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
		for i := range plan.fields {
			f := &plan.fields[i]
			if !s.equalAt(f.plan, offset(a, f.off), offset(b, f.off), depth+1) {
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

// equalReferred compares the pointers, slices or maps at a and b by what
// they refer to.
func (s *valueSharer) equalReferred(plan *typePlan, a, b addr, depth int) bool {
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
func (s *valueSharer) equalArrays(elem *typePlan, a, b addr, n, depth int) bool {
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
func (s *valueSharer) equalMaps(plan *typePlan, ma, mb addr, depth int) bool {
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
func (s *valueSharer) equalHeld(plan *typePlan, a, b addr, depth int) bool {
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
func (s *valueSharer) reaches(plan *typePlan, a addr, depth int) bool {
	if !plan.exposes {
		return false
	}
	if depth > maxShareDepth {
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
func (s *valueSharer) reachesIn(plan *typePlan, a addr, depth int) bool {
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
