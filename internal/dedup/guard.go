package dedup

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/klog/v2"
)

// This file is the guard of an informer's shared values (table.go).
//
// A program that writes into a cached object breaks the cache's contract;
// with sharing, the write reaches every object of the informer that shares
// the written part. The guard finds such writes and repairs them: in the
// background, at a bounded cost, it hashes every shared value again and
// compares the hash with the one the value was shared under. A value whose
// content changed is logged as an error (the object type, the field path,
// how many cached objects share it), counted, taken out of the table so
// that no object to come is given it, and its objects are fetched from the
// server again: the informer relists (Relists), and those objects are not
// kept from the cached copy (Suspect), so the cache equals the server's
// objects afterwards, index entries included. client-go has no such guard:
// there, a mutated cached object stays wrong until its next update.
//
// Strings are not checked: Go cannot write into one without the unsafe
// package. Reading a shared value while a buggy caller writes it is a data
// race of the caller's making; on a map, Go's runtime may then stop the
// process (concurrent map read and write), as a lister reading the same
// map in client-go would.

// The guard's pace is tuning's guardBudget, guardBatch and
// guardRoundPause (tuning.go).

// Counter is a metric counting up: the guard adds one for each changed
// value it finds.
type Counter interface{ Inc() }

// Informer is what a Guard knows of the informer whose table it checks.
type Informer struct {
	// Objects returns every object the informer caches: the guard looks
	// there for the objects sharing a changed value.
	Objects func() []interface{}
	// Key returns the key an object is cached under.
	Key func(obj interface{}) (string, error)
	// Type names the informer's objects in the log (such as "*v1.Pod").
	Type string
	// Changed counts the changed values found; nil counts nothing.
	Changed Counter
}

// Guard re-checks the values of one informer's table in the background.
// Each value found changed is logged, counted, dropped from the table, and
// repaired: the guard asks for a relist (Relists) that takes none of the
// objects sharing it from the cache (Suspect). Safe for concurrent use.
type Guard struct {
	t  *Table
	in Informer
	// relist holds a request for the informer to list again.
	relist chan struct{}
	// mu guards suspects: keys of cached objects that share a changed
	// value, which the next list must not take from the cache.
	mu       sync.Mutex
	suspects map[string]bool
}

// NewGuard returns the guard of table t, shared by informer in.
func NewGuard(t *Table, in Informer) *Guard {
	if in.Changed == nil {
		in.Changed = noCount{}
	}
	return &Guard{t: t, in: in, relist: make(chan struct{}, 1), suspects: map[string]bool{}}
}

// noCount is the Counter of a guard given none.
type noCount struct{}

func (noCount) Inc() {}

// Relists delivers the guard's requests for the informer to list again,
// each made after a changed value was found; requests made while one waits
// are merged into it.
func (g *Guard) Relists() <-chan struct{} { return g.relist }

// Run checks the table round after round, at the pace tuning sets, until
// ctx ends.
func (g *Guard) Run(ctx context.Context) {
	pause := func(d time.Duration) bool { return g.pause(ctx, d) }
	for {
		roundStart := time.Now()
		if !g.pass(ctx, pause) || !g.pause(ctx, tuning.guardRoundPause-time.Since(roundStart)) {
			return
		}
	}
}

// pass checks every value of the table once, in batches of
// tuning.guardBatch; after each batch it calls pause with the time the
// budget asks for (tuning.guardBudget), and stops, reporting false, when
// pause does.
func (g *Guard) pass(ctx context.Context, pause func(time.Duration) bool) bool {
	plans := g.t.plansByID()
	var batch []dedupEntry
	for i := range g.t.stripes {
		batch = g.t.stripes[i].snapshot(batch[:0])
		for len(batch) > 0 {
			n := min(len(batch), tuning.guardBatch)
			start := time.Now()
			g.check(ctx, batch[:n], plans)
			clear(batch[:n])
			batch = batch[n:]
			if !pause(time.Duration(float64(time.Since(start)) * (1/tuning.guardBudget - 1))) {
				return false
			}
		}
	}
	return true
}

// pause waits d, and reports false when ctx ended.
func (g *Guard) pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(max(d, 0))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
	}
	return true
}

// Round checks every shared value of the table once, at once, without
// pausing, repairs those found changed (as Run does) and returns how many
// it found.
func (g *Guard) Round(ctx context.Context) int {
	plans := g.t.plansByID()
	found := 0
	var batch []dedupEntry
	for i := range g.t.stripes {
		batch = g.t.stripes[i].snapshot(batch[:0])
		found += g.check(ctx, batch, plans)
	}
	return found
}

// plansByID returns the table's plans by their IDs, the type half of the
// table's keys.
func (s *Table) plansByID() map[uint64]*typePlan {
	byID := map[uint64]*typePlan{}
	s.plans.Range(func(_, p any) bool {
		byID[p.(*typePlan).id] = p.(*typePlan)
		return true
	})
	return byID
}

// check hashes the values of entries (of the types plans give) again,
// repairs those that changed and returns how many did.
func (g *Guard) check(ctx context.Context, entries []dedupEntry, plans map[uint64]*typePlan) int {
	found := 0
	for _, e := range entries {
		v, plan := e.p.Value(), plans[e.key.plan]
		if v == nil || plan == nil || g.t.contentHash(e, plan, addr(v)) == e.key.hash {
			continue
		}
		found++
		g.repair(ctx, e, plan, addr(v))
	}
	return found
}

// contentHash hashes the shared value v of entry e, of plan's type, as the
// walk hashed it when it was shared.
func (s *Table) contentHash(e dedupEntry, plan *typePlan, v addr) uint64 {
	switch plan.kind {
	case reflect.Pointer:
		return mix(hashPtrSeed, s.hashValue(plan.elem, v, e.depth+1, true))
	case reflect.Slice:
		return s.hashSlice(plan, sliceHeader{data: v, len: e.key.n, cap: e.key.n}, e.depth, true)
	}
	return mix(hashMapSeed, s.hashEntries(plan, v, e.depth))
}

// repair takes the changed value v of entry e (of plan's type) out of the
// table, finds the cached objects sharing it, reports it and asks for a
// relist that takes none of them from the cache.
func (g *Guard) repair(ctx context.Context, e dedupEntry, plan *typePlan, v addr) {
	g.t.stripeFor(e.key.fold()).drop(e)
	keys, path := g.holders(plan.kind, v)
	g.mu.Lock()
	for _, k := range keys {
		g.suspects[k] = true
	}
	g.mu.Unlock()
	g.in.Changed.Inc()
	klog.FromContext(ctx).Error(errDedupValueChanged, "A cached object was modified: a value its informer shares changed after it was cached; listing again to repair the cache",
		"type", g.in.Type, "fieldPath", path, "objects", len(keys), "valueType", plan.t.String())
	select {
	case g.relist <- struct{}{}:
	default:
	}
}

// errDedupValueChanged is the error the guard logs.
var errDedupValueChanged = errors.New("shared value changed in the cache")

// holders returns the keys of the cached objects holding the value v (a
// pointer's target, a slice's array or a map, by kind) and the field path
// of the first one found.
func (g *Guard) holders(kind reflect.Kind, v addr) (keys []string, path string) {
	for _, obj := range g.in.Objects() {
		p, ok := findReferent(reflect.ValueOf(obj), kind, v, "", 0)
		if !ok {
			continue
		}
		if path == "" {
			path = strings.TrimPrefix(p, ".")
		}
		if key, err := g.in.Key(obj); err == nil {
			keys = append(keys, key)
		}
	}
	sort.Strings(keys)
	return keys, path
}

// findReferent looks in x for a pointer, slice or map (kind) referring to
// v, and returns the field path to it.
func findReferent(x reflect.Value, kind reflect.Kind, v addr, path string, depth int) (string, bool) {
	if depth > maxDedupDepth || !x.IsValid() {
		return "", false
	}
	switch x.Kind() {
	case reflect.Pointer, reflect.Interface:
		if x.IsNil() {
			return "", false
		}
		if x.Kind() == kind && x.UnsafePointer() == v {
			return path, true
		}
		return findReferent(x.Elem(), kind, v, path, depth+1)
	case reflect.Slice:
		if x.Len() > 0 && x.Kind() == kind && x.UnsafePointer() == v {
			return path, true
		}
		for i := range x.Len() {
			if p, ok := findReferent(x.Index(i), kind, v, path+"[]", depth+1); ok {
				return p, true
			}
		}
	case reflect.Map:
		if x.Kind() == kind && x.UnsafePointer() == v {
			return path, true
		}
		for it := x.MapRange(); it.Next(); {
			if p, ok := findReferent(it.Value(), kind, v, path+"."+fmt.Sprint(it.Key().Interface()), depth+1); ok {
				return p, true
			}
		}
	case reflect.Struct:
		t := x.Type()
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() {
				if p, ok := findReferent(x.Field(i), kind, v, path+fieldStep(f), depth+1); ok {
					return p, true
				}
			}
		}
	}
	return "", false
}

// fieldStep is a field's step in a field path: its JSON name, nothing for
// an inlined struct.
func fieldStep(f reflect.StructField) string {
	name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
	switch {
	case strings.Contains(opts, "inline") || (f.Anonymous && name == ""):
		return ""
	case name == "" || name == "-":
		return "." + f.Name
	}
	return "." + name
}

// Suspect reports whether the object under key shares a changed value,
// and forgets it: the list now taking it in must not keep the cached copy.
func (g *Guard) Suspect(key string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.suspects[key] {
		return false
	}
	delete(g.suspects, key)
	return true
}
