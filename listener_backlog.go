package cache

import (
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"
)

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
