package cache

import (
	"context"
	"reflect"
	"sync"
	"time"
)

// This file shares the parts of updated objects after the fact.
//
// An update is cached as its source returned it, exactly as client-go
// caches it: comparing it with the object it replaces costs about as much
// as the rest of the event, and an object that changes often would pay it
// at every change. Instead, its key is noted with the object it replaced
// (its twin, whose parts are shared already). Once the object has been
// quiet for compactQuiet (or has waited compactLongest, however often it
// changes), the compactor compares the cached object with the twin
// (shareLike, share_twin.go) and puts the result, an equal object whose
// unchanged parts are the twin's, in the store in its place, but only if
// the store still holds the object it compared. The object the source
// returned is never written, so whoever holds it (a handler, a lister's
// caller) keeps a valid, unchanged object; no event is delivered for the
// swap, and the index entries stay as they are (the two objects are equal,
// so every index function gives the same values). What a program can
// notice is the pointer: after the swap Get returns another *Pod than the
// one the last event delivered, equal to it (README, "Sharing equal
// values"). SetValueSharing(informer, false) or KCACHE_SHARE_VALUES=false
// turns this off with the rest of sharing.

// compactQuiet is how long an updated object must go unchanged before its
// parts are shared, and compactLongest how long one that keeps changing
// waits at most. compactTick is how often the compactor looks for due
// objects while any wait. Chosen with make bench-compare's informer
// workload (ten updates per pod in a burst: one compaction each, after
// it) and make bench-e2e's churn phase (an apply and a status update of
// the same pod within milliseconds: one compaction for both).
const (
	compactQuiet   = time.Second
	compactLongest = 10 * time.Second
	compactTick    = 250 * time.Millisecond
)

// heldSwapper is a store that can replace the object it holds under a key
// with an equal one (the informer's own indexer, *cache).
type heldSwapper interface {
	KeyGetter
	// swapIfHeld puts equal under key if the store holds held there, and
	// reports whether it did.
	swapIfHeld(key string, held, equal interface{}) bool
}

// updateCompactor shares the parts of one informer's updated objects once
// they are quiet.
type updateCompactor struct {
	s     *valueSharer
	store heldSwapper
	// wake tells a compactor with nothing to wait for that a key was noted.
	wake chan struct{}
	// kick, when set (tests, through onNewUpdateCompactor), makes the
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

// onNewUpdateCompactor, when set (tests), is called with each new
// compactor.
var onNewUpdateCompactor func(c *updateCompactor)

// newUpdateCompactor returns the compactor of an informer sharing through
// s whose store is cached, or nil when that store cannot swap objects (a
// store of the caller's making): updates are then shared as they arrive.
func newUpdateCompactor(s *valueSharer, cached KeyGetter) *updateCompactor {
	store, ok := cached.(heldSwapper)
	if s == nil || !ok {
		return nil
	}
	c := &updateCompactor{s: s, store: store, wake: make(chan struct{}, 1), pending: map[string]*pendingUpdate{}}
	if onNewUpdateCompactor != nil {
		onNewUpdateCompactor(c)
	}
	return c
}

// note records that the object under key was updated at now, replacing
// twin.
func (c *updateCompactor) note(key string, twin interface{}, now time.Time) {
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
func (c *updateCompactor) due(now time.Time, all bool) map[string]interface{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out map[string]interface{}
	for key, p := range c.pending {
		if all || now.Sub(p.last) >= compactQuiet || now.Sub(p.first) >= compactLongest {
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
func (c *updateCompactor) waiting() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending) > 0
}

// run compacts due objects until ctx ends; what still waits then is
// dropped with the compactor.
func (c *updateCompactor) run(ctx context.Context) {
	if c.kick != nil {
		c.runKicked(ctx)
		return
	}
	tick := time.NewTicker(compactTick)
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
func (c *updateCompactor) runKicked(ctx context.Context) {
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
func (c *updateCompactor) compact(due map[string]interface{}) int {
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
func (c *updateCompactor) compactOne(key string, twin interface{}) bool {
	cur, ok, err := c.store.GetByKey(key)
	if err != nil || !ok || !isObjectPointer(cur) {
		return false
	}
	out := shareCopyLike(c.s, cur, twin)
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
