package cache

import (
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"
)

// This file holds the lock-free core of a listener's pending notifications:
// an ordered queue that, while merging is on, merges the pending
// notifications of each object, so its size is bounded by the number of
// distinct objects instead of the number of events. Merging starts past a
// fixed limit, or when the owning listener decides its handler stalled.

// pendingEntry is a slot of the backlog: normally one notification; after
// merging, the notifications of one object that remain (at most a delete
// followed by an add or update, when an object was deleted and created
// again). An entry whose notifications cancelled out has none (first.kind
// is zero) and is skipped. What only merging needs sits behind merge, so
// that the entries of a handler that makes progress stay small (48 bytes).
type pendingEntry struct {
	first notification
	// merge is set on entries queued while merging was on.
	merge *mergedEntry
}

// mergedEntry is the part of a pending entry that merging uses.
type mergedEntry struct {
	key string
	// second, when set, follows first: only ever after a delete.
	second *notification
}

// gone reports whether e's notifications cancelled out.
func (e *pendingEntry) gone() bool { return e.first.kind == 0 }

// second returns the notification that follows first, if any.
func (e *pendingEntry) second() *notification {
	if e.merge == nil {
		return nil
	}
	return e.merge.second
}

// backlog is the ordered queue of a listener's pending notifications. It is
// not safe for concurrent use; the listener guards it with its mutex.
//
// Invariants: entries are in arrival order of each object's oldest pending
// change; while merging is on (byKey != nil), byKey holds the newest live
// entry of every key in entries, and notifications of one object are merged
// only into that entry, so each object's changes are still delivered in
// order. Objects without a key are never merged.
type backlog struct {
	entries []pendingEntry
	// head is the index of the next entry to deliver.
	head int
	// limit is the size past which merging starts by itself (and below
	// half of which it stops); 0 leaves starting and stopping to the
	// owner (startMerging, stopMerging).
	limit int
	// byKey indexes live entries by object key while merging is on.
	byKey map[string]int
	// live counts entries not yet delivered and not gone.
	live int
	// merged counts notifications absorbed into earlier ones, ever.
	merged uint64
	// cancelledInitial counts initial-list adds that vanished with a later
	// delete and will never be delivered, ever. The sync tracker must count
	// them as processed.
	cancelledInitial uint64
	// used is the most entries held at once since the backlog last
	// emptied: room far beyond it is given back.
	used int
	// initialBurst says an entry queued since the backlog last emptied
	// was an add of the initial list, a burst that comes once.
	initialBurst bool
}

// keyFor names an object for merging; "" when it has none.
func keyFor(n notification) string {
	obj := n.newObj
	if n.kind == notifyDelete {
		obj = n.oldObj
	}
	key, err := DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return ""
	}
	return key
}

// push appends n, merging it into the object's pending entry when merging
// is on.
func (b *backlog) push(n notification) {
	if b.limit > 0 && b.byKey == nil && b.live >= b.limit {
		b.startMerging()
	}
	if b.byKey != nil {
		b.pushMerging(n)
		return
	}
	b.appendEntry(pendingEntry{first: n})
	b.live++
}

// pushMerging appends n, or merges it into the newest pending entry of its
// object. Merging is on.
func (b *backlog) pushMerging(n notification) {
	key := keyFor(n)
	if key != "" {
		if at, ok := b.byKey[key]; ok && b.absorb(&b.entries[at], n) {
			b.merged++
			return
		}
		b.byKey[key] = len(b.entries)
	}
	b.appendEntry(pendingEntry{first: n, merge: &mergedEntry{key: key}})
	b.live++
}

// backlogKeepCap is room for entries that an emptied backlog always keeps;
// room beyond it is given back when the backlog empties after using less
// than a quarter of it, so a burst's room serves the next bursts while they
// come, and is freed once they stop. The room of a burst that held the
// initial list is given back as soon as it empties: that burst does not
// come again (a relist's updates are a burst of their own).
const backlogKeepCap = 1024

// appendEntry appends e, doubling the room when it runs out: a burst of
// n notifications copies about n entries in all, not four times as many
// as append's gentler growth of large slices would.
func (b *backlog) appendEntry(e pendingEntry) {
	if len(b.entries) == cap(b.entries) {
		grown := make([]pendingEntry, len(b.entries), max(16, 2*cap(b.entries)))
		copy(grown, b.entries)
		b.entries = grown
	}
	b.entries = append(b.entries, e)
	b.used = max(b.used, len(b.entries)-b.head)
	b.initialBurst = b.initialBurst || e.first.initialList
}

// merging reports whether notifications pushed now merge per object.
func (b *backlog) merging() bool { return b.byKey != nil }

// stopMerging makes later pushes queue as they come again. Entries that
// were merged stay merged; per-object order holds because later entries
// only ever follow them.
func (b *backlog) stopMerging() { b.byKey = nil }

// startMerging turns merging on and folds what is already pending: the
// live entries are pushed again, in order, into a fresh merging backlog,
// so right away at most about one entry per object remains, at the place
// of the object's oldest pending change. It does nothing while merging is
// on.
func (b *backlog) startMerging() {
	if b.byKey != nil {
		return
	}
	old := b.entries[b.head:]
	b.entries, b.head, b.live = make([]pendingEntry, 0, len(old)), 0, 0
	b.byKey = make(map[string]int, len(old))
	for i := range old {
		e := &old[i]
		if e.gone() {
			continue
		}
		b.pushMerging(e.first)
		if second := e.second(); second != nil {
			b.pushMerging(*second)
		}
	}
}

// absorb merges n into e, the object's newest pending entry (queued while
// merging was on), and reports whether it could. The rules keep what a
// handler needs to reach the same state: the oldest old object, the newest
// new object, adds that a delete cancels vanish, and a delete of something
// the handler saw always stays.
func (b *backlog) absorb(e *pendingEntry, n notification) bool {
	last := &e.first
	if e.merge.second != nil {
		last = e.merge.second
	}
	if last.kind == notifyDelete && n.kind != notifyDelete {
		// The object was created again after a delete the handler must
		// see: keep both, unless a re-creation is already pending.
		if e.merge.second != nil {
			return false
		}
		second := n
		e.merge.second = &second
		return true
	}
	if n.kind == notifyAdd && n.initialList {
		// The initial-list add is folded away and will not be delivered
		// as itself: the sync tracker must count it as processed.
		b.cancelledInitial++
	}
	switch {
	case n.kind == notifyDelete && last.kind == notifyDelete:
		// Two deletes in a row: keep the later one, unless it only knows
		// less (a tombstone where a real final object was known).
		if _, tombstone := n.oldObj.(DeletedFinalStateUnknown); !tombstone {
			last.oldObj = n.oldObj
		}
	case n.kind != notifyDelete:
		// add+update stays an add of the newest; update+update keeps the
		// oldest old object; an add without a delete in between (a
		// re-list) folds into the newest state too.
		last.newObj = n.newObj
	case last.kind == notifyAdd:
		// add then delete: the handler never saw the object.
		b.dropLast(e)
	default:
		// update then delete: deliver the delete with the newest state.
		*last = n
	}
	return true
}

// dropLast removes e's last notification (an add cancelled by a delete).
func (b *backlog) dropLast(e *pendingEntry) {
	last := e.first
	if e.merge.second != nil {
		last = *e.merge.second
		e.merge.second = nil
	} else {
		e.first = notification{} // gone, and its objects can be collected
		b.live--
		delete(b.byKey, e.merge.key)
	}
	if last.initialList {
		b.cancelledInitial++
	}
}

// pop removes and returns the next entry's notifications (one or two).
// ok is false when nothing is pending.
func (b *backlog) pop() (first notification, second *notification, ok bool) {
	for b.head < len(b.entries) {
		e := b.entries[b.head]
		b.entries[b.head] = pendingEntry{} // let the objects be collected
		b.head++
		if e.gone() {
			continue
		}
		b.live--
		if b.byKey != nil && e.merge != nil && e.merge.key != "" && b.byKey[e.merge.key] == b.head-1 {
			delete(b.byKey, e.merge.key)
		}
		b.compact()
		return e.first, e.second(), true
	}
	b.compact()
	return notification{}, nil, false
}

// compact reclaims delivered slots, gives back the room of a drained
// burst, and turns merging off once the backlog has drained below half of
// a non-zero limit.
func (b *backlog) compact() {
	if b.head == len(b.entries) && b.head > 0 {
		if cap(b.entries) > backlogKeepCap && (b.used < cap(b.entries)/4 || b.initialBurst) {
			b.entries = nil
		} else {
			b.entries = b.entries[:0]
		}
		b.head, b.used, b.initialBurst = 0, 0, false
	} else if b.head > 1024 && b.head*2 > len(b.entries) {
		n := copy(b.entries, b.entries[b.head:])
		clear(b.entries[n:])
		b.entries = b.entries[:n]
		for key, at := range b.byKey {
			b.byKey[key] = at - b.head
		}
		b.head = 0
	}
	if b.byKey != nil && b.live*2 < b.limit {
		b.byKey = nil
	}
}

// len returns the number of pending entries to deliver.
func (b *backlog) len() int { return b.live }

// This file holds when a listener merges its pending notifications: never
// while its handler makes progress (every notification is delivered, in
// order, as client-go does), only once the handler has stalled, or earlier
// when a program opts in with SetListenerBacklogLimit.

// DefaultListenerBacklogLimit is the number of pending notifications a
// handler must have fallen behind by before its listener may treat it as
// stalled (see SetListenerBacklogLimit): a handler is stalled when its
// backlog has stayed at or above this limit for ListenerStallTimeout
// without any of its calls returning.
const DefaultListenerBacklogLimit = 10000

// ListenerStallTimeout is how long a handler's backlog must stay at or
// above DefaultListenerBacklogLimit, with no call to the handler returning,
// before its listener starts merging pending notifications per object.
const ListenerStallTimeout = 10 * time.Second

// listenerBacklogLimit is the setting given to listeners created from now
// on: negative for the default (merge only when stalled), 0 for never,
// positive for merging past that many pending notifications.
var listenerBacklogLimit atomic.Int64

func init() { listenerBacklogLimit.Store(-1) }

// SetListenerBacklogLimit chooses, for handlers registered from now on,
// when pending notifications are merged per object: updates fold into one
// (oldest old object, newest new object), an add followed by a delete
// vanishes, and a delete is always delivered. A handler then still sees
// every object's changes in order and ends in the same state, and its
// backlog is bounded by the number of objects, not of events.
//
// By default (n < 0) a handler that makes progress receives every
// notification, in order, however far it falls behind, as with client-go;
// only a stalled handler, one whose backlog stayed at or above
// DefaultListenerBacklogLimit for ListenerStallTimeout without any of its
// calls returning, has its pending notifications merged, and merging stops
// as soon as one of its calls returns. n > 0 opts in to merging as soon as
// n notifications are pending, whether or not the handler makes progress
// (what kcache did by default before, with n = 10000). n == 0 never
// merges: even a stalled handler's backlog grows without bound, as in
// client-go. It returns the previous setting (-1 for the default), so
// `defer SetListenerBacklogLimit(SetListenerBacklogLimit(n))` restores it.
func SetListenerBacklogLimit(n int) int {
	if n < 0 {
		n = -1
	}
	return int(listenerBacklogLimit.Swap(int64(n)))
}

// stallRule is a listener's view of the merge setting and the state of its
// stall detection. The listener's mutex guards watchCount and watchSince.
type stallRule struct {
	// limit is the backlog size from which the handler may be found
	// stalled; 0 when the listener never detects stalls (it merges past
	// a fixed limit, or never).
	limit int
	clock clock.PassiveClock

	// watchCount is the number of returned handler calls when the backlog
	// was last seen at or above limit, and watchSince when that count was
	// first seen so (zero: not timed yet).
	watchCount uint64
	watchSince time.Time
}

// backlogFor returns the backlog and the stall rule of a new listener
// under the current setting.
func backlogFor(clk clock.PassiveClock) (backlog, stallRule) {
	n := int(listenerBacklogLimit.Load())
	if n >= 0 {
		return backlog{limit: n}, stallRule{}
	}
	return backlog{}, stallRule{limit: DefaultListenerBacklogLimit, clock: clk}
}

// beforePush applies the stall rule to b before a notification is pushed;
// returned is the number of handler calls that have returned so far. It
// reports whether merging started. The caller holds the listener's mutex.
//
// The rule is checked at pushes, which are the only moments it matters:
// the timing starts at a push that finds the backlog at or above the limit
// and no call returned since the previous push; a push that finds the
// backlog below the limit, or a call returned, ends it; a push that finds
// it ListenerStallTimeout old starts merging, and the first push after a
// call returned stops it. The clock is read only while the backlog is at
// the limit and the handler returned nothing since the last push.
func (r *stallRule) beforePush(b *backlog, returned uint64) (started bool) {
	if r.limit == 0 {
		return false
	}
	if b.merging() {
		if returned != r.watchCount {
			b.stopMerging()
			r.watchCount, r.watchSince = returned, time.Time{}
		}
		return false
	}
	if b.len() < r.limit {
		r.watchSince = time.Time{}
		return false
	}
	if returned != r.watchCount {
		r.watchCount, r.watchSince = returned, time.Time{}
		return false
	}
	now := r.clock.Now()
	if r.watchSince.IsZero() {
		r.watchSince = now
		return false
	}
	if now.Sub(r.watchSince) < ListenerStallTimeout {
		return false
	}
	b.startMerging()
	return true
}
