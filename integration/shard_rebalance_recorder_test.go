package integration

import (
	"fmt"
	"sync"

	kcache "github.com/kcache/cache"
	"k8s.io/apimachinery/pkg/types"
)

// moveRecorder is the event handler of a replica whose shard moves. Unlike
// recorder, it lets an object leave (a delete carrying MovedOutOfShard) and
// come back later (an add), as resharding does. It checks as events arrive
// that each add is for an object it does not hold and each update and
// delete for one it holds, and counts, per object, the adds, the versions
// delivered and the three kinds of delete.
type moveRecorder struct {
	name    string
	inScope func(namespace string) bool

	// mu guards every field below.
	mu       sync.Mutex
	view     snapshot
	objects  map[types.UID]*moveHistory
	totals   moveHistory
	problems []string
}

// moveHistory is what a moveRecorder was told of one object (or, in
// totals, of all of them; seen is then nil).
type moveHistory struct {
	// seen holds the resource versions OnAdd and OnUpdate delivered.
	seen       map[uint64]bool
	adds       int
	updates    int
	moves      int // deletes carrying MovedOutOfShard
	deletes    int // plain deletes: the object is gone from the server
	tombstones int // deletes carrying DeletedFinalStateUnknown
}

func newMoveRecorder(name string, namespaces []string) *moveRecorder {
	return &moveRecorder{
		name:    name,
		inScope: namespaceFilter(namespaces),
		view:    snapshot{},
		objects: map[types.UID]*moveHistory{},
	}
}

// historyLocked returns uid's history, creating it. r.mu must be held.
func (r *moveRecorder) historyLocked(uid types.UID) *moveHistory {
	h, ok := r.objects[uid]
	if !ok {
		h = &moveHistory{seen: map[uint64]bool{}}
		r.objects[uid] = h
	}
	return h
}

func (r *moveRecorder) problemLocked(format string, args ...any) {
	if len(r.problems) < maxProblems {
		r.problems = append(r.problems, fmt.Sprintf(format, args...))
	}
}

// OnAdd checks that the handler does not hold the object.
func (r *moveRecorder) OnAdd(obj any, _ bool) {
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
	if prev, ok := r.view[d.key]; ok {
		r.problemLocked("OnAdd %s (uid %s rv %d) while the handler holds uid %s rv %d", d.key, d.state.UID, d.state.RV, prev.UID, prev.RV)
	}
	r.view[d.key] = d.state
	h := r.historyLocked(d.state.UID)
	h.adds++
	r.totals.adds++
	h.seen[d.state.RV] = true
}

// OnUpdate checks that old is what the handler holds and new not older.
func (r *moveRecorder) OnUpdate(oldObj, newObj any) {
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
	if prev, ok := r.view[n.key]; !ok || prev != o.state || n.state.UID != o.state.UID || n.state.RV < o.state.RV {
		r.problemLocked("OnUpdate %s from uid %s rv %d to uid %s rv %d, while the handler holds %+v (held: %v)", n.key, o.state.UID, o.state.RV, n.state.UID, n.state.RV, prev, ok)
	}
	r.view[n.key] = n.state
	h := r.historyLocked(n.state.UID)
	h.updates++
	r.totals.updates++
	h.seen[n.state.RV] = true
}

// OnDelete checks that the handler holds the object and sorts the delete:
// moved, tombstone or plain.
func (r *moveRecorder) OnDelete(obj any) {
	inner, moved, tombstone := obj, false, false
	switch o := obj.(type) {
	case kcache.MovedOutOfShard:
		inner, moved = o.Obj, true
	default:
		inner, _, tombstone = unwrapTombstone(obj)
	}
	d, err := describe(inner)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.problemLocked("OnDelete %T: %v", obj, err)
		return
	}
	if !r.inScope(d.namespace) {
		return
	}
	if prev, ok := r.view[d.key]; !ok || prev.UID != d.state.UID {
		r.problemLocked("OnDelete %s uid %s (moved: %v) while the handler holds %+v (held: %v)", d.key, d.state.UID, moved, prev, ok)
	}
	delete(r.view, d.key)
	h := r.historyLocked(d.state.UID)
	switch {
	case moved:
		h.moves++
		r.totals.moves++
	case tombstone:
		h.tombstones++
		r.totals.tombstones++
	default:
		h.deletes++
		r.totals.deletes++
	}
}

// snapshot returns a copy of what the handler holds.
func (r *moveRecorder) snapshot() snapshot {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(snapshot, len(r.view))
	for k, v := range r.view {
		out[k] = v
	}
	return out
}

// historyOf returns a copy of what the handler was told of uid.
func (r *moveRecorder) historyOf(uid types.UID) moveHistory {
	r.mu.Lock()
	defer r.mu.Unlock()
	h, ok := r.objects[uid]
	if !ok {
		return moveHistory{}
	}
	out := *h
	out.seen = make(map[uint64]bool, len(h.seen))
	for rv := range h.seen {
		out.seen[rv] = true
	}
	return out
}

// result returns the totals and the problems found so far.
func (r *moveRecorder) result() (moveHistory, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.totals, append([]string(nil), r.problems...)
}
