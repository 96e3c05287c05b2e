package dedup

import (
	"reflect"

	apiruntime "k8s.io/apimachinery/pkg/runtime"
)

// This file is the walk of an update: an object that replaces one already
// cached under its key (its twin). Most of an update equals what it
// replaces (a status condition changed, a resource version moved on), and
// the twin's parts are cached memory already, shared where they could be.
// So the walk compares each part of the object with the twin's part at the
// same place, and takes the twin's where they are equal: a comparison, with
// no hashing and no table lookup. Where a part differs, the walk goes on
// beside the twin inside it when both have the same shape (a pointer's
// target, a slice's elements, a map's entries under the same key, a value
// held in an interface of the same type); what differs at the bottom stays
// as decoded, the object's own. An update's new values are rarely another
// object's (times, versions, messages), so looking them up would cost more
// than it saves. Parts that hide or expose state a read may write
// (plan.go) are never compared with the twin's: their exported parts
// are, one by one.

// dedupLike returns obj with its parts pointing at equal parts of twin, a
// cached object of the same type, and at equal values already shared
// elsewhere; obj itself is never written, as with dedup.
func (s *Table) dedupLike(obj, twin interface{}) interface{} {
	v, tv := reflect.ValueOf(obj), reflect.ValueOf(twin)
	if v.Kind() != reflect.Pointer || v.IsNil() || tv.Type() != v.Type() || tv.IsNil() || v.Type().Elem().Kind() != reflect.Struct {
		return s.dedup(obj)
	}
	return s.walkObject(obj, v, tv.UnsafePointer())
}

// walkTwin walks the value of plan's type at a, in frame fr's memory,
// beside the twin's value at b. clean says the twin's value is known to
// reach no state a read may write (reaches): a pointer, slice or map found
// clean is clean all the way down, so its parts are not asked again. The
// walk looks nothing up in the table, so it keeps no position.
func (w *walker) walkTwin(plan *typePlan, a, b addr, depth, fr int, clean bool) {
	if plan.flat || depth > maxDedupDepth {
		return
	}
	switch plan.kind {
	case reflect.Struct:
		for _, i := range plan.twinFields {
			f := &plan.fields[i]
			if f.plan.kind == reflect.String {
				w.twinString(offset(a, f.off), offset(b, f.off), fr)
				continue
			}
			w.walkTwin(f.plan, offset(a, f.off), offset(b, f.off), depth+1, fr, clean)
		}
	case reflect.Array:
		for i := range plan.n {
			off := uintptr(i) * plan.elem.size
			w.walkTwin(plan.elem, offset(a, off), offset(b, off), depth+1, fr, clean)
		}
	case reflect.String:
		w.twinString(a, b, fr)
	case reflect.Pointer, reflect.Slice, reflect.Map:
		if eitherNilOrEmpty(plan, a, b) {
			return
		}
		clean = clean || !w.s.reaches(plan, b, depth)
		if clean && w.s.equalAt(plan, a, b, depth) {
			w.takeTwin(plan, a, b, fr)
			return
		}
		w.twinDescends(plan, a, b, depth, fr, clean)
	case reflect.Interface:
		w.twinHeld(plan, a, b, depth, fr)
	}
}

// twinString makes the string at a the twin's at b when they are equal
// and not already one.
func (w *walker) twinString(a, b addr, fr int) {
	sa, sb := loadString(a), loadString(b)
	if len(sa) > 0 && len(sa) == len(sb) && stringData(sa) != stringData(sb) && sa == sb {
		storeString(w.at(fr, a), sb)
	}
}

// eitherNilOrEmpty reports whether the pointer, slice or map of plan's type
// at a, or the twin's at b, is nil (or an empty slice): then there is
// nothing to take from the twin, nor to walk beside it.
func eitherNilOrEmpty(plan *typePlan, a, b addr) bool {
	if plan.kind == reflect.Slice {
		ha, hb := loadSlice(a), loadSlice(b)
		return ha.len == 0 || hb.len == 0
	}
	return loadWord(a) == nil || loadWord(b) == nil
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
func (w *walker) twinDescends(plan *typePlan, a, b addr, depth, fr int, clean bool) bool {
	switch plan.kind {
	case reflect.Pointer:
		p, q := loadWord(a), loadWord(b)
		if p == nil || q == nil {
			return false
		}
		child := w.push(p, plan.elem.t, -1)
		w.walkTwin(plan.elem, p, q, depth+1, child, clean)
		if c := w.pop(child); c != nil {
			storeWord(w.at(fr, a), c)
		}
		return true
	case reflect.Slice:
		ha, hb := loadSlice(a), loadSlice(b)
		if ha.data == nil || hb.data == nil || plan.elem.kind == reflect.Uint8 {
			return false
		}
		child := w.push(ha.data, plan.t, ha.len)
		for i := range min(ha.len, hb.len) {
			off := uintptr(i) * plan.elem.size
			w.walkTwin(plan.elem, offset(ha.data, off), offset(hb.data, off), depth+1, child, clean)
		}
		if c := w.pop(child); c != nil {
			storeSlice(w.at(fr, a), sliceHeader{data: c, len: ha.len, cap: ha.len})
		}
		return true
	case reflect.Map:
		return w.twinEntries(plan, a, b, depth, fr, clean)
	}
	return false
}

// twinEntries walks each entry of the map at a beside the twin map's entry
// under the same key, and puts the entries with parts replaced in a copy of
// the map. Maps of strings to strings are left as they are: a new map to
// save a few strings costs as much as it saves.
func (w *walker) twinEntries(plan *typePlan, a, b addr, depth, fr int, clean bool) bool {
	ma, mb := loadWord(a), loadWord(b)
	if ma == nil || mb == nil || plan.elem.flat || plan.elem.kind == reflect.String {
		return false
	}
	e := entriesOf(plan, ma)
	defer e.done()
	storeWord(e.m2.Addr().UnsafePointer(), mb)
	var out reflect.Value
	for _, va, ok := e.next(); ok; _, va, ok = e.next() {
		found := e.m2.MapIndex(e.key)
		if !found.IsValid() {
			continue
		}
		e.other.Set(found)
		fh := w.push(va, plan.elem.t, -1)
		w.walkTwin(plan.elem, va, e.other.Addr().UnsafePointer(), depth+1, fh, clean)
		c := w.pop(fh)
		if c == nil {
			continue
		}
		if !out.IsValid() {
			m := copyReferred(plan, ma, 0)
			out = reflect.NewAt(plan.t, boxWord(m)).Elem()
		}
		out.SetMapIndex(e.key, reflect.NewAt(plan.elem.t, c).Elem())
	}
	if out.IsValid() {
		storeWord(w.at(fr, a), out.UnsafePointer())
	}
	return true
}

// twinHeld walks the value held in the interface at a beside the one held
// at b, when both hold the same type: a string equal to the twin's becomes
// the twin's, and a map, pointer or slice is walked beside the twin's.
func (w *walker) twinHeld(plan *typePlan, a, b addr, depth, fr int) {
	ea, eb := reflect.NewAt(plan.t, a).Elem().Elem(), reflect.NewAt(plan.t, b).Elem().Elem()
	if !ea.IsValid() || !eb.IsValid() || ea.Type() != eb.Type() {
		return
	}
	switch ea.Kind() {
	case reflect.String:
		sa, sb := ea.String(), eb.String()
		if sa == sb && len(sa) > 0 && stringData(sa) != stringData(sb) {
			reflect.NewAt(plan.t, w.at(fr, a)).Elem().Set(eb)
		}
		return
	case reflect.Map, reflect.Pointer, reflect.Slice:
	default:
		return
	}
	held := w.s.planOf(ea.Type())
	holder := heldCopy(ea)
	fh := w.push(holder, ea.Type(), -1)
	w.walkTwin(held, holder, heldCopy(eb), depth+1, fh, false)
	if c := w.pop(fh); c != nil {
		reflect.NewAt(plan.t, w.at(fr, a)).Elem().Set(reflect.NewAt(ea.Type(), c).Elem())
	}
}

// Share returns the object the cache keeps for obj, a decoded object that
// enters the cache: obj with its parts pointing at equal values of the
// objects already shared through t. obj itself is never written (the walk
// copies the path to each replaced part): its source (a fake clientset, a
// transform returning its input) may hand the same object to others, who
// may be reading it now. A value that is not a runtime.Object is returned
// as it is, unshared.
func (t *Table) Share(obj interface{}) interface{} {
	return t.ShareUpdate(obj, nil)
}

// ShareUpdate is Share for an object that replaces twin in the cache (nil:
// none, as Share): obj's parts equal to twin's at the same place are taken
// from twin, by comparison, before anything is looked up in the table.
func (t *Table) ShareUpdate(obj, twin interface{}) interface{} {
	ro, ok := obj.(apiruntime.Object)
	if !ok || ro == nil {
		return obj
	}
	if twin != nil {
		return t.dedupLike(ro, twin)
	}
	return t.dedup(ro)
}
