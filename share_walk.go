package cache

import (
	"hash/maphash"
	"math"
	"reflect"
	"strings"
	"sync"
	"unsafe"
)

// This file is the walk of a valueSharer (share.go) over one object.
//
// The walk hashes the object's content bottom-up and, at each position
// still looked up, finds the shared value equal to the part there. It
// never writes into the object it is given: that object belongs to
// whoever returned it (a ListerWatcher, a transform), who may hand it to
// others. When a part is to point at a shared value, the walk copies the
// frames on the path from the root down to that part, each at most once
// however many of its parts change, and returns the copy; subtrees with
// nothing to replace stay the very memory of the input. So an object made
// only of values already shared costs a copy of its spine, not of its
// whole.

// change is what the walk replaces a value with: a value of the same type,
// newly made or shared. The zero change replaces nothing.
type change struct {
	v reflect.Value
	// s is the replacement of a string (v is then not valid): kept as a
	// string, so that replacing one costs no allocation.
	s     string
	isStr bool
	// shared is the address of the shared value replacing a pointer, a
	// map or a slice of length n (v is then not valid): kept as an
	// address, so that replacing one costs no allocation.
	shared unsafe.Pointer
	n      int
	// inPlace says v was made inside the copy of the frame holding it,
	// which needs no setting.
	inPlace bool
}

func (c change) ok() bool { return c.isStr || c.shared != nil || c.v.IsValid() }

// setTo stores the replacement in dst, a settable value of its type.
func (c change) setTo(dst reflect.Value) {
	switch {
	case c.isStr:
		dst.SetString(c.s)
	case c.shared == nil:
		dst.Set(c.v)
	case dst.CanAddr() && dst.Kind() == reflect.Slice:
		*(*sliceHeader)(dst.Addr().UnsafePointer()) = sliceHeader{data: c.shared, len: c.n, cap: c.n}
	case dst.CanAddr():
		*(*unsafe.Pointer)(dst.Addr().UnsafePointer()) = c.shared
	default:
		dst.Set(fromPointer(dst.Type(), c.shared, c.n))
	}
}

// value returns the replacement as a value of type t.
func (c change) value(t reflect.Type) reflect.Value {
	if !c.isStr && c.shared == nil {
		return c.v
	}
	// reflect.New here and below is the reflect package's, not this
	// package's New (controller.go): the walk refers to nothing above the
	// stores.
	v := reflect.New(t).Elem()
	c.setTo(v)
	return v
}

// walker is one walk's state: the frames of the structs, arrays and slices
// on the path from the root to the value walked now.
type walker struct {
	s      *valueSharer
	frames []frame
	// dry is set while the walk only hashes: nothing is looked up, copied
	// or replaced (see lookupWhole).
	dry bool
}

// frame is a struct, array or slice on the walk's path. Structs and arrays
// held inline in the frame above are copied inside that frame's copy, so
// each is copied once whatever the depth of the part that changed.
type frame struct {
	orig reflect.Value
	// out is orig's copy, once made.
	out reflect.Value
	// parent is the frame holding orig inline (as a field or an element),
	// or -1 when orig has its own memory.
	parent, index int
}

var walkers = sync.Pool{New: func() any { return &walker{frames: make([]frame, 0, 16)} }}

// push starts the frame of v, held inline at index of frame parent (-1:
// v has its own memory); it returns the frame's index.
func (w *walker) push(v reflect.Value, parent, index int) int {
	w.frames = append(w.frames, frame{orig: v, parent: parent, index: index})
	return len(w.frames) - 1
}

// pop ends frame i, the last one, and returns what the walk made of its
// value: its copy, if any. inPlace is true when that copy lies in the
// parent's copy, which then needs no setting.
func (w *walker) pop(i int) (out reflect.Value, inPlace bool) {
	f := w.frames[i]
	w.frames[i] = frame{}
	w.frames = w.frames[:i]
	return f.out, f.out.IsValid() && f.parent >= 0
}

// copyOf returns the copy of frame i's value, making it (and its parents')
// on first use.
func (w *walker) copyOf(i int) reflect.Value {
	if out := w.frames[i].out; out.IsValid() {
		return out
	}
	f := w.frames[i]
	var out reflect.Value
	switch {
	case f.parent >= 0:
		p := w.copyOf(f.parent)
		if p.Kind() == reflect.Struct {
			out = p.Field(f.index)
		} else {
			out = p.Index(f.index)
		}
	case f.orig.Kind() == reflect.Slice:
		n := f.orig.Len()
		out = reflect.MakeSlice(f.orig.Type(), n, n)
		reflect.Copy(out, f.orig)
	default:
		out = reflect.New(f.orig.Type()).Elem()
		out.Set(f.orig)
	}
	w.frames[i].out = out
	return out
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
	e := v.Elem()
	if e.Kind() != reflect.Struct && e.Kind() != reflect.Map {
		return obj
	}
	w := walkers.Get().(*walker)
	w.s = s
	_, c := w.walk(e, nil, 0, true, -1, 0)
	w.s = nil
	walkers.Put(w)
	if !c.ok() {
		return obj
	}
	return pointerTo(c.value(e.Type())).Interface()
}

// pointerTo returns a pointer to a replacement value: its own address when
// it was made by the walk (structs and arrays are made addressable), a new
// variable holding it otherwise.
func pointerTo(v reflect.Value) reflect.Value {
	if v.CanAddr() && (v.Kind() == reflect.Struct || v.Kind() == reflect.Array) {
		return v.Addr()
	}
	p := reflect.New(v.Type())
	p.Elem().Set(v)
	return p
}

// Hash mixing: FNV-style multiply over 64-bit words.
const (
	hashPrime  = 0x100000001b3
	hashOffset = 0xcbf29ce484222325
)

func mix(h, x uint64) uint64 { return (h ^ x) * hashPrime }

// walk returns a hash of v's content and what v is to be replaced with. st
// is the site of v's position, nil where v itself is not looked up (its
// parts still are); settable is false under unexported fields, whose
// values are only hashed (pointers there by address). A struct or array v
// is held inline at index of frame parent (-1: in memory of its own); its
// copy is then made in the parent's, and the change returned says so.
func (w *walker) walk(v reflect.Value, st *site, depth int, settable bool, parent, index int) (uint64, change) {
	if depth > maxShareDepth {
		return uint64(v.Kind()), change{}
	}
	switch v.Kind() {
	case reflect.Bool:
		if v.Bool() {
			return 1, change{}
		}
		return 2, change{}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return mix(hashOffset, uint64(v.Int())), change{}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return mix(hashOffset, v.Uint()), change{}
	case reflect.Float32, reflect.Float64:
		return mix(hashOffset, math.Float64bits(v.Float())), change{}
	case reflect.Complex64, reflect.Complex128:
		c := v.Complex()
		return mix(mix(hashOffset, math.Float64bits(real(c))), math.Float64bits(imag(c))), change{}
	case reflect.String:
		return w.s.walkString(v, st, settable && !w.dry)
	case reflect.Struct, reflect.Array:
		return w.walkInline(v, depth, settable, parent, index)
	case reflect.Pointer:
		return w.walkPointer(v, st, depth, settable)
	case reflect.Slice:
		return w.walkSlice(v, st, depth, settable)
	case reflect.Map:
		return w.walkMap(v, st, depth, settable)
	case reflect.Interface:
		return w.walkInterface(v, depth, settable)
	}
	// Funcs, channels, unsafe pointers: by address; reflect.DeepEqual
	// holds no two non-nil ones equal, so they are never shared.
	return mix(hashOffset+8, uint64(v.Pointer())), change{}
}

func (s *valueSharer) walkString(v reflect.Value, st *site, settable bool) (uint64, change) {
	str := v.String()
	h := maphash.String(s.seed, str)
	if st == nil || !settable || len(str) == 0 || !st.enabled() {
		return h, change{}
	}
	key := shareKey{typ: typeID(v.Type()), hash: h, n: len(str)}
	sh := &s.shards[h%shareShards]
	if p := sh.lookup(key); p != nil {
		if canon := unsafe.String(p, len(str)); canon == str {
			st.record(true)
			if p == unsafe.StringData(str) {
				return h, change{}
			}
			return h, change{s: canon, isStr: true}
		}
	}
	st.record(false)
	// The table refers only to memory it made itself, never to the
	// input's.
	own := strings.Clone(str)
	sh.insert(key, unsafe.StringData(own))
	return h, change{s: own, isStr: true}
}

// walkInline walks a struct or an array, whose fields or elements are
// held inline.
func (w *walker) walkInline(v reflect.Value, depth int, settable bool, parent, index int) (uint64, change) {
	self := w.push(v, parent, index)
	var h uint64
	if v.Kind() == reflect.Struct {
		plan := w.s.structPlanOf(v.Type())
		h = hashOffset + 5
		for i := range plan.fields {
			f := &plan.fields[i]
			fh, c := w.walk(v.Field(f.index), f.site, depth+1, settable && f.exported, self, f.index)
			h = mix(h, fh)
			if c.ok() && !c.inPlace {
				c.setTo(w.copyOf(self).Field(f.index))
			}
		}
	} else {
		cs := w.s.containerSitesOf(v.Type())
		h = hashOffset + 6
		for i := range v.Len() {
			eh, c := w.walk(v.Index(i), &cs.elem, depth+1, settable, self, i)
			h = mix(h, eh)
			if c.ok() && !c.inPlace {
				c.setTo(w.copyOf(self).Index(i))
			}
		}
	}
	out, inPlace := w.pop(self)
	return h, change{v: out, inPlace: inPlace}
}

func (w *walker) walkPointer(v reflect.Value, st *site, depth int, settable bool) (uint64, change) {
	if v.IsNil() {
		return 3, change{}
	}
	if !settable {
		// Under an unexported field (a time.Time's location, say): by
		// address, without descending.
		return mix(hashOffset+4, uint64(uintptr(v.UnsafePointer()))), change{}
	}
	if h, c, found := w.lookupWhole(v, st, depth, 0); found {
		return h, c
	}
	eh, c := w.walk(v.Elem(), nil, depth+1, true, -1, 0)
	h := mix(hashOffset+4, eh)
	if w.dry {
		return h, change{}
	}
	cur, owned := v, false
	if c.ok() {
		if !c.v.CanAddr() || (c.v.Kind() != reflect.Struct && c.v.Kind() != reflect.Array) {
			cur = reflect.New(v.Type().Elem())
			c.setTo(cur.Elem())
		} else {
			cur = c.v.Addr()
		}
		owned = true
	}
	return h, w.s.keepShared(cur, owned, st, h, 0)
}

func (w *walker) walkSlice(v reflect.Value, st *site, depth int, settable bool) (uint64, change) {
	if v.IsNil() {
		return 10, change{}
	}
	n := v.Len()
	if v.Type().Elem().Kind() == reflect.Uint8 {
		h := mix(mix(hashOffset+11, uint64(n)), maphash.Bytes(w.s.seed, v.Bytes()))
		if n == 0 || !settable || w.dry {
			return h, change{}
		}
		return h, w.s.settle(v, v, false, st, h, n)
	}
	if n > 0 && settable {
		if h, c, found := w.lookupWhole(v, st, depth, n); found {
			return h, c
		}
	}
	h := mix(hashOffset+11, uint64(n))
	cs := w.s.containerSitesOf(v.Type())
	self := w.push(v, -1, 0)
	for i := range n {
		eh, c := w.walk(v.Index(i), &cs.elem, depth+1, settable, self, i)
		h = mix(h, eh)
		if c.ok() && !c.inPlace {
			c.setTo(w.copyOf(self).Index(i))
		}
	}
	out, _ := w.pop(self)
	if n == 0 || !settable || w.dry {
		return h, change{v: out}
	}
	if out.IsValid() {
		return h, w.s.keepShared(out, true, st, h, n)
	}
	return h, w.s.keepShared(v, false, st, h, n)
}

// lookupWhole looks up a pointer or a non-empty slice of length n (with
// a site st that is looked up) by a hash of its content before its parts
// are walked. When an equal value is shared already, v is replaced by it
// whole: its parts are neither looked up nor copied, so a value that
// turns out shared costs no garbage. Otherwise the caller walks v's parts
// and keeps the result (keepShared), v having been looked up here.
func (w *walker) lookupWhole(v reflect.Value, st *site, depth, n int) (uint64, change, bool) {
	if w.dry || st == nil || !st.enabled() {
		return 0, change{}, false
	}
	w.dry = true
	h, _ := w.walk(v, nil, depth, true, -1, 0)
	w.dry = false
	c, found := w.s.findShared(v, v, st, h, n)
	return h, c, found
}

func (w *walker) walkMap(v reflect.Value, st *site, depth int, settable bool) (uint64, change) {
	if v.IsNil() {
		return 12, change{}
	}
	// First the content hash, read-only: when an equal map is shared, the
	// whole map is replaced and its entries need no work.
	sum := w.hashEntries(v, depth)
	h := mix(hashOffset+13, sum)
	if !settable || w.dry {
		return h, change{}
	}
	if c, found := w.s.findShared(v, v, st, h, v.Len()); found {
		return h, c
	}
	out := w.shareEntries(v, depth)
	if out.IsValid() {
		return h, w.s.keepShared(out, true, st, h, v.Len())
	}
	return h, w.s.keepShared(v, false, st, h, v.Len())
}

// hashEntries returns a hash of map v's entries, independent of their
// order; it shares nothing.
func (w *walker) hashEntries(v reflect.Value, depth int) uint64 {
	var sum uint64
	if m, ok := asStringMap(v); ok {
		for k, e := range m {
			sum += mix(mix(hashOffset, maphash.String(w.s.seed, k)), maphash.String(w.s.seed, e))
		}
		return sum
	}
	e := newMapEntry(v)
	for it := v.MapRange(); it.Next(); {
		key, val := e.read(it)
		kh, _ := w.walk(key, nil, depth+1, false, -1, 0)
		vh, _ := w.walk(val, nil, depth+1, false, -1, 0)
		sum += mix(mix(hashOffset, kh), vh)
	}
	return sum
}

// shareEntries shares the keys and values of map v, which is not shared
// as a whole, and returns the copy of v with entries replaced, or an
// invalid value when none is.
func (w *walker) shareEntries(v reflect.Value, depth int) reflect.Value {
	t := v.Type()
	cs := w.s.containerSitesOf(t)
	var out reflect.Value
	for it := v.MapRange(); it.Next(); {
		k, e := it.Key(), it.Value()
		_, ck := w.walk(k, &cs.key, depth+1, true, -1, 0)
		_, ce := w.walk(e, &cs.elem, depth+1, true, -1, 0)
		if !ck.ok() && !ce.ok() {
			continue
		}
		if !out.IsValid() {
			out = heapCopy(v, 0)
		}
		if ck.ok() {
			// An equal key does not replace the stored one: delete first.
			out.SetMapIndex(k, reflect.Value{})
			k = ck.value(t.Key())
		}
		if ce.ok() {
			e = ce.value(t.Elem())
		}
		out.SetMapIndex(k, e)
	}
	return out
}

// walkInterface hashes the dynamic value of v. Maps and strings held in
// it are looked up as values of their own position (unstructured
// content); pointers and slices are not, but their parts are.
func (w *walker) walkInterface(v reflect.Value, depth int, settable bool) (uint64, change) {
	if v.IsNil() {
		return 7, change{}
	}
	e := v.Elem()
	var h uint64
	var c change
	switch {
	case !settable:
		h, _ = w.walk(e, nil, depth+1, false, -1, 0)
	case e.Kind() == reflect.Map || e.Kind() == reflect.String:
		h, c = w.walk(e, &w.s.containerSitesOf(e.Type()).held, depth+1, true, -1, 0)
	case e.Kind() == reflect.Pointer || e.Kind() == reflect.Slice:
		h, c = w.walk(e, nil, depth+1, true, -1, 0)
	default:
		h, _ = w.walk(e, nil, depth+1, false, -1, 0)
	}
	if !c.ok() {
		return h, change{}
	}
	out := reflect.New(v.Type()).Elem()
	out.Set(c.value(e.Type()))
	return h, change{v: out}
}

// settle finishes a pointer, a non-empty slice of length n or a map at
// position st: orig as found in the object, cur the same with its parts
// replaced (a new value, owned) or orig itself. It returns what orig is to
// be replaced with: the shared value equal to cur if there is one, else
// cur made the shared value for those to come, or cur as it is where
// nothing is looked up.
func (s *valueSharer) settle(orig, cur reflect.Value, owned bool, st *site, h uint64, n int) change {
	if c, found := s.findShared(orig, cur, st, h, n); found {
		return c
	}
	return s.keepShared(cur, owned, st, h, n)
}

// findShared looks up the shared value equal to cur (orig with some parts
// replaced, or orig) and reports whether there is one; the change is none
// when orig is that value already.
func (s *valueSharer) findShared(orig, cur reflect.Value, st *site, h uint64, n int) (change, bool) {
	if st == nil || !st.enabled() {
		return change{}, false
	}
	p := s.shards[h%shareShards].lookup(shareKey{typ: typeID(cur.Type()), hash: h, n: n})
	if p == nil {
		return change{}, false
	}
	if p == (*byte)(orig.UnsafePointer()) && (orig.Kind() != reflect.Slice || orig.Cap() == n) {
		st.record(true)
		return change{}, true
	}
	if !sameAsShared(unsafe.Pointer(p), cur, n) {
		return change{}, false
	}
	st.record(true)
	return change{shared: unsafe.Pointer(p), n: n}, true
}

// keepShared makes cur the shared value for its content where st is looked
// up (a copy of it unless owned: the table refers only to memory the cache
// made) and returns what the object is to hold: that value, or cur if
// owned, or nothing.
func (s *valueSharer) keepShared(cur reflect.Value, owned bool, st *site, h uint64, n int) change {
	if st != nil && st.enabled() {
		st.record(false)
		if !owned {
			cur, owned = heapCopy(cur, n), true
		}
		s.shards[h%shareShards].insert(shareKey{typ: typeID(cur.Type()), hash: h, n: n}, (*byte)(cur.UnsafePointer()))
	}
	if owned {
		return change{v: cur}
	}
	return change{}
}
