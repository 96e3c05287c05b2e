package cache

import (
	"hash/maphash"
	"reflect"
	"unsafe"
)

// This file is the part of a valueSharer's walk (share_walk.go) that goes
// through maps and interfaces, whose contents have no address of their
// own: an entry or a held value is walked in a variable holding a copy of
// it, and a replaced one is put back in a new map or interface.

func (w *walker) walkMap(plan *typePlan, a unsafe.Pointer, st *site, depth, fr int, need bool) uint64 {
	m := *(*unsafe.Pointer)(a)
	if m == nil {
		return hashNilMap
	}
	// The content hash first, read-only: when an equal map is shared, the
	// whole map is replaced and its entries need no work.
	on := lookedUp(st)
	var h uint64
	if on || need {
		h = mix(hashMapSeed, w.s.hashEntries(plan, m, depth))
	}
	n := reflect.NewAt(plan.t, a).Elem().Len()
	if on && w.found(plan, st, h, fr, a, m, n, true) {
		return h
	}
	var c unsafe.Pointer
	if plan.strMap {
		c = w.shareStringEntries(plan, m)
	} else {
		c = w.shareEntries(plan, m, depth)
	}
	w.keep(plan, on, st, h, m, c, n, fr, a)
	return h
}

// shareStringEntries interns the keys and values of the string map m and
// returns a new map of them, or nil when every one is interned already.
func (w *walker) shareStringEntries(plan *typePlan, m unsafe.Pointer) unsafe.Pointer {
	src := *(*map[string]string)(unsafe.Pointer(&m))
	pairs, changed := w.pairs[:0], false
	for k, v := range src {
		if c, ok := w.s.intern(&plan.sites.key, k, maphash.String(w.s.seed, k)); ok {
			k, changed = c, true
		}
		if c, ok := w.s.intern(&plan.sites.elem, v, maphash.String(w.s.seed, v)); ok {
			v, changed = c, true
		}
		pairs = append(pairs, k, v)
	}
	defer func() {
		// The scratch space keeps no strings alive.
		clear(pairs)
		w.pairs = pairs[:0]
	}()
	if !changed {
		return nil
	}
	c := reflect.MakeMapWithSize(plan.t, len(src)).UnsafePointer()
	out := *(*map[string]string)(unsafe.Pointer(&c))
	for i := 0; i < len(pairs); i += 2 {
		out[pairs[i]] = pairs[i+1]
	}
	return c
}

// shareEntries shares the keys and values of map m, which is not shared
// as a whole, and returns a copy of m with entries replaced, or nil when
// none is.
func (w *walker) shareEntries(plan *typePlan, m unsafe.Pointer, depth int) unsafe.Pointer {
	e := entriesOf(plan, m)
	defer e.done()
	var out reflect.Value
	for ka, va, ok := e.next(); ok; ka, va, ok = e.next() {
		ck := w.walkHolder(plan.key, ka, &plan.sites.key, depth+1)
		ce := w.walkHolder(plan.elem, va, &plan.sites.elem, depth+1)
		if ck == nil && ce == nil {
			continue
		}
		if !out.IsValid() {
			c := copyReferred(plan, m, 0)
			out = reflect.NewAt(plan.t, unsafe.Pointer(&c)).Elem()
		}
		k, v := e.key, e.val
		if ck != nil {
			// An equal key does not replace the stored one: delete first.
			out.SetMapIndex(k, reflect.Value{})
			k = reflect.NewAt(plan.key.t, ck).Elem()
		}
		if ce != nil {
			v = reflect.NewAt(plan.elem.t, ce).Elem()
		}
		out.SetMapIndex(k, v)
	}
	if !out.IsValid() {
		return nil
	}
	return out.UnsafePointer()
}

// walkHolder walks the value of plan's type in the variable at a (a copy
// of a map entry or of a held value) at position st, and returns the
// address of its replacement, or nil when nothing in it is replaced.
func (w *walker) walkHolder(plan *typePlan, a unsafe.Pointer, st *site, depth int) unsafe.Pointer {
	fr := w.push(a, plan.t, -1)
	w.walkValue(plan, a, st, depth, true, fr, false)
	return w.pop(fr)
}

// walkHeld walks the value held in the interface at a. Maps and strings
// held are looked up as values of their own position (unstructured
// content); pointers and slices are not, but their parts are; other values
// are only hashed.
func (w *walker) walkHeld(plan *typePlan, a unsafe.Pointer, depth, fr int, need bool) uint64 {
	e := reflect.NewAt(plan.t, a).Elem().Elem()
	var st *site
	switch {
	case !e.IsValid():
		return hashNilIface
	case e.Kind() == reflect.String:
		return w.walkHeldString(plan, a, e, fr)
	case e.Kind() == reflect.Map:
		st = &w.s.planOf(e.Type()).sites.held
	case e.Kind() == reflect.Pointer || e.Kind() == reflect.Slice:
	default:
		return w.s.hashHeld(plan, a, depth, true)
	}
	held := w.s.planOf(e.Type())
	holder := heldCopy(e)
	fh := w.push(holder, e.Type(), -1)
	h := w.walkValue(held, holder, st, depth+1, true, fh, need)
	if c := w.pop(fh); c != nil {
		reflect.NewAt(plan.t, w.at(fr, a)).Elem().Set(reflect.NewAt(e.Type(), c).Elem())
	}
	return h
}

func (w *walker) walkHeldString(plan *typePlan, a unsafe.Pointer, e reflect.Value, fr int) uint64 {
	str := e.String()
	h := maphash.String(w.s.seed, str)
	canon, changed := w.s.intern(&w.s.planOf(e.Type()).sites.held, str, h)
	if changed {
		v := reflect.New(e.Type()).Elem()
		v.SetString(canon)
		reflect.NewAt(plan.t, w.at(fr, a)).Elem().Set(v)
	}
	return h
}
