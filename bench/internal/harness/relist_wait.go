package harness

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// Notifications are a handler's counts of each kind of notification.
type Notifications struct{ Adds, Updates, Deletes int64 }

// Counts returns what h has counted so far.
func (h *CountingHandler) Counts() Notifications {
	return Notifications{Adds: h.adds.Load(), Updates: h.updates.Load(), Deletes: h.deletes.Load()}
}

// Since is n less the counts before.
func (n Notifications) Since(before Notifications) Notifications {
	return Notifications{Adds: n.Adds - before.Adds, Updates: n.Updates - before.Updates, Deletes: n.Deletes - before.Deletes}
}

func (n Notifications) total() int64 { return n.Adds + n.Updates + n.Deletes }

// RelistWait says when an informer has finished a relist: its last synced
// resourceVersion has reached MinRV (the list is in the informer's queue)
// and its handler has then been silent for Settle, once Expect
// notifications have come, or for Stall before that.
type RelistWait struct {
	Handler *CountingHandler
	// SyncedRV is the informer's LastSyncResourceVersion.
	SyncedRV func() string
	MinRV    uint64
	Settle   time.Duration
	// Expect is how many notifications the relist should bring (see
	// E2EConfig.RelistNotifications). Until they have come, silence ends
	// the wait only after Stall (if longer than Settle): a library may
	// rebuild its whole cache before its first notification, as client-go
	// v0.37.2 does with AtomicFIFO, and at 100,000 pods that takes longer
	// than Settle. Fewer than Expect is a result, not an error.
	Expect int64
	Stall  time.Duration
	// Poll is how often the counts are read; 0 means 20 ms.
	Poll time.Duration
}

// Wait blocks until the relist is over and returns the moment of its last
// sign of progress (the resourceVersion reaching MinRV, or the last
// notification after it), from which the relist's duration is measured.
func (w RelistWait) Wait(ctx context.Context) (time.Time, error) {
	poll := w.Poll
	if poll <= 0 {
		poll = 20 * time.Millisecond
	}
	tick := time.NewTicker(poll)
	defer tick.Stop()
	var listed bool
	var last time.Time
	first := w.Handler.Counts().total()
	seen := first
	for {
		now := time.Now()
		if n := w.Handler.Counts().total(); n != seen {
			seen, last = n, now
		}
		if !listed && rvAtLeast(w.SyncedRV(), w.MinRV) {
			listed = true
			last = now
		}
		if listed && now.Sub(last) >= w.silence(seen-first) {
			return last, nil
		}
		select {
		case <-ctx.Done():
			return last, fmt.Errorf("waiting for the relist (resourceVersion %q, want %d or newer; listed %t): %w",
				w.SyncedRV(), w.MinRV, listed, ctx.Err())
		case <-tick.C:
		}
	}
}

// RelistStall is the Stall both libraries' e2e children wait with: how
// long the handler may stay silent, before the relist has brought the
// notifications it should, without the relist counting as over.
const RelistStall = 2 * time.Minute

// silence is how long the handler must stay silent, after got
// notifications, for the relist to be over.
func (w RelistWait) silence(got int64) time.Duration {
	if got < w.Expect && w.Stall > w.Settle {
		return w.Stall
	}
	return w.Settle
}

// rvAtLeast reports whether the resourceVersion rv parses to min or more.
func rvAtLeast(rv string, min uint64) bool {
	v, err := strconv.ParseUint(rv, 10, 64)
	return err == nil && v >= min
}
