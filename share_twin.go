package cache

import (
	"reflect"
)

// This file is the walk of an update: an object that replaces one already
// cached under its key (its twin). Most of an update equals what it
// replaces (a status condition changed, a resource version moved on), and
// the twin's parts are cached memory already, shared where they could be.
// So the walk first compares each part of the object with the twin's part
// at the same place, and takes the twin's where they are equal: a
// comparison, with no hashing and no table lookup. Only parts that differ
// are walked as a new object's are (share_walk.go). Parts that hide or
// expose state a read may write (share_plan.go) are never compared with
// the twin's: their exported parts are, one by one.

// shareLike returns obj with its parts pointing at equal parts of twin, a
// cached object of the same type, and at equal values already shared
// elsewhere; obj itself is never written, as with share.
func (s *valueSharer) shareLike(obj, twin interface{}) interface{} {
	v, tv := reflect.ValueOf(obj), reflect.ValueOf(twin)
	if v.Kind() != reflect.Pointer || v.IsNil() || tv.Type() != v.Type() || tv.IsNil() || v.Type().Elem().Kind() != reflect.Struct {
		return s.share(obj)
	}
	return s.walkObject(obj, v, tv.UnsafePointer())
}

// walkTwin walks the value of plan's type at a, in frame fr's memory,
// beside the twin's value at b; at is a's position, as for walkValue.
func (w *walker) walkTwin(plan *typePlan, a, b addr, at position, depth, fr int) {
	if plan.flat || depth > maxShareDepth {
		return
	}
	switch plan.kind {
	case reflect.Struct:
		for i := range plan.fields {
			f := &plan.fields[i]
			if f.exported {
				w.walkTwin(f.plan, offset(a, f.off), offset(b, f.off), at.field(i, f.site), depth+1, fr)
			}
		}
		return
	case reflect.Array:
		elem := at.step(pathElem, &plan.sites.elem)
		for i := range plan.n {
			off := uintptr(i) * plan.elem.size
			w.walkTwin(plan.elem, offset(a, off), offset(b, off), elem, depth+1, fr)
		}
		return
	case reflect.String, reflect.Pointer, reflect.Slice, reflect.Map:
	default:
		// Floats, interfaces and the rest: as in a new object.
		w.walkValue(plan, a, at, depth, true, fr, false)
		return
	}
	if !w.s.reaches(plan, b, depth) && w.s.equalAt(plan, a, b, depth) {
		w.takeTwin(plan, a, b, fr)
		return
	}
	if w.looksUp(plan, a, at, depth) || !w.twinDescends(plan, a, b, at, depth, fr) {
		w.walkValue(plan, a, at, depth, true, fr, false)
	}
}

// takeTwin makes the value at a (equal to the twin's at b) the twin's
// memory, unless it is already.
func (w *walker) takeTwin(plan *typePlan, a, b addr, fr int) {
	switch plan.kind {
	case reflect.String:
		sa, sb := loadString(a), loadString(b)
		if len(sa) > 0 && stringData(sa) != stringData(sb) {
			storeString(w.at(fr, a), sb)
		}
	case reflect.Slice:
		ha, hb := loadSlice(a), loadSlice(b)
		if hb.data != nil && hb.len > 0 && (ha.data != hb.data || ha.cap != ha.len) {
			// Its capacity cut, so that an append never writes into the
			// twin's array.
			storeSlice(w.at(fr, a), sliceHeader{data: hb.data, len: hb.len, cap: hb.len})
		}
	default: // pointer, map
		pa, pb := loadWord(a), loadWord(b)
		if pa != pb {
			storeWord(w.at(fr, a), pb)
		}
	}
}

// twinDescends walks the parts of the pointer's target or slice's
// elements at a beside the twin's at b, when both have the same shape (a
// target each, or as many elements), and reports whether it did.
func (w *walker) twinDescends(plan *typePlan, a, b addr, at position, depth, fr int) bool {
	switch plan.kind {
	case reflect.Pointer:
		p, q := loadWord(a), loadWord(b)
		if p == nil || q == nil {
			return false
		}
		child := w.push(p, plan.elem.t, -1)
		w.walkTwin(plan.elem, p, q, at.unlooked(), depth+1, child)
		if c := w.pop(child); c != nil {
			storeWord(w.at(fr, a), c)
		}
		return true
	case reflect.Slice:
		ha, hb := loadSlice(a), loadSlice(b)
		if ha.data == nil || hb.data == nil || ha.len != hb.len || plan.elem.kind == reflect.Uint8 {
			return false
		}
		child := w.push(ha.data, plan.t, ha.len)
		elem := at.step(pathElem, &plan.sites.elem)
		for i := range ha.len {
			off := uintptr(i) * plan.elem.size
			w.walkTwin(plan.elem, offset(ha.data, off), offset(hb.data, off), elem, depth+1, child)
		}
		if c := w.pop(child); c != nil {
			storeSlice(w.at(fr, a), sliceHeader{data: c, len: ha.len, cap: ha.len})
		}
		return true
	}
	return false
}
