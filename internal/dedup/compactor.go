package dedup

import (
	"context"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/klog/v2"
)

// This file is the compactor: it shares the parts of updated objects after the fact.
//
// An update is cached as its source returned it, exactly as client-go
// caches it: comparing it with the object it replaces costs about as much
// as the rest of the event, and an object that changes often would pay it
// at every change. Instead, its key is noted with the object it replaced
// (its twin, whose parts are shared already). Once the object has been
// quiet for compactQuiet (or has waited compactLongest, however often it
// changes), the compactor compares the cached object with the twin
// (ShareUpdate, update.go) and puts the result, an equal object whose
// unchanged parts are the twin's, in the store in its place, but only if
// the store still holds the object it compared. The object the source
// returned is never written, so whoever holds it (a handler, a lister's
// caller) keeps a valid, unchanged object; no event is delivered for the
// swap, and the index entries stay as they are (the two objects are equal,
// so every index function gives the same values). What a program can
// notice is the pointer: after the swap Get returns another *Pod than the
// one the last event delivered, equal to it (docs/design.md, "Sharing
// equal values"). The root package's SetValueSharing(informer, false) and
// KCACHE_SHARE_VALUES=false turn this off with the rest of sharing. When
// the objects it replaced turn out to be kept by the informer's handlers,
// the compactor asks for updates to be shared as they arrive instead
// (retention.go).

// When an object is due is tuning's compactQuiet and compactLongest, and
// how often the compactor looks, compactTick (tuning.go).

// Store is the informer's store as a Compactor uses it.
type Store interface {
	// GetByKey returns the object cached under key.
	GetByKey(key string) (item interface{}, exists bool, err error)
	// SwapIfHeld puts equal under key if the store holds held there (the
	// very object, not an equal one), and reports whether it did. It
	// delivers no event and leaves the index entries as they are: equal
	// objects give every index function the same values.
	SwapIfHeld(key string, held, equal interface{}) bool
}

// Compactor shares the parts of one informer's updated objects once they
// are quiet: Note an update as it is cached, and Run compacts it later.
// Safe for concurrent use.
type Compactor struct {
	t     *Table
	store Store
	// wake tells a compactor with nothing to wait for that a key was noted.
	wake chan struct{}
	// mu guards pending: the updated keys waiting, by key.
	mu      sync.Mutex
	pending map[string]*pendingUpdate
	// kept samples the objects compactions replaced (retention.go);
	// onArrival is set, for good, once they turn out to be kept.
	kept      *retention
	onArrival atomic.Bool
}

// pendingUpdate is an updated key waiting to be compacted.
type pendingUpdate struct {
	// twin is the object the first update since the last compaction
	// replaced: the one whose parts are most likely shared.
	twin        interface{}
	first, last time.Time
}

// NewCompactor returns the compactor of an informer sharing through t
// whose cache is store.
func NewCompactor(t *Table, store Store) *Compactor {
	return &Compactor{t: t, store: store, wake: make(chan struct{}, 1), pending: map[string]*pendingUpdate{}, kept: newRetention()}
}

// ShareOnArrival reports whether the informer's handlers were found to
// keep the objects they are given (retention.go): its updates are then
// to be shared as they arrive (Table.ShareUpdate) rather than noted.
func (c *Compactor) ShareOnArrival() bool { return c.onArrival.Load() }

// Note records that the object under key was updated at now, replacing
// twin, an object shared through the compactor's table.
func (c *Compactor) Note(key string, twin interface{}, now time.Time) {
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
func (c *Compactor) due(now time.Time, all bool) map[string]interface{} {
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
func (c *Compactor) waiting() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending) > 0
}

// Run compacts due objects until ctx ends; what still waits then is
// dropped with the compactor.
func (c *Compactor) Run(ctx context.Context) {
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
			c.judgeRetention(ctx)
		}
	}
}

// CompactAll compacts every waiting object now, however recently it
// changed, and returns how many it replaced in the store.
func (c *Compactor) CompactAll() int {
	return c.compact(c.due(time.Time{}, true))
}

// judgeRetention switches the informer to sharing on arrival once the
// objects compactions replaced turn out to be kept.
func (c *Compactor) judgeRetention(ctx context.Context) {
	if c.onArrival.Load() || !c.kept.verdict() {
		return
	}
	c.onArrival.Store(true)
	klog.FromContext(ctx).V(4).Info("Handlers keep the objects they are given; sharing updates as they arrive")
}

// compact shares the parts of the objects cached under the keys of due
// with their twins, and returns how many it replaced.
func (c *Compactor) compact(due map[string]interface{}) int {
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
func (c *Compactor) compactOne(key string, twin interface{}) bool {
	cur, ok, err := c.store.GetByKey(key)
	if err != nil || !ok || !isObjectPointer(cur) {
		return false
	}
	out := c.t.ShareUpdate(cur, twin)
	if out == cur {
		return false
	}
	if !c.store.SwapIfHeld(key, cur, out) {
		return false
	}
	c.kept.watch(cur)
	return true
}

// isObjectPointer reports whether obj is a non-nil pointer, the only kind
// of object compacted (two of them compare by address).
func isObjectPointer(obj interface{}) bool {
	v := reflect.ValueOf(obj)
	return v.Kind() == reflect.Pointer && !v.IsNil()
}
