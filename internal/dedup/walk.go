package dedup

import (
	"hash/maphash"
	"reflect"
	"strings"
	"sync"
)

// This file is the walk of a table (table.go) over one object.
//
// The walk goes through the object by address, following the plan of each
// type (plan.go), hashes its content bottom-up (compare.go) and,
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
	s      *Table
	frames []frame
	// pairs is scratch space for the entries of a string map.
	pairs []string
	// firsts are the strings this walk met before any other walk did
	// (firsts.go).
	firsts []firstSighting
	// firstsByKey indexes firsts by key once there are many of them.
	firstsByKey map[uint64]int
}

// frame is memory of its own on the walk's path: the object, a pointer's
// target, a slice's array, or a variable holding a map entry or a value
// held in an interface. Structs and arrays held inline lie in their
// frame's memory, so a change anywhere in them is written into the one
// copy of the frame.
type frame struct {
	orig addr
	// t is the type of the value at orig, or the slice type when the frame
	// is a slice's array of n elements (n is -1 otherwise).
	t reflect.Type
	n int
	// copy is orig's copy, once made.
	copy addr
}

// position is where a value lies in its object: its site (nil where the
// value itself is not looked up; its parts still are) and the hash of its
// field path from the object's root, which is part of its table key, so
// that a value is shared only with values at the same path.
type position struct {
	site *site
	path uint64
}

// Steps of a field path.
const (
	pathField = iota + 1
	pathElem
	pathKey
	pathValue
	pathRoot = hashOffset
)

// field is the position of a struct's field i, counted by site.
func (p position) field(i int, st *site) position {
	return position{site: st, path: mix(p.path, pathField+uint64(i)<<8)}
}

// step is the position one step of kind below p (an element, a key, a
// value), counted by st.
func (p position) step(kind uint64, st *site) position {
	return position{site: st, path: mix(p.path, kind)}
}

// underKey is the position of the value under the key of hash kh in a
// map at p with string keys: each key is a field of its own.
func (p position) underKey(kh uint64, st *site) position {
	return position{site: st, path: mix(mix(p.path, pathValue), kh)}
}

// unlooked is p with no site: the value itself is not looked up.
func (p position) unlooked() position { return position{path: p.path} }

// walkers keeps walkers, with their frames, between walks.
var walkers sync.Pool

// pooledWalker returns a walker from walkers, or a new one.
func pooledWalker() *walker {
	if w, ok := walkers.Get().(*walker); ok {
		return w
	}
	return &walker{frames: make([]frame, 0, 16)}
}

// push starts the frame of the memory at orig and returns its index.
func (w *walker) push(orig addr, t reflect.Type, n int) int {
	w.frames = append(w.frames, frame{orig: orig, t: t, n: n})
	return len(w.frames) - 1
}

// pop ends frame i, the last one, and returns its copy, or nil when
// nothing in it was replaced.
func (w *walker) pop(i int) addr {
	c := w.frames[i].copy
	w.frames[i] = frame{}
	w.frames = w.frames[:i]
	return c
}

// at returns where the replacement of the value at a, which lies in frame
// fr's original memory, is written: the same place in the frame's copy,
// made on first use.
func (w *walker) at(fr int, a addr) addr {
	f := &w.frames[fr]
	if f.copy == nil {
		f.copy = copyMemory(f.t, f.orig, f.n)
	}
	return offset(f.copy, distance(f.orig, a))
}

// copyMemory returns a new copy of the value of type t at p, or of the
// array of n elements of slice type t at p (n >= 0), its capacity cut to n.
func copyMemory(t reflect.Type, p addr, n int) addr {
	if n < 0 {
		c := reflect.New(t)
		c.Elem().Set(reflect.NewAt(t, p).Elem())
		return c.UnsafePointer()
	}
	c := reflect.MakeSlice(t, n, n)
	reflect.Copy(c, reflect.NewAt(t, boxSlice(sliceHeader{data: p, len: n, cap: n})).Elem())
	return c.UnsafePointer()
}

// dedup returns obj with its parts pointing at equal values already shared,
// making the values of obj's parts shared for objects to come. obj is
// never written: when a part changes, the result is a new object made of
// copies of the frames above the changed parts and of obj's other parts;
// when nothing changes it is obj itself. Only non-nil pointers to structs
// or maps are walked; anything else is returned as it is.
func (s *Table) dedup(obj interface{}) interface{} {
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
// not nil (update.go). It returns obj, or its copy with parts
// replaced.
func (s *Table) walkObject(obj interface{}, v reflect.Value, twin addr) interface{} {
	t := v.Type().Elem()
	plan := s.planOf(t)
	w := pooledWalker()
	w.s = s
	root := w.push(v.UnsafePointer(), t, -1)
	at := position{path: pathRoot}
	if twin != nil {
		w.walkTwin(plan, v.UnsafePointer(), twin, 0, root, false)
	} else {
		w.walkValue(plan, v.UnsafePointer(), at, 0, true, root, false)
	}
	c := w.pop(root)
	w.s = nil
	w.forgetFirsts()
	walkers.Put(w)
	if c == nil {
		return obj
	}
	// reflect.NewAt here is the reflect package's: the walk refers to
	// nothing above the stores.
	return reflect.NewAt(t, c).Interface()
}

// walkValue walks the value of plan's type at a, which lies in frame fr's
// memory, at position at. It writes what replaces the value, if anything,
// at w.at(fr, a), and returns the value's hash when need is set (a value
// above it is looked up), 0 or its hash otherwise. Under an unexported
// field (settable false) values are only hashed.
func (w *walker) walkValue(plan *typePlan, a addr, at position, depth int, settable bool, fr int, need bool) uint64 {
	if !settable || plan.flat || depth > maxDedupDepth {
		if !need {
			return 0
		}
		return w.s.hashValue(plan, a, depth, settable)
	}
	switch plan.kind {
	case reflect.String:
		return w.walkString(a, at, fr, need)
	case reflect.Struct:
		h := uint64(hashStruct)
		for i := range plan.fields {
			f := &plan.fields[i]
			h = mix(h, w.walkValue(f.plan, offset(a, f.off), at.field(i, f.site), depth+1, f.exported, fr, need))
		}
		return h
	case reflect.Array:
		h := uint64(hashArray)
		elem := at.step(pathElem, &plan.sites.elem)
		for i := range plan.n {
			h = mix(h, w.walkValue(plan.elem, offset(a, uintptr(i)*plan.elem.size), elem, depth+1, true, fr, need))
		}
		return h
	case reflect.Pointer:
		return w.walkPointer(plan, a, at, depth, fr, need)
	case reflect.Slice:
		return w.walkSlice(plan, a, at, depth, fr, need)
	case reflect.Map:
		return w.walkMap(plan, a, at, depth, fr, need)
	case reflect.Interface:
		return w.walkHeld(plan, a, at, depth, fr, need)
	}
	if !need {
		return 0
	}
	return w.s.hashValue(plan, a, depth, settable)
}

// looksUp says whether the pointer, slice or map of plan's type at a, at
// position at, is looked up: its site is on, and it reaches no state a
// read may write (reaches), so that it may be shared whole. A site may go
// off or come back for a new trial at any time, so a walk reads it once
// per value and keeps to what it read.
func (w *walker) looksUp(plan *typePlan, a addr, at position, depth int) bool {
	return at.site != nil && at.site.enabled() && !w.s.reaches(plan, a, depth)
}

func (w *walker) walkString(a addr, at position, fr int, need bool) uint64 {
	str := loadString(a)
	if len(str) == 0 || at.site == nil || !at.site.enabled() {
		if !need {
			return 0
		}
		return maphash.String(w.s.seed, str)
	}
	h := maphash.String(w.s.seed, str)
	if canon, changed := w.intern(at, str, h); changed {
		storeString(w.at(fr, a), canon)
	}
	return h
}

// intern returns the shared string equal to str (of hash h) at position
// at, whose site is on, making a copy of str the shared one when there is
// none; changed is false when str is that string already. A string this
// walk met first at the same position is only this object's: the object's
// later copies point at its first one, and the table keeps no entry.
func (w *walker) intern(at position, str string, h uint64) (canon string, changed bool) {
	key := dedupKey{pos: at.path, hash: h, n: len(str)}
	k := key.fold()
	st := w.s.stripeFor(k)
	if p := st.lookup(key); p != nil {
		if canon := stringAt(addr(p), len(str)); canon == str {
			at.site.record(true)
			return canon, addr(p) != stringData(str)
		}
	}
	if first, ok := w.firstString(k, str); ok {
		at.site.record(true)
		return first, stringData(first) != stringData(str)
	}
	insert, repeated := w.s.admit(k)
	at.site.record(repeated)
	if !insert {
		// Seen once: it stays the object's own until another comes.
		w.sawFirst(k, str)
		return str, false
	}
	// The table refers only to memory it made itself, never to the
	// input's.
	own := strings.Clone(str)
	st.insert(key, 0, (*byte)(stringData(own)))
	return own, true
}

// internAt interns str at position at when at's site is on.
func (w *walker) internAt(at position, str string, h uint64) (string, bool) {
	if len(str) == 0 || at.site == nil || !at.site.enabled() {
		return "", false
	}
	return w.intern(at, str, h)
}

func (w *walker) walkPointer(plan *typePlan, a addr, at position, depth, fr int, need bool) uint64 {
	p := loadWord(a)
	if p == nil {
		return hashNilPtr
	}
	on := plan.elem.size > 0 && w.looksUp(plan, a, at, depth)
	if on {
		if h, found := w.lookupWhole(plan, a, at, depth, fr, p, 0, true); found {
			return h
		}
	}
	child := w.push(p, plan.elem.t, -1)
	h := mix(hashPtrSeed, w.walkValue(plan.elem, p, at.unlooked(), depth+1, true, child, need || on))
	w.keep(plan, on, at, h, p, w.pop(child), 0, fr, a, depth)
	return h
}

func (w *walker) walkSlice(plan *typePlan, a addr, at position, depth, fr int, need bool) uint64 {
	hdr := loadSlice(a)
	if hdr.data == nil {
		return hashNilSlice
	}
	n := hdr.len
	if n == 0 {
		return mix(hashSliceSeed, 0)
	}
	on := plan.elem.size > 0 && w.looksUp(plan, a, at, depth)
	if plan.elem.kind == reflect.Uint8 {
		if !on {
			if !need {
				return 0
			}
			return w.s.hashSlice(plan, hdr, depth, true)
		}
		h := w.s.hashSlice(plan, hdr, depth, true)
		if !w.found(plan, at, h, fr, a, hdr.data, n, hdr.cap == n) {
			w.keep(plan, true, at, h, hdr.data, nil, n, fr, a, depth)
		}
		return h
	}
	if on {
		if h, found := w.lookupWhole(plan, a, at, depth, fr, hdr.data, n, hdr.cap == n); found {
			return h
		}
	}
	h := mix(hashSliceSeed, uint64(n))
	child := w.push(hdr.data, plan.t, n)
	elem := at.step(pathElem, &plan.sites.elem)
	for i := range n {
		h = mix(h, w.walkValue(plan.elem, offset(hdr.data, uintptr(i)*plan.elem.size), elem, depth+1, true, child, need || on))
	}
	w.keep(plan, on, at, h, hdr.data, w.pop(child), n, fr, a, depth)
	return h
}

// lookupWhole looks up the pointer, slice (of length n and data p) or map
// p at a, at position at (looked up), by a hash of its content before its
// parts are walked. When an equal value is shared already, it replaces the
// one at a whole: its parts are neither looked up nor copied, so a value
// that turns out shared costs no garbage. capIsN says a slice's capacity
// is its length, as a shared slice's is. Otherwise the caller walks the
// parts and keeps the result (keep).
func (w *walker) lookupWhole(plan *typePlan, a addr, at position, depth, fr int, p addr, n int, capIsN bool) (uint64, bool) {
	h := w.s.hashValue(plan, a, depth, true)
	return h, w.found(plan, at, h, fr, a, p, n, capIsN)
}

// found looks up the value at a (the pointer, slice or map p, of hash h)
// at position at, which is looked up, and reports whether an equal one is
// shared; if it is not p itself, it replaces p.
func (w *walker) found(plan *typePlan, at position, h uint64, fr int, a, p addr, n int, capIsN bool) bool {
	key := dedupKey{plan: plan.id, pos: at.path, hash: h, n: n}
	q := addr(w.s.stripeFor(key.fold()).lookup(key))
	switch {
	case q == nil:
		return false
	case q == p && capIsN:
		at.site.record(true)
		return true
	case !w.s.sameAsKept(plan, q, p, n):
		return false
	}
	at.site.record(true)
	w.replace(plan, fr, a, q, n)
	return true
}

// keep finishes the pointer, slice (of length n) or map at a, at position
// at, whose parts were walked: orig is what a held, c its copy with parts
// replaced (nil when none was). Where the value is looked up (on), it
// becomes the shared one for those to come (a copy of orig when c is nil:
// the table refers only to memory the cache made); the value a is to
// hold, when it is not orig, is written in frame fr's copy.
func (w *walker) keep(plan *typePlan, on bool, at position, h uint64, orig, c addr, n, fr int, a addr, depth int) {
	if on {
		key := dedupKey{plan: plan.id, pos: at.path, hash: h, n: n}
		insert, repeated := w.s.admit(key.fold())
		at.site.record(repeated)
		if insert {
			// From now on it is the shared one.
			if c == nil {
				c = copyReferred(plan, orig, n)
			}
			w.s.stripeFor(key.fold()).insert(key, depth, (*byte)(c))
		}
	}
	if c != nil {
		w.replace(plan, fr, a, c, n)
	}
}

// replace writes, in frame fr's copy, the pointer, slice (of length and
// capacity n) or map p in place of the one at a.
func (w *walker) replace(plan *typePlan, fr int, a, p addr, n int) {
	dst := w.at(fr, a)
	if plan.kind == reflect.Slice {
		storeSlice(dst, sliceHeader{data: p, len: n, cap: n})
		return
	}
	storeWord(dst, p)
}

// copyReferred returns a new shallow copy of what a pointer, a slice of
// length n or a map of plan's type refers to.
func copyReferred(plan *typePlan, p addr, n int) addr {
	switch plan.kind {
	case reflect.Pointer:
		return copyMemory(plan.elem.t, p, -1)
	case reflect.Slice:
		return copyMemory(plan.t, p, n)
	}
	m := reflect.NewAt(plan.t, boxWord(p)).Elem()
	c := reflect.MakeMapWithSize(plan.t, m.Len())
	for it := m.MapRange(); it.Next(); {
		c.SetMapIndex(it.Key(), it.Value())
	}
	return c.UnsafePointer()
}

// Maps and interfaces: their contents have no address of their own, so an
// entry or a held value is walked in a variable holding a copy of it, and
// a replaced one is put back in a new map or interface.

func (w *walker) walkMap(plan *typePlan, a addr, at position, depth, fr int, need bool) uint64 {
	m := loadWord(a)
	if m == nil {
		return hashNilMap
	}
	// The content hash first, read-only: when an equal map is shared, the
	// whole map is replaced and its entries need no work.
	on := w.looksUp(plan, a, at, depth)
	var h uint64
	if on || need {
		h = mix(hashMapSeed, w.s.hashEntries(plan, m, depth))
	}
	n := reflect.NewAt(plan.t, a).Elem().Len()
	if on && w.found(plan, at, h, fr, a, m, n, true) {
		return h
	}
	var c addr
	if plan.strMap {
		c = w.dedupStringEntries(plan, m, at)
	} else {
		c = w.dedupEntries(plan, m, at, depth)
	}
	w.keep(plan, on, at, h, m, c, n, fr, a, depth)
	return h
}

// dedupStringEntries interns the keys and values of the map[string]string
// m at position at and returns a new map of them, or nil when every one is
// interned already.
func (w *walker) dedupStringEntries(plan *typePlan, m addr, at position) addr {
	src := stringMapOf(m)
	keys := at.step(pathKey, &plan.sites.key)
	pairs, changed := w.pairs[:0], false
	for k, v := range src {
		kh := maphash.String(w.s.seed, k)
		if c, ok := w.internAt(keys, k, kh); ok {
			k, changed = c, true
		}
		if c, ok := w.internAt(at.underKey(kh, &plan.sites.elem), v, maphash.String(w.s.seed, v)); ok {
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
	out := make(map[string]string, len(src))
	for i := 0; i < len(pairs); i += 2 {
		out[pairs[i]] = pairs[i+1]
	}
	return mapWord(out)
}

// dedupEntries shares the keys and values of map m at position at, which
// is not shared as a whole, and returns a copy of m with entries replaced,
// or nil when none is.
func (w *walker) dedupEntries(plan *typePlan, m addr, at position, depth int) addr {
	e := entriesOf(plan, m)
	defer e.done()
	keys, values := at.step(pathKey, &plan.sites.key), at.step(pathValue, &plan.sites.elem)
	var out reflect.Value
	for ka, va, ok := e.next(); ok; ka, va, ok = e.next() {
		vat := values
		if plan.stringKeys {
			vat = at.underKey(maphash.String(w.s.seed, loadString(ka)), &plan.sites.elem)
		}
		ck := w.walkHolder(plan.key, ka, keys, depth+1)
		ce := w.walkHolder(plan.elem, va, vat, depth+1)
		if ck == nil && ce == nil {
			continue
		}
		if !out.IsValid() {
			c := copyReferred(plan, m, 0)
			out = reflect.NewAt(plan.t, boxWord(c)).Elem()
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
// of a map entry or of a held value) at position at, and returns the
// address of its replacement, or nil when nothing in it is replaced.
func (w *walker) walkHolder(plan *typePlan, a addr, at position, depth int) addr {
	fr := w.push(a, plan.t, -1)
	w.walkValue(plan, a, at, depth, true, fr, false)
	return w.pop(fr)
}

// walkHeld walks the value held in the interface at a, at position at.
// Maps and strings held are looked up as values of their own site
// (unstructured content); pointers and slices are not, but their parts
// are; other values are only hashed.
func (w *walker) walkHeld(plan *typePlan, a addr, at position, depth, fr int, need bool) uint64 {
	e := reflect.NewAt(plan.t, a).Elem().Elem()
	held := at.unlooked()
	switch {
	case !e.IsValid():
		return hashNilIface
	case e.Kind() == reflect.String:
		return w.walkHeldString(plan, a, e, at, fr)
	case e.Kind() == reflect.Map:
		held.site = &w.s.planOf(e.Type()).sites.held
	case e.Kind() == reflect.Pointer || e.Kind() == reflect.Slice:
	default:
		return w.s.hashHeld(plan, a, depth, true)
	}
	hp := w.s.planOf(e.Type())
	holder := heldCopy(e)
	fh := w.push(holder, e.Type(), -1)
	h := w.walkValue(hp, holder, held, depth+1, true, fh, need)
	if c := w.pop(fh); c != nil {
		reflect.NewAt(plan.t, w.at(fr, a)).Elem().Set(reflect.NewAt(e.Type(), c).Elem())
	}
	return h
}

func (w *walker) walkHeldString(plan *typePlan, a addr, e reflect.Value, at position, fr int) uint64 {
	str := e.String()
	h := maphash.String(w.s.seed, str)
	held := position{site: &w.s.planOf(e.Type()).sites.held, path: at.path}
	canon, changed := w.internAt(held, str, h)
	if changed {
		v := reflect.New(e.Type()).Elem()
		v.SetString(canon)
		reflect.NewAt(plan.t, w.at(fr, a)).Elem().Set(v)
	}
	return h
}
