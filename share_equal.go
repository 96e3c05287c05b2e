package cache

import (
	"bytes"
	"maps"
	"reflect"
	"unsafe"
)

// This file compares a value found in the object a valueSharer walks with
// the shared value of the same hash, as reflect.DeepEqual would (funcs
// only when both are nil, NaN never), by address and plan, without making
// interface values of them.

// sameAsShared reports whether the shared value at p equals the one at
// cur, both of what plan's type refers to: a pointer's target, the arrays
// of two slices of length n, or two maps.
func (s *valueSharer) sameAsShared(plan *typePlan, p, cur unsafe.Pointer, n int) bool {
	switch plan.kind {
	case reflect.Pointer:
		return s.equalAt(plan.elem, p, cur, 1)
	case reflect.Slice:
		return s.equalArrays(plan.elem, p, cur, n, 1)
	}
	return s.equalMaps(plan, p, cur, 1)
}

// equalAt reports whether the values at a and b, of plan's type, are
// deeply equal; values beyond maxShareDepth never are.
func (s *valueSharer) equalAt(plan *typePlan, a, b unsafe.Pointer, depth int) bool {
	if depth > maxShareDepth {
		return false
	}
	if plan.dense {
		// Booleans and integers without padding: equal bytes are equal
		// values.
		return plan.size == 0 || bytes.Equal(unsafe.Slice((*byte)(a), plan.size), unsafe.Slice((*byte)(b), plan.size))
	}
	switch plan.kind {
	case reflect.Float32:
		return *(*float32)(a) == *(*float32)(b)
	case reflect.Float64:
		return *(*float64)(a) == *(*float64)(b)
	case reflect.Complex64:
		return *(*complex64)(a) == *(*complex64)(b)
	case reflect.Complex128:
		return *(*complex128)(a) == *(*complex128)(b)
	case reflect.String:
		return *(*string)(a) == *(*string)(b)
	case reflect.Struct:
		for i := range plan.fields {
			f := &plan.fields[i]
			if !s.equalAt(f.plan, unsafe.Add(a, f.off), unsafe.Add(b, f.off), depth+1) {
				return false
			}
		}
		return true
	case reflect.Array:
		return s.equalArrays(plan.elem, a, b, plan.n, depth)
	case reflect.Pointer:
		pa, pb := *(*unsafe.Pointer)(a), *(*unsafe.Pointer)(b)
		if pa == pb {
			return true
		}
		return pa != nil && pb != nil && s.equalAt(plan.elem, pa, pb, depth+1)
	case reflect.Slice:
		ha, hb := (*sliceHeader)(a), (*sliceHeader)(b)
		if (ha.data == nil) != (hb.data == nil) || ha.len != hb.len {
			return false
		}
		return ha.data == hb.data || s.equalArrays(plan.elem, ha.data, hb.data, ha.len, depth)
	case reflect.Map:
		return s.equalMaps(plan, *(*unsafe.Pointer)(a), *(*unsafe.Pointer)(b), depth)
	case reflect.Interface:
		return s.equalHeld(plan, a, b, depth)
	case reflect.Func:
		return *(*unsafe.Pointer)(a) == nil && *(*unsafe.Pointer)(b) == nil
	}
	return *(*unsafe.Pointer)(a) == *(*unsafe.Pointer)(b) // channels, unsafe pointers
}

// equalArrays compares n elements of elem's type at a and b.
func (s *valueSharer) equalArrays(elem *typePlan, a, b unsafe.Pointer, n, depth int) bool {
	if elem.kind == reflect.Uint8 {
		return bytes.Equal(unsafe.Slice((*byte)(a), n), unsafe.Slice((*byte)(b), n))
	}
	for i := range n {
		off := uintptr(i) * elem.size
		if !s.equalAt(elem, unsafe.Add(a, off), unsafe.Add(b, off), depth+1) {
			return false
		}
	}
	return true
}

// equalMaps compares the maps ma and mb of plan's type.
func (s *valueSharer) equalMaps(plan *typePlan, ma, mb unsafe.Pointer, depth int) bool {
	if ma == mb {
		return true
	}
	if ma == nil || mb == nil {
		return false
	}
	if plan.strMap {
		return maps.Equal(*(*map[string]string)(unsafe.Pointer(&ma)), *(*map[string]string)(unsafe.Pointer(&mb)))
	}
	e := entriesOf(plan, ma)
	defer e.done()
	*(*unsafe.Pointer)(e.m2.Addr().UnsafePointer()) = mb
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
func (s *valueSharer) equalHeld(plan *typePlan, a, b unsafe.Pointer, depth int) bool {
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
	return s.equalAt(s.planOf(ea.Type()), heldCopy(ea), heldCopy(eb), depth+1)
}
