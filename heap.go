package cache

import (
	"errors"
	"sync"
)

// LessFunc orders the objects of a Heap: it reports whether a must be popped
// before b. It must be a strict weak ordering and must not modify either
// object.
type LessFunc func(interface{}, interface{}) bool

// errHeapClosed is the cause of every error a closed Heap returns.
var errHeapClosed = errors.New("heap is closed")

// Heap is a priority queue of keyed objects, safe for concurrent use: each
// key is held at most once, and Pop hands out the least object under the
// LessFunc, waiting while the heap is empty.
//
// The KeyFunc runs before the lock is taken. The LessFunc necessarily runs
// while the lock is held (ordering is the heap's job), so it must be quick
// and must not call back into the Heap. Objects handed out by Get, GetByKey,
// List and Pop are the stored values: treat them as read-only.
type Heap struct {
	// mu guards items and closed; notEmpty waits on it.
	mu sync.Mutex
	// notEmpty is signalled, under mu, whenever an object arrives or the
	// heap closes.
	notEmpty sync.Cond
	// items holds the objects in heap order.
	items keyedHeap
	// closed turns true once in Close and never back. A closed heap
	// refuses new objects but still hands out the ones it holds.
	closed bool

	keyFunc KeyFunc
}

// NewHeap returns an empty, open Heap that files objects under keyFn's
// keys and pops them in lessFn's order. Both must be non-nil.
func NewHeap(keyFn KeyFunc, lessFn LessFunc) *Heap {
	h := &Heap{
		items:   keyedHeap{less: lessFn, pos: map[string]int{}},
		keyFunc: keyFn,
	}
	h.notEmpty.L = &h.mu
	return h
}

// keyOf computes obj's key, reporting a failure (or a panic of the key
// function) as a KeyError.
func (h *Heap) keyOf(obj interface{}) (string, error) {
	key, err := callKeyFunc(h.keyFunc, obj)
	if err != nil {
		return "", KeyError{Obj: obj, Err: err}
	}
	return key, nil
}

// Add stores obj, replacing (and re-ordering) the object already held under
// its key. It fails on a closed heap or when the key cannot be computed.
func (h *Heap) Add(obj interface{}) error {
	key, err := h.keyOf(obj)
	if err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return errHeapClosed
	}
	h.items.set(key, obj)
	h.notEmpty.Broadcast()
	return nil
}

// Update is Add: there is no difference between adding and updating.
func (h *Heap) Update(obj interface{}) error {
	return h.Add(obj)
}

// BulkAdd adds every object of list, in order, as Add would, and wakes
// waiting Pops once. Keys are computed before the lock is taken. If a key
// cannot be computed, the objects before it are still added and the error
// is returned; the rest are not added.
func (h *Heap) BulkAdd(list []interface{}) error {
	keys := make([]string, 0, len(list))
	var keyErr error
	for _, obj := range list {
		key, err := h.keyOf(obj)
		if err != nil {
			keyErr = err
			break
		}
		keys = append(keys, key)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return errHeapClosed
	}
	for i, key := range keys {
		h.items.set(key, list[i])
	}
	if len(keys) > 0 {
		h.notEmpty.Broadcast()
	}
	return keyErr
}

// AddIfNotPresent stores obj only if nothing is held under its key; an
// existing object is left as it is, in place. A consumer that re-queues a
// failed item this way never overwrites a newer one a producer added.
func (h *Heap) AddIfNotPresent(obj interface{}) error {
	key, err := h.keyOf(obj)
	if err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return errHeapClosed
	}
	if !h.items.has(key) {
		h.items.set(key, obj)
	}
	h.notEmpty.Broadcast()
	return nil
}

// Delete removes the object held under obj's key. An absent key is an
// error. Delete works on a closed heap too.
func (h *Heap) Delete(obj interface{}) error {
	key, err := h.keyOf(obj)
	if err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.items.remove(key) {
		return errors.New("object not found")
	}
	return nil
}

// Pop waits until the heap holds an object, then removes and returns the
// least one. Once the heap is closed, Pop keeps returning what is left and
// then fails with an error instead of waiting.
func (h *Heap) Pop() (interface{}, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for h.items.Len() == 0 {
		if h.closed {
			return nil, errHeapClosed
		}
		h.notEmpty.Wait()
	}
	return h.items.popLeast(), nil
}

// Close closes the heap: later adds fail, and Pops waiting on an empty heap
// return an error. Closing twice is harmless.
func (h *Heap) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	h.notEmpty.Broadcast()
}

// IsClosed reports whether Close was called.
func (h *Heap) IsClosed() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.closed
}

// List returns every held object, in no particular order.
func (h *Heap) List() []interface{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]interface{}, len(h.items.entries))
	for i, e := range h.items.entries {
		out[i] = e.obj
	}
	return out
}

// ListKeys returns every held key, in no particular order.
func (h *Heap) ListKeys() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]string, len(h.items.entries))
	for i, e := range h.items.entries {
		out[i] = e.key
	}
	return out
}

// Get returns the object held under obj's key.
func (h *Heap) Get(obj interface{}) (interface{}, bool, error) {
	key, err := h.keyOf(obj)
	if err != nil {
		return nil, false, err
	}
	return h.GetByKey(key)
}

// GetByKey returns the object held under key. It never fails.
func (h *Heap) GetByKey(key string) (interface{}, bool, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	obj, ok := h.items.get(key)
	return obj, ok, nil
}

// keyedHeap is the lock-free core of Heap: a binary min-heap of keyed
// entries plus the position of each key, so that any entry can be found,
// replaced or removed in O(log n). Entries are stored by value, so pushing
// and popping allocate nothing beyond slice and map growth.
//
// Invariants: pos[entries[i].key] == i for every i, and pos has no other
// keys; no entry is less than its parent, (i-1)/2.
type keyedHeap struct {
	entries []heapEntry
	pos     map[string]int
	less    LessFunc
}

// heapEntry is one object of a keyedHeap with its key.
type heapEntry struct {
	key string
	obj interface{}
}

// Len returns the number of entries.
func (k *keyedHeap) Len() int { return len(k.entries) }

// has reports whether key is held.
func (k *keyedHeap) has(key string) bool {
	_, ok := k.pos[key]
	return ok
}

// get returns the object held under key.
func (k *keyedHeap) get(key string) (interface{}, bool) {
	i, ok := k.pos[key]
	if !ok {
		return nil, false
	}
	return k.entries[i].obj, true
}

// set stores obj under key, replacing and re-ordering an existing entry.
func (k *keyedHeap) set(key string, obj interface{}) {
	if i, ok := k.pos[key]; ok {
		k.entries[i].obj = obj
		k.fix(i)
		return
	}
	k.entries = append(k.entries, heapEntry{key: key, obj: obj})
	last := len(k.entries) - 1
	k.pos[key] = last
	k.up(last)
}

// remove drops the entry of key and reports whether there was one.
func (k *keyedHeap) remove(key string) bool {
	i, ok := k.pos[key]
	if !ok {
		return false
	}
	k.removeAt(i)
	return true
}

// popLeast removes and returns the least object. The heap must not be
// empty.
func (k *keyedHeap) popLeast() interface{} {
	return k.removeAt(0).obj
}

// removeAt removes the entry at position i: the last entry takes its place
// and is moved to where it belongs. The vacated slot is cleared so its
// object can be collected.
func (k *keyedHeap) removeAt(i int) heapEntry {
	removed := k.entries[i]
	last := len(k.entries) - 1
	if i != last {
		k.swap(i, last)
	}
	k.entries[last] = heapEntry{}
	k.entries = k.entries[:last]
	delete(k.pos, removed.key)
	if i != last {
		k.fix(i)
	}
	return removed
}

// fix restores the order around position i after its entry changed.
func (k *keyedHeap) fix(i int) {
	if !k.down(i) {
		k.up(i)
	}
}

// up moves the entry at i towards the root while it is less than its
// parent.
func (k *keyedHeap) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !k.lessAt(i, parent) {
			return
		}
		k.swap(i, parent)
		i = parent
	}
}

// down moves the entry at i towards the leaves while a child is less than
// it, and reports whether it moved.
func (k *keyedHeap) down(i int) bool {
	start, n := i, len(k.entries)
	for {
		least := 2*i + 1
		if least >= n {
			break
		}
		if right := least + 1; right < n && k.lessAt(right, least) {
			least = right
		}
		if !k.lessAt(least, i) {
			break
		}
		k.swap(i, least)
		i = least
	}
	return i > start
}

// lessAt compares the entries at i and j with the user's LessFunc.
func (k *keyedHeap) lessAt(i, j int) bool {
	return k.less(k.entries[i].obj, k.entries[j].obj)
}

// swap exchanges the entries at i and j, keeping pos in step.
func (k *keyedHeap) swap(i, j int) {
	k.entries[i], k.entries[j] = k.entries[j], k.entries[i]
	k.pos[k.entries[i].key] = i
	k.pos[k.entries[j].key] = j
}
