package cache

import (
	"bytes"
	"maps"
	"reflect"
	"unsafe"
)

// This file compares a value found in the object a valueSharer walks with
// the shared value of the same hash, as reflect.DeepEqual would, without
// making interface values of them (which allocates for slices and for
// every address rebuilt into a value).

// sameAsShared reports whether the shared value at p (of cur's type: a
// pointer's target, a map, or the array of a slice of length n) is equal
// to cur.
func sameAsShared(p unsafe.Pointer, cur reflect.Value, n int) bool {
	t := cur.Type()
	switch cur.Kind() {
	case reflect.Pointer:
		return !cur.IsNil() && equalContent(reflect.NewAt(t.Elem(), p).Elem(), cur.Elem(), 0)
	case reflect.Slice:
		if cur.IsNil() || cur.Len() != n {
			return false
		}
		et := t.Elem()
		if et.Kind() == reflect.Uint8 {
			return bytes.Equal(unsafe.Slice((*byte)(p), n), cur.Bytes())
		}
		for i := range n {
			if !equalContent(reflect.NewAt(et, unsafe.Add(p, uintptr(i)*et.Size())).Elem(), cur.Index(i), 0) {
				return false
			}
		}
		return true
	default: // map
		if m, ok := asStringMap(cur); ok {
			return !cur.IsNil() && maps.Equal(*(*map[string]string)(unsafe.Pointer(&p)), m)
		}
		return equalContent(fromPointer(t, p, 0), cur, 0)
	}
}

// asStringMap returns map v as a map[string]string when its keys and
// values are strings (of any named string type: same layout).
func asStringMap(v reflect.Value) (map[string]string, bool) {
	t := v.Type()
	if t.Key().Kind() != reflect.String || t.Elem().Kind() != reflect.String {
		return nil, false
	}
	p := v.UnsafePointer()
	return *(*map[string]string)(unsafe.Pointer(&p)), true
}

// equalContent reports whether a and b, of one type, are deeply equal as
// reflect.DeepEqual has it (funcs only when both are nil, NaN never),
// values beyond maxShareDepth never.
func equalContent(a, b reflect.Value, depth int) bool {
	if depth > maxShareDepth {
		return false
	}
	switch a.Kind() {
	case reflect.Bool:
		return a.Bool() == b.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return a.Int() == b.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return a.Uint() == b.Uint()
	case reflect.Float32, reflect.Float64:
		return a.Float() == b.Float()
	case reflect.Complex64, reflect.Complex128:
		return a.Complex() == b.Complex()
	case reflect.String:
		return a.String() == b.String()
	case reflect.Struct:
		for i := range a.NumField() {
			if !equalContent(a.Field(i), b.Field(i), depth+1) {
				return false
			}
		}
		return true
	case reflect.Array:
		return equalElements(a, b, depth)
	case reflect.Pointer:
		if a.UnsafePointer() == b.UnsafePointer() {
			return true
		}
		return !a.IsNil() && !b.IsNil() && equalContent(a.Elem(), b.Elem(), depth+1)
	case reflect.Slice:
		if a.IsNil() != b.IsNil() || a.Len() != b.Len() {
			return false
		}
		if a.UnsafePointer() == b.UnsafePointer() {
			return true
		}
		if a.Type().Elem().Kind() == reflect.Uint8 {
			return bytes.Equal(a.Bytes(), b.Bytes())
		}
		return equalElements(a, b, depth)
	case reflect.Map:
		return equalMaps(a, b, depth)
	case reflect.Interface:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		return a.Elem().Type() == b.Elem().Type() && equalContent(a.Elem(), b.Elem(), depth+1)
	case reflect.Func:
		return a.IsNil() && b.IsNil()
	}
	return a.Pointer() == b.Pointer() // channels, unsafe pointers
}

// equalElements compares the elements of two arrays, or of two slices of
// one length.
func equalElements(a, b reflect.Value, depth int) bool {
	for i := range a.Len() {
		if !equalContent(a.Index(i), b.Index(i), depth+1) {
			return false
		}
	}
	return true
}

func equalMaps(a, b reflect.Value, depth int) bool {
	if a.IsNil() != b.IsNil() || a.Len() != b.Len() {
		return false
	}
	if a.UnsafePointer() == b.UnsafePointer() {
		return true
	}
	if ma, ok := asStringMap(a); ok {
		mb, _ := asStringMap(b)
		return maps.Equal(ma, mb)
	}
	e := newMapEntry(a)
	for it := a.MapRange(); it.Next(); {
		key, val := e.read(it)
		other := b.MapIndex(key)
		if !other.IsValid() || !equalContent(val, other, depth+1) {
			return false
		}
	}
	return true
}

// mapEntry reads the entries of a map iterator into one key and one value
// variable, so that reading an entry allocates nothing. A map read through
// an unexported field cannot be read that way: its entries are copied.
type mapEntry struct {
	key, val reflect.Value
	copied   bool
}

func newMapEntry(m reflect.Value) mapEntry {
	if !m.CanInterface() {
		return mapEntry{copied: true}
	}
	t := m.Type()
	return mapEntry{key: reflect.New(t.Key()).Elem(), val: reflect.New(t.Elem()).Elem()}
}

func (e *mapEntry) read(it *reflect.MapIter) (key, val reflect.Value) {
	if e.copied {
		return it.Key(), it.Value()
	}
	e.key.SetIterKey(it)
	e.val.SetIterValue(it)
	return e.key, e.val
}
