package integration

import (
	"fmt"
	"strconv"
	"sync"

	kcache "github.com/kcache/cache"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientgocache "k8s.io/client-go/tools/cache"
)

// objectState is what the tests compare of an object: which object it is
// and which version of it.
type objectState struct {
	UID types.UID
	RV  uint64
}

// snapshot maps namespace/name keys to object states.
type snapshot map[string]objectState

// eventCounts counts what a handler was told.
type eventCounts struct {
	Adds        int // OnAdd calls, initial ones included
	InitialAdds int // OnAdd calls with isInInitialList set
	Updates     int // OnUpdate calls
	Resyncs     int // OnUpdate calls whose old and new versions are equal
	Deletes     int // OnDelete calls, tombstones included
	Tombstones  int // OnDelete calls with a DeletedFinalStateUnknown
}

func (c eventCounts) total() int { return c.Adds + c.Updates + c.Deletes }

// history is everything one handler saw of one object (one UID).
type history struct {
	key string
	// rvs are the versions delivered by OnAdd and OnUpdate, in order,
	// except updates that only mark the object as being deleted.
	rvs []uint64
	// terminating counts updates whose new object has a deletion
	// timestamp: the API server writes one before it deletes a Pod.
	terminating int
	deleted     bool
	tombstoned  bool
}

// maxProblems bounds how many violations a recorder keeps.
const maxProblems = 40

// recorder is an event handler that checks, as events arrive, that they are
// consistent for each object: an add first, then updates with increasing
// resource versions whose old object is exactly the previous one delivered,
// then at most one delete, and nothing after it. It keeps its own view of
// the objects and the history of each one for later comparison. It accepts
// the objects and tombstones of both kcache and client-go, so the same type
// watches either informer.
type recorder struct {
	name string
	// inScope says which namespaces the recorder tracks; events for other
	// objects are ignored.
	inScope func(namespace string) bool

	// mu guards every field below.
	mu        sync.Mutex
	view      snapshot
	histories map[types.UID]*history
	counts    eventCounts
	problems  []string
}

// newRecorder returns a recorder tracking the given namespaces (all of them
// when none are given).
func newRecorder(name string, namespaces ...string) *recorder {
	return &recorder{
		name:      name,
		inScope:   namespaceFilter(namespaces),
		view:      snapshot{},
		histories: map[types.UID]*history{},
	}
}

// namespaceFilter returns a predicate accepting the given namespaces, or
// every namespace when the list is empty.
func namespaceFilter(namespaces []string) func(string) bool {
	if len(namespaces) == 0 {
		return func(string) bool { return true }
	}
	set := make(map[string]bool, len(namespaces))
	for _, ns := range namespaces {
		set[ns] = true
	}
	return func(ns string) bool { return set[ns] }
}

// describedObject is the parts of a delivered object the checks need.
type describedObject struct {
	key         string
	namespace   string
	state       objectState
	terminating bool // the object has a deletion timestamp
}

// describe extracts key, UID and resource version from a delivered object.
func describe(obj any) (describedObject, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return describedObject{}, fmt.Errorf("object %T has no metadata: %w", obj, err)
	}
	rv, err := strconv.ParseUint(m.GetResourceVersion(), 10, 64)
	if err != nil {
		return describedObject{}, fmt.Errorf("object %T %s/%s: resource version %q: %w", obj, m.GetNamespace(), m.GetName(), m.GetResourceVersion(), err)
	}
	key := m.GetName()
	if m.GetNamespace() != "" {
		key = m.GetNamespace() + "/" + key
	}
	return describedObject{
		key:         key,
		namespace:   m.GetNamespace(),
		state:       objectState{UID: m.GetUID(), RV: rv},
		terminating: m.GetDeletionTimestamp() != nil,
	}, nil
}

// stateOf is describe for callers that already know obj is valid.
func stateOf(obj metav1.Object) objectState {
	d, err := describe(obj)
	if err != nil {
		panic(err) // objects returned by the API server always parse
	}
	return d.state
}

// problemLocked records a violation. r.mu must be held.
func (r *recorder) problemLocked(format string, args ...any) {
	if len(r.problems) < maxProblems {
		r.problems = append(r.problems, fmt.Sprintf(format, args...))
	}
}

// OnAdd checks that the object is new to the handler.
func (r *recorder) OnAdd(obj any, isInInitialList bool) {
	d, err := describe(obj)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.problemLocked("OnAdd: %v", err)
		return
	}
	if !r.inScope(d.namespace) {
		return
	}
	r.counts.Adds++
	if isInInitialList {
		r.counts.InitialAdds++
	}
	if prev, ok := r.view[d.key]; ok {
		r.problemLocked("OnAdd %s (uid %s rv %d) while the handler still holds uid %s rv %d", d.key, d.state.UID, d.state.RV, prev.UID, prev.RV)
	}
	if h, ok := r.histories[d.state.UID]; ok {
		r.problemLocked("OnAdd %s rv %d for uid %s seen before (deleted=%v, rvs %v)", d.key, d.state.RV, d.state.UID, h.deleted, h.rvs)
	}
	r.view[d.key] = d.state
	r.histories[d.state.UID] = &history{key: d.key, rvs: []uint64{d.state.RV}}
}

// OnUpdate checks that old is what the handler last saw of the object and
// that new is not older.
func (r *recorder) OnUpdate(oldObj, newObj any) {
	o, errOld := describe(oldObj)
	n, errNew := describe(newObj)
	r.mu.Lock()
	defer r.mu.Unlock()
	if errOld != nil || errNew != nil {
		r.problemLocked("OnUpdate: old: %v, new: %v", errOld, errNew)
		return
	}
	if !r.inScope(n.namespace) {
		return
	}
	r.counts.Updates++
	if n.state.RV == o.state.RV {
		r.counts.Resyncs++
	}
	prev, ok := r.view[n.key]
	switch {
	case o.key != n.key:
		r.problemLocked("OnUpdate with old %s and new %s", o.key, n.key)
	case !ok:
		r.problemLocked("OnUpdate %s rv %d for an object the handler does not hold", n.key, n.state.RV)
	case prev != o.state:
		r.problemLocked("OnUpdate %s: old is uid %s rv %d, but the handler last saw uid %s rv %d", n.key, o.state.UID, o.state.RV, prev.UID, prev.RV)
	case n.state.UID != o.state.UID:
		r.problemLocked("OnUpdate %s changes uid %s to %s", n.key, o.state.UID, n.state.UID)
	case n.state.RV < o.state.RV:
		r.problemLocked("OnUpdate %s goes back from rv %d to rv %d", n.key, o.state.RV, n.state.RV)
	}
	r.view[n.key] = n.state
	h := r.historyLocked(n)
	switch {
	case n.state.RV == o.state.RV:
	case n.terminating && !o.terminating:
		h.terminating++
	default:
		h.rvs = append(h.rvs, n.state.RV)
	}
}

// OnDelete checks that the object was held and is not older than what the
// handler saw; a tombstone must carry exactly the last state seen.
func (r *recorder) OnDelete(obj any) {
	inner, tombstoneKey, isTombstone := unwrapTombstone(obj)
	d, err := describe(inner)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.problemLocked("OnDelete: %v", err)
		return
	}
	if !r.inScope(d.namespace) {
		return
	}
	r.counts.Deletes++
	if isTombstone {
		r.counts.Tombstones++
		if tombstoneKey != d.key {
			r.problemLocked("OnDelete tombstone key %q holds object %s", tombstoneKey, d.key)
		}
	}
	prev, ok := r.view[d.key]
	switch {
	case !ok:
		r.problemLocked("OnDelete %s rv %d for an object the handler does not hold", d.key, d.state.RV)
	case prev.UID != d.state.UID:
		r.problemLocked("OnDelete %s uid %s, but the handler holds uid %s", d.key, d.state.UID, prev.UID)
	case isTombstone && d.state.RV != prev.RV:
		r.problemLocked("OnDelete tombstone %s carries rv %d, but the handler last saw rv %d", d.key, d.state.RV, prev.RV)
	case !isTombstone && d.state.RV <= prev.RV:
		r.problemLocked("OnDelete %s at rv %d, not after the last seen rv %d", d.key, d.state.RV, prev.RV)
	}
	delete(r.view, d.key)
	h := r.historyLocked(d)
	if h.deleted {
		r.problemLocked("OnDelete %s uid %s twice", d.key, d.state.UID)
	}
	h.deleted = true
	h.tombstoned = isTombstone
}

// historyLocked returns the history of d's UID, creating (and reporting) a
// missing one. r.mu must be held.
func (r *recorder) historyLocked(d describedObject) *history {
	h, ok := r.histories[d.state.UID]
	if !ok {
		r.problemLocked("event for %s uid %s before any add", d.key, d.state.UID)
		h = &history{key: d.key}
		r.histories[d.state.UID] = h
	}
	if h.deleted {
		r.problemLocked("event for %s uid %s after its delete", d.key, d.state.UID)
	}
	return h
}

// unwrapTombstone returns the object inside a kcache or client-go
// DeletedFinalStateUnknown, with the tombstone's key.
func unwrapTombstone(obj any) (inner any, key string, ok bool) {
	switch t := obj.(type) {
	case kcache.DeletedFinalStateUnknown:
		return t.Obj, t.Key, true
	case *kcache.DeletedFinalStateUnknown:
		return t.Obj, t.Key, true
	case clientgocache.DeletedFinalStateUnknown:
		return t.Obj, t.Key, true
	case *clientgocache.DeletedFinalStateUnknown:
		return t.Obj, t.Key, true
	}
	return obj, "", false
}

// snapshot returns a copy of the recorder's view.
func (r *recorder) snapshot() snapshot {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(snapshot, len(r.view))
	for k, v := range r.view {
		out[k] = v
	}
	return out
}

// result returns the counts and the problems found so far.
func (r *recorder) result() (eventCounts, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts, append([]string(nil), r.problems...)
}

// historyOf returns a copy of what the recorder saw of uid.
func (r *recorder) historyOf(uid types.UID) (history, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	h, ok := r.histories[uid]
	if !ok {
		return history{}, false
	}
	out := *h
	out.rvs = append([]uint64(nil), h.rvs...)
	return out, true
}
