package cache

import (
	"context"
	"hash/maphash"
	"reflect"
	"sync"
	"time"

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
// (dedup_plan.go) are never compared with the twin's: their exported parts
// are, one by one.

// dedupLike returns obj with its parts pointing at equal parts of twin, a
// cached object of the same type, and at equal values already shared
// elsewhere; obj itself is never written, as with dedup.
func (s *deduper) dedupLike(obj, twin interface{}) interface{} {
	v, tv := reflect.ValueOf(obj), reflect.ValueOf(twin)
	if v.Kind() != reflect.Pointer || v.IsNil() || tv.Type() != v.Type() || tv.IsNil() || v.Type().Elem().Kind() != reflect.Struct {
		return s.dedup(obj)
	}
	return s.walkObject(obj, v, tv.UnsafePointer())
}

// walkTwin walks the value of plan's type at a, in frame fr's memory,
// beside the twin's value at b; at is a's position.
func (w *walker) walkTwin(plan *typePlan, a, b addr, at position, depth, fr int) {
	if plan.flat || depth > maxDedupDepth {
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
	case reflect.Array:
		elem := at.step(pathElem, &plan.sites.elem)
		for i := range plan.n {
			off := uintptr(i) * plan.elem.size
			w.walkTwin(plan.elem, offset(a, off), offset(b, off), elem, depth+1, fr)
		}
	case reflect.String, reflect.Pointer, reflect.Slice, reflect.Map:
		if !w.s.reaches(plan, b, depth) && w.s.equalAt(plan, a, b, depth) {
			w.takeTwin(plan, a, b, fr)
			return
		}
		w.twinDescends(plan, a, b, at, depth, fr)
	case reflect.Interface:
		w.twinHeld(plan, a, b, at, depth, fr)
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
		if ha.data == nil || hb.data == nil || plan.elem.kind == reflect.Uint8 {
			return false
		}
		child := w.push(ha.data, plan.t, ha.len)
		elem := at.step(pathElem, &plan.sites.elem)
		for i := range min(ha.len, hb.len) {
			off := uintptr(i) * plan.elem.size
			w.walkTwin(plan.elem, offset(ha.data, off), offset(hb.data, off), elem, depth+1, child)
		}
		if c := w.pop(child); c != nil {
			storeSlice(w.at(fr, a), sliceHeader{data: c, len: ha.len, cap: ha.len})
		}
		return true
	case reflect.Map:
		return w.twinEntries(plan, a, b, at, depth, fr)
	}
	return false
}

// twinEntries walks each entry of the map at a beside the twin map's entry
// under the same key, and puts the entries with parts replaced in a copy of
// the map. Maps of strings to strings are left as they are: a new map to
// save a few strings costs as much as it saves.
func (w *walker) twinEntries(plan *typePlan, a, b addr, at position, depth, fr int) bool {
	ma, mb := loadWord(a), loadWord(b)
	if ma == nil || mb == nil || plan.elem.flat || plan.elem.kind == reflect.String {
		return false
	}
	e := entriesOf(plan, ma)
	defer e.done()
	storeWord(e.m2.Addr().UnsafePointer(), mb)
	values := at.step(pathValue, &plan.sites.elem)
	var out reflect.Value
	for ka, va, ok := e.next(); ok; ka, va, ok = e.next() {
		found := e.m2.MapIndex(e.key)
		if !found.IsValid() {
			continue
		}
		e.other.Set(found)
		vat := values
		if plan.stringKeys {
			vat = at.underKey(maphash.String(w.s.seed, loadString(ka)), &plan.sites.elem)
		}
		fh := w.push(va, plan.elem.t, -1)
		w.walkTwin(plan.elem, va, e.other.Addr().UnsafePointer(), vat, depth+1, fh)
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
func (w *walker) twinHeld(plan *typePlan, a, b addr, at position, depth, fr int) {
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
	w.walkTwin(held, holder, heldCopy(eb), at, depth+1, fh)
	if c := w.pop(fh); c != nil {
		reflect.NewAt(plan.t, w.at(fr, a)).Elem().Set(reflect.NewAt(ea.Type(), c).Elem())
	}
}

// dedupCopy returns the object the cache keeps for obj: obj with its parts
// pointing at equal values of the objects already cached. obj itself is
// never written (the walk copies the path to each replaced part): the
// source (a fake clientset, a transform returning its input) may hand the
// same object to others, who may be reading it now. Values that are not
// runtime.Objects are kept as they are, unshared.
func dedupCopy(dd *deduper, obj interface{}) interface{} {
	return dedupCopyLike(dd, obj, nil)
}

// dedupCopyLike is dedupCopy for an object that replaces twin (nil: none)
// in the cache.
func dedupCopyLike(dd *deduper, obj, twin interface{}) interface{} {
	ro, ok := obj.(apiruntime.Object)
	if !ok || ro == nil {
		return obj
	}
	if twin != nil {
		return dd.dedupLike(ro, twin)
	}
	return dd.dedup(ro)
}

// What follows, the compactor, dedups the parts of updated objects after the fact.
//
// An update is cached as its source returned it, exactly as client-go
// caches it: comparing it with the object it replaces costs about as much
// as the rest of the event, and an object that changes often would pay it
// at every change. Instead, its key is noted with the object it replaced
// (its twin, whose parts are shared already). Once the object has been
// quiet for compactQuiet (or has waited compactLongest, however often it
// changes), the compactor compares the cached object with the twin
// (dedupLike, above) and puts the result, an equal object whose
// unchanged parts are the twin's, in the store in its place, but only if
// the store still holds the object it compared. The object the source
// returned is never written, so whoever holds it (a handler, a lister's
// caller) keeps a valid, unchanged object; no event is delivered for the
// swap, and the index entries stay as they are (the two objects are equal,
// so every index function gives the same values). What a program can
// notice is the pointer: after the swap Get returns another *Pod than the
// one the last event delivered, equal to it (README, "Sharing equal
// values"). SetValueSharing(informer, false) or KCACHE_SHARE_VALUES=false
// turns this off with the rest of dedup.

// When an object is due is tuning's compactQuiet and compactLongest, and
// how often the compactor looks, compactTick (tuning.go).

// heldSwapper is a store that can replace the object it holds under a key
// with an equal one (the informer's own indexer, *cache).
type heldSwapper interface {
	KeyGetter
	// swapIfHeld puts equal under key if the store holds held there, and
	// reports whether it did.
	swapIfHeld(key string, held, equal interface{}) bool
}

// dedupCompactor shares the parts of one informer's updated objects once
// they are quiet.
type dedupCompactor struct {
	s     *deduper
	store heldSwapper
	// wake tells a compactor with nothing to wait for that a key was noted.
	wake chan struct{}
	// kick, when set (tests, through onNewDedupCompactor), makes the
	// compactor compact only when kicked, every noted key however recent;
	// done then gets how many objects each kick replaced.
	kick chan struct{}
	done chan int
	// mu guards pending: the updated keys waiting, by key.
	mu      sync.Mutex
	pending map[string]*pendingUpdate
}

// pendingUpdate is an updated key waiting to be compacted.
type pendingUpdate struct {
	// twin is the object the first update since the last compaction
	// replaced: the one whose parts are most likely shared.
	twin        interface{}
	first, last time.Time
}

// onNewDedupCompactor, when set (tests), is called with each new
// compactor.
var onNewDedupCompactor func(c *dedupCompactor)

// newDedupCompactor returns the compactor of an informer deduplicating through
// s whose store is cached, or nil when that store cannot swap objects (a
// store of the caller's making): updates are then shared as they arrive.
func newDedupCompactor(s *deduper, cached KeyGetter) *dedupCompactor {
	store, ok := cached.(heldSwapper)
	if s == nil || !ok {
		return nil
	}
	c := &dedupCompactor{s: s, store: store, wake: make(chan struct{}, 1), pending: map[string]*pendingUpdate{}}
	if onNewDedupCompactor != nil {
		onNewDedupCompactor(c)
	}
	return c
}

// note records that the object under key was updated at now, replacing
// twin.
func (c *dedupCompactor) note(key string, twin interface{}, now time.Time) {
	c.mu.Lock()
	p, ok := c.pending[key]
	if ok {
		p.last = now
	} else {
		c.pending[key] = &pendingUpdate{twin: twin, first: now, last: now}
	}
	woke := len(c.pending) == 1 && !ok
	c.mu.Unlock()
	if woke {
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
}

// due takes out of pending the keys whose objects are due at now (all of
// them when all is set), with their twins.
func (c *dedupCompactor) due(now time.Time, all bool) map[string]interface{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out map[string]interface{}
	for key, p := range c.pending {
		if all || now.Sub(p.last) >= tuning.compactQuiet || now.Sub(p.first) >= tuning.compactLongest {
			if out == nil {
				out = map[string]interface{}{}
			}
			out[key] = p.twin
			delete(c.pending, key)
		}
	}
	return out
}

// waiting reports whether any key waits.
func (c *dedupCompactor) waiting() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending) > 0
}

// run compacts due objects until ctx ends; what still waits then is
// dropped with the compactor.
func (c *dedupCompactor) run(ctx context.Context) {
	if c.kick != nil {
		c.runKicked(ctx)
		return
	}
	tick := time.NewTicker(tuning.compactTick)
	defer tick.Stop()
	for {
		if !c.waiting() {
			select {
			case <-ctx.Done():
				return
			case <-c.wake:
			}
		}
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			c.compact(c.due(now, false))
		}
	}
}

// runKicked compacts every waiting object at each kick until ctx ends.
func (c *dedupCompactor) runKicked(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.kick:
		}
		c.done <- c.compact(c.due(time.Time{}, true))
	}
}

// compact shares the parts of the objects cached under the keys of due
// with their twins, and returns how many it replaced.
func (c *dedupCompactor) compact(due map[string]interface{}) int {
	swapped := 0
	for key, twin := range due {
		if c.compactOne(key, twin) {
			swapped++
		}
	}
	return swapped
}

// compactOne replaces the object cached under key with an equal one whose
// parts are twin's where they are equal, if anything is to share and the
// store still holds the object compared.
func (c *dedupCompactor) compactOne(key string, twin interface{}) bool {
	cur, ok, err := c.store.GetByKey(key)
	if err != nil || !ok || !isObjectPointer(cur) {
		return false
	}
	out := dedupCopyLike(c.s, cur, twin)
	if sameObject(out, cur) {
		return false
	}
	return c.store.swapIfHeld(key, cur, out)
}

// isObjectPointer reports whether obj is a non-nil pointer, the only kind
// of object compacted (two of them compare by address).
func isObjectPointer(obj interface{}) bool {
	v := reflect.ValueOf(obj)
	return v.Kind() == reflect.Pointer && !v.IsNil()
}
