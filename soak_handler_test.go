package cache

import (
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
)

// soakHandler is an event handler that replays what it is told into its
// own view of the objects and checks, at every call, that the stream makes
// sense: no update of an object it has not seen or whose old object is not
// the one it holds, no add of an object it already holds, no delete of one
// it does not hold, no object older than one it saw under the same key,
// and no initial-list add delivered while its registration already says it
// has synced. A correct informer leaves the view equal to the server's
// state once quiet.
type soakHandler struct {
	// mu guards the fields up to the blank line.
	mu sync.Mutex
	// view is the handler's replay of the stream, by key.
	view map[string]*v1.Pod
	// newest is, per key ever seen, the newest resource version seen.
	newest map[string]int64
	// calls counts handler calls; initialAdds those with isInInitialList.
	calls, initialAdds int64
	// divergences counts failed checks; messages keeps the first ones.
	divergences int64
	messages    []string

	name string
	// pause, if set, is how long every pauseEvery-th call takes, to make
	// a slow handler.
	pause time.Duration
	ticks atomic.Int64
	reg   atomic.Value // ResourceEventHandlerRegistration, once known
	// maxRV is the newest resource version the handler has seen.
	maxRV atomic.Int64
}

func newSoakHandler(name string, pause time.Duration) *soakHandler {
	return &soakHandler{name: name, pause: pause, view: map[string]*v1.Pod{}, newest: map[string]int64{}}
}

// setRegistration records the handler's registration for the sync check.
func (h *soakHandler) setRegistration(r ResourceEventHandlerRegistration) { h.reg.Store(&r) }

func (h *soakHandler) registration() ResourceEventHandlerRegistration {
	if r, ok := h.reg.Load().(*ResourceEventHandlerRegistration); ok {
		return *r
	}
	return nil
}

// divergeLocked records a failed check. Caller holds mu.
func (h *soakHandler) divergeLocked(format string, args ...any) {
	h.divergences++
	if len(h.messages) < 20 {
		h.messages = append(h.messages, h.name+": "+fmt.Sprintf(format, args...))
	}
}

// pauseEvery spaces a slow handler's pauses: sleeps are coarse, so a slow
// handler sleeps now and then rather than a little at every call.
const pauseEvery = 32

func (h *soakHandler) slowDown() {
	if h.pause > 0 && h.ticks.Add(1)%pauseEvery == 0 {
		time.Sleep(h.pause) // simulated work, not synchronisation
	}
}

func soakKey(p *v1.Pod) string { return p.Namespace + "/" + p.Name }

func soakRV(p *v1.Pod) int64 {
	rv, _ := strconv.ParseInt(p.ResourceVersion, 10, 64)
	return rv
}

// seeLocked records p as the key's newest state. Caller holds mu.
func (h *soakHandler) seeLocked(key string, p *v1.Pod) {
	rv := soakRV(p)
	h.newest[key] = max(h.newest[key], rv)
	for {
		old := h.maxRV.Load()
		if rv <= old || h.maxRV.CompareAndSwap(old, rv) {
			return
		}
	}
}

func (h *soakHandler) OnAdd(obj interface{}, isInInitialList bool) {
	h.slowDown()
	synced := false
	if r := h.registration(); r != nil && isInInitialList {
		synced = r.HasSynced()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls++
	p, ok := obj.(*v1.Pod)
	if !ok {
		h.divergeLocked("OnAdd got %T", obj)
		return
	}
	key := soakKey(p)
	if isInInitialList {
		h.initialAdds++
		if synced {
			h.divergeLocked("HasSynced was true while the initial-list add of %s was being delivered", key)
		}
	}
	if cur, ok := h.view[key]; ok {
		h.divergeLocked("add of %s@%s, already held at %s", key, p.ResourceVersion, cur.ResourceVersion)
	}
	if rv := soakRV(p); rv <= h.newest[key] {
		h.divergeLocked("stale add of %s@%d after %d", key, rv, h.newest[key])
	}
	h.view[key] = p
	h.seeLocked(key, p)
}

func (h *soakHandler) OnUpdate(oldObj, newObj interface{}) {
	h.slowDown()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls++
	o, ok1 := oldObj.(*v1.Pod)
	n, ok2 := newObj.(*v1.Pod)
	if !ok1 || !ok2 {
		h.divergeLocked("OnUpdate got %T, %T", oldObj, newObj)
		return
	}
	key := soakKey(n)
	cur, ok := h.view[key]
	switch {
	case !ok:
		h.divergeLocked("update of %s@%s, never added or already deleted", key, n.ResourceVersion)
	case cur.UID != o.UID || cur.ResourceVersion != o.ResourceVersion:
		h.divergeLocked("update of %s: old object %s@%s is not the one held, %s@%s", key, o.UID, o.ResourceVersion, cur.UID, cur.ResourceVersion)
	case soakRV(n) < soakRV(cur):
		h.divergeLocked("stale update of %s to %s from %s", key, n.ResourceVersion, cur.ResourceVersion)
	case soakRV(n) == soakRV(cur) && n.UID != cur.UID:
		h.divergeLocked("update of %s keeps resource version %s but changes UID", key, n.ResourceVersion)
	}
	h.view[key] = n
	h.seeLocked(key, n)
}

func (h *soakHandler) OnDelete(obj interface{}) {
	h.slowDown()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls++
	var key string
	var p *v1.Pod
	switch v := obj.(type) {
	case *v1.Pod:
		key, p = soakKey(v), v
	case DeletedFinalStateUnknown:
		key = v.Key
		p, _ = v.Obj.(*v1.Pod)
	default:
		h.divergeLocked("OnDelete got %T", obj)
		return
	}
	cur, ok := h.view[key]
	switch {
	case !ok:
		h.divergeLocked("delete of %s, which is not held", key)
	case p == nil:
		h.divergeLocked("delete of %s without its last state", key)
	case soakRV(p) < soakRV(cur):
		h.divergeLocked("delete of %s carries %s, older than the held %s", key, p.ResourceVersion, cur.ResourceVersion)
	}
	delete(h.view, key)
	if p != nil {
		h.seeLocked(key, p)
	}
}

// snapshot returns the view as key → resource version.
func (h *soakHandler) snapshot() map[string]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[string]string, len(h.view))
	for k, p := range h.view {
		out[k] = p.ResourceVersion
	}
	return out
}

// result returns the handler's counters and first messages.
func (h *soakHandler) result() (calls, initialAdds, divergences int64, messages []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.calls, h.initialAdds, h.divergences, append([]string(nil), h.messages...)
}
