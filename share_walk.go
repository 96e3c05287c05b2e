package cache

import (
	"hash/maphash"
	"reflect"
	"strings"
	"sync"
	"unsafe"
)

// This file is the walk of a valueSharer (share.go) over one object.
//
// The walk goes through the object by address, following the plan of each
// type (share_plan.go), hashes its content bottom-up (share_hash.go) and,
// at each position still looked up, finds the shared value equal to the
// part there. It never writes into the object it is given: that object
// belongs to whoever returned it (a ListerWatcher, a transform), who may
// hand it to others. A replacement is written into a copy of the memory
// holding the replaced part (a frame: the object, a pointer's target, a
// slice's array), made once however many of its parts change; the copy
// then replaces the frame in the frame above, and so on up to the object.
// Memory with nothing to replace stays the input's. So an object made only
// of values already shared costs a copy of its spine, not of its whole.

// walker is one walk's state: the frames on the path from the object to
// the value walked now.
type walker struct {
	s      *valueSharer
	frames []frame
	// pairs is scratch space for the entries of a string map.
	pairs []string
}

// frame is memory of its own on the walk's path: the object, a pointer's
// target, a slice's array, or a variable holding a map entry or a value
// held in an interface. Structs and arrays held inline lie in their
// frame's memory, so a change anywhere in them is written into the one
// copy of the frame.
type frame struct {
	orig unsafe.Pointer
	// t is the type of the value at orig, or the slice type when the frame
	// is a slice's array of n elements (n is -1 otherwise).
	t reflect.Type
	n int
	// copy is orig's copy, once made.
	copy unsafe.Pointer
}

var walkers = sync.Pool{New: func() any { return &walker{frames: make([]frame, 0, 16)} }}

// push starts the frame of the memory at orig and returns its index.
func (w *walker) push(orig unsafe.Pointer, t reflect.Type, n int) int {
	w.frames = append(w.frames, frame{orig: orig, t: t, n: n})
	return len(w.frames) - 1
}

// pop ends frame i, the last one, and returns its copy, or nil when
// nothing in it was replaced.
func (w *walker) pop(i int) unsafe.Pointer {
	c := w.frames[i].copy
	w.frames[i] = frame{}
	w.frames = w.frames[:i]
	return c
}

// at returns where the replacement of the value at a, which lies in frame
// fr's original memory, is written: the same place in the frame's copy,
// made on first use.
func (w *walker) at(fr int, a unsafe.Pointer) unsafe.Pointer {
	f := &w.frames[fr]
	if f.copy == nil {
		f.copy = copyMemory(f.t, f.orig, f.n)
	}
	return unsafe.Add(f.copy, uintptr(a)-uintptr(f.orig))
}

// copyMemory returns a new copy of the value of type t at p, or of the
// array of n elements of slice type t at p (n >= 0), its capacity cut to n.
func copyMemory(t reflect.Type, p unsafe.Pointer, n int) unsafe.Pointer {
	if n < 0 {
		c := reflect.New(t)
		c.Elem().Set(reflect.NewAt(t, p).Elem())
		return c.UnsafePointer()
	}
	c := reflect.MakeSlice(t, n, n)
	reflect.Copy(c, reflect.NewAt(t, unsafe.Pointer(&sliceHeader{data: p, len: n, cap: n})).Elem())
	return c.UnsafePointer()
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
	t := v.Type().Elem()
	if t.Kind() != reflect.Struct && t.Kind() != reflect.Map {
		return obj
	}
	return s.walkObject(obj, v, nil)
}

// walkObject walks the object v points at (obj) as the root frame: as a
// new object, or beside twin, the cached object it replaces, when twin is
// not nil (share_twin.go). It returns obj, or its copy with parts
// replaced.
func (s *valueSharer) walkObject(obj interface{}, v reflect.Value, twin unsafe.Pointer) interface{} {
	t := v.Type().Elem()
	plan := s.planOf(t)
	w := walkers.Get().(*walker)
	w.s = s
	root := w.push(v.UnsafePointer(), t, -1)
	if twin != nil {
		w.walkTwin(plan, v.UnsafePointer(), twin, nil, 0, root)
	} else {
		w.walkValue(plan, v.UnsafePointer(), nil, 0, true, root, false)
	}
	c := w.pop(root)
	w.s = nil
	walkers.Put(w)
	if c == nil {
		return obj
	}
	// reflect.NewAt here is the reflect package's: the walk refers to
	// nothing above the stores.
	return reflect.NewAt(t, c).Interface()
}

// walkValue walks the value of plan's type at a, which lies in frame fr's
// memory, at position st (nil where the value itself is not looked up;
// its parts still are). It writes what replaces the value, if anything,
// at w.at(fr, a), and returns the value's hash when need is set (a value
// above it is looked up), 0 or its hash otherwise. Under an unexported
// field (settable false) values are only hashed.
func (w *walker) walkValue(plan *typePlan, a unsafe.Pointer, st *site, depth int, settable bool, fr int, need bool) uint64 {
	if !settable || plan.flat || depth > maxShareDepth {
		if !need {
			return 0
		}
		return w.s.hashValue(plan, a, depth, settable)
	}
	switch plan.kind {
	case reflect.String:
		return w.walkString(a, st, fr, need)
	case reflect.Struct:
		h := uint64(hashStruct)
		for i := range plan.fields {
			f := &plan.fields[i]
			h = mix(h, w.walkValue(f.plan, unsafe.Add(a, f.off), f.site, depth+1, f.exported, fr, need))
		}
		return h
	case reflect.Array:
		h := uint64(hashArray)
		for i := range plan.n {
			h = mix(h, w.walkValue(plan.elem, unsafe.Add(a, uintptr(i)*plan.elem.size), &plan.sites.elem, depth+1, true, fr, need))
		}
		return h
	case reflect.Pointer:
		return w.walkPointer(plan, a, st, depth, fr, need)
	case reflect.Slice:
		return w.walkSlice(plan, a, st, depth, fr, need)
	case reflect.Map:
		return w.walkMap(plan, a, st, depth, fr, need)
	case reflect.Interface:
		return w.walkHeld(plan, a, depth, fr, need)
	}
	if !need {
		return 0
	}
	return w.s.hashValue(plan, a, depth, settable)
}

// lookedUp says whether values at st are looked up. A site may go off or
// come back for a new trial at any time, so a walk reads it once per value
// and keeps to what it read.
func lookedUp(st *site) bool { return st != nil && st.enabled() }

func (w *walker) walkString(a unsafe.Pointer, st *site, fr int, need bool) uint64 {
	str := *(*string)(a)
	if !lookedUp(st) || len(str) == 0 {
		if !need {
			return 0
		}
		return maphash.String(w.s.seed, str)
	}
	h := maphash.String(w.s.seed, str)
	if canon, changed := w.s.intern(st, str, h); changed {
		*(*string)(w.at(fr, a)) = canon
	}
	return h
}

// intern returns the shared string equal to str (of hash h) at position
// st, making a copy of str the shared one when there is none; changed is
// false when str is that string already, or st is not looked up.
func (s *valueSharer) intern(st *site, str string, h uint64) (canon string, changed bool) {
	if st == nil || len(str) == 0 || !st.enabled() {
		return "", false
	}
	key := shareKey{typ: stringTypeID, hash: h, n: len(str)}
	sh := &s.shards[h%shareShards]
	if p := sh.lookup(key); p != nil {
		if canon := unsafe.String(p, len(str)); canon == str {
			st.record(true)
			return canon, p != unsafe.StringData(str)
		}
	}
	st.record(false)
	// The table refers only to memory it made itself, never to the
	// input's.
	own := strings.Clone(str)
	sh.insert(key, unsafe.StringData(own))
	return own, true
}

// stringTypeID keys every string, of whatever named string type: equal
// bytes are one string.
var stringTypeID = typeID(reflect.TypeFor[string]())

func (w *walker) walkPointer(plan *typePlan, a unsafe.Pointer, st *site, depth, fr int, need bool) uint64 {
	p := *(*unsafe.Pointer)(a)
	if p == nil {
		return hashNilPtr
	}
	on := lookedUp(st)
	if on {
		if h, found := w.lookupWhole(plan, a, st, depth, fr, p, 0, true); found {
			return h
		}
	}
	child := w.push(p, plan.elem.t, -1)
	h := mix(hashPtrSeed, w.walkValue(plan.elem, p, nil, depth+1, true, child, need || on))
	w.keep(plan, on, st, h, p, w.pop(child), 0, fr, a)
	return h
}

func (w *walker) walkSlice(plan *typePlan, a unsafe.Pointer, st *site, depth, fr int, need bool) uint64 {
	hdr := *(*sliceHeader)(a)
	if hdr.data == nil {
		return hashNilSlice
	}
	n := hdr.len
	if n == 0 {
		return mix(hashSliceSeed, 0)
	}
	on := lookedUp(st)
	if plan.elem.kind == reflect.Uint8 {
		if !on {
			if !need {
				return 0
			}
			return w.s.hashSlice(plan, &hdr, depth, true)
		}
		h := w.s.hashSlice(plan, &hdr, depth, true)
		if !w.found(plan, st, h, fr, a, hdr.data, n, hdr.cap == n) {
			w.keep(plan, true, st, h, hdr.data, nil, n, fr, a)
		}
		return h
	}
	if on {
		if h, found := w.lookupWhole(plan, a, st, depth, fr, hdr.data, n, hdr.cap == n); found {
			return h
		}
	}
	h := mix(hashSliceSeed, uint64(n))
	child := w.push(hdr.data, plan.t, n)
	for i := range n {
		h = mix(h, w.walkValue(plan.elem, unsafe.Add(hdr.data, uintptr(i)*plan.elem.size), &plan.sites.elem, depth+1, true, child, need || on))
	}
	w.keep(plan, on, st, h, hdr.data, w.pop(child), n, fr, a)
	return h
}

// lookupWhole looks up the pointer, slice (of length n and data p) or map
// p at a, at position st (looked up), by a hash of its content before its parts are
// walked. When an equal value is shared already, it replaces the one at a
// whole: its parts are neither looked up nor copied, so a value that turns
// out shared costs no garbage. capIsN says a slice's capacity is its
// length, as a shared slice's is. Otherwise the caller walks the parts
// and keeps the result (keep).
func (w *walker) lookupWhole(plan *typePlan, a unsafe.Pointer, st *site, depth, fr int, p unsafe.Pointer, n int, capIsN bool) (uint64, bool) {
	h := w.s.hashValue(plan, a, depth, true)
	return h, w.found(plan, st, h, fr, a, p, n, capIsN)
}

// found looks up the value at a (the pointer, slice or map p, of hash h)
// at position st, which is looked up, and reports whether an equal one is
// shared; if it is not p itself, it replaces p.
func (w *walker) found(plan *typePlan, st *site, h uint64, fr int, a, p unsafe.Pointer, n int, capIsN bool) bool {
	q := w.s.shards[h%shareShards].lookup(shareKey{typ: plan.id, hash: h, n: n})
	switch {
	case q == nil:
		return false
	case unsafe.Pointer(q) == p && capIsN:
		st.record(true)
		return true
	case !w.s.sameAsShared(plan, unsafe.Pointer(q), p, n):
		return false
	}
	st.record(true)
	w.replace(plan, fr, a, unsafe.Pointer(q), n)
	return true
}

// keep finishes the pointer, slice (of length n) or map at a, at position
// st, whose parts were walked: orig is what a held, c its copy with parts
// replaced (nil when none was). Where st is looked up (on), the value becomes
// the shared one for those to come (a copy of orig when c is nil: the
// table refers only to memory the cache made); the value a is to hold,
// when it is not orig, is written in frame fr's copy.
func (w *walker) keep(plan *typePlan, on bool, st *site, h uint64, orig, c unsafe.Pointer, n, fr int, a unsafe.Pointer) {
	if on {
		st.record(false)
		if c == nil {
			c = copyReferred(plan, orig, n)
		}
		w.s.shards[h%shareShards].insert(shareKey{typ: plan.id, hash: h, n: n}, (*byte)(c))
	}
	if c != nil {
		w.replace(plan, fr, a, c, n)
	}
}

// replace writes, in frame fr's copy, the pointer, slice (of length and
// capacity n) or map p in place of the one at a.
func (w *walker) replace(plan *typePlan, fr int, a, p unsafe.Pointer, n int) {
	dst := w.at(fr, a)
	if plan.kind == reflect.Slice {
		*(*sliceHeader)(dst) = sliceHeader{data: p, len: n, cap: n}
		return
	}
	*(*unsafe.Pointer)(dst) = p
}

// copyReferred returns a new shallow copy of what a pointer, a slice of
// length n or a map of plan's type refers to.
func copyReferred(plan *typePlan, p unsafe.Pointer, n int) unsafe.Pointer {
	switch plan.kind {
	case reflect.Pointer:
		return copyMemory(plan.elem.t, p, -1)
	case reflect.Slice:
		return copyMemory(plan.t, p, n)
	}
	m := reflect.NewAt(plan.t, unsafe.Pointer(&p)).Elem()
	c := reflect.MakeMapWithSize(plan.t, m.Len())
	for it := m.MapRange(); it.Next(); {
		c.SetMapIndex(it.Key(), it.Value())
	}
	return c.UnsafePointer()
}

// Maps and interfaces: their contents have no address of their own, so an
// entry or a held value is walked in a variable holding a copy of it, and
// a replaced one is put back in a new map or interface.

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
