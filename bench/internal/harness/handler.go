package harness

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CountingHandler is an event handler (it has the method set of both
// packages' ResourceEventHandler) that counts notifications and closes
// AddsDone and UpdatesDone when the counts reach their targets.
type CountingHandler struct {
	adds, updates, deletes atomic.Int64

	addTarget, updateTarget int64
	addsDone, updatesDone   chan struct{}

	// finalRV and finalTarget: finalsDone is closed once finalTarget
	// updates to objects at resourceVersion finalRV or newer were seen.
	finalRV     uint64
	finalTarget int64
	finals      atomic.Int64
	finalsDone  chan struct{}

	// progress, when not nil, gets a signal (dropped if one is pending)
	// every progressEvery updates, so that a feeder can wait for the
	// informer to catch up without waking for every event.
	progress      chan struct{}
	progressEvery int64

	// observe, when not nil, is called after each notification is
	// counted.
	observe func()
}

// NewCountingHandler returns a handler expecting addTarget adds and
// updateTarget updates.
func NewCountingHandler(addTarget, updateTarget int) *CountingHandler {
	h := &CountingHandler{
		addTarget:    int64(addTarget),
		updateTarget: int64(updateTarget),
		addsDone:     make(chan struct{}),
		updatesDone:  make(chan struct{}),
	}
	if addTarget == 0 {
		close(h.addsDone)
	}
	if updateTarget == 0 {
		close(h.updatesDone)
	}
	return h
}

// OnAdd counts an add.
func (h *CountingHandler) OnAdd(_ interface{}, _ bool) {
	if h.adds.Add(1) == h.addTarget {
		close(h.addsDone)
	}
	if h.observe != nil {
		h.observe()
	}
}

// ObserveEach makes the handler call f after it counted each notification
// (e.g. HeapPeak.Observe); call it before the handler is registered.
func (h *CountingHandler) ObserveEach(f func()) { h.observe = f }

// ExpectFinal makes WaitFinal wait for n updates whose new object is at
// resourceVersion minRV or newer: the last version of each of n objects.
// Unlike an update count this target is reached even when a library
// merged a handler's pending updates (a merged notification carries the
// newest object), so that CheckDelivered can then tell the shortfall
// instead of a wait timing out. Call it before the handler is registered.
func (h *CountingHandler) ExpectFinal(minRV uint64, n int) {
	h.finalRV, h.finalTarget, h.finalsDone = minRV, int64(n), make(chan struct{})
}

// WaitFinal waits for the target set by ExpectFinal. Once it returned, the
// counts include the update that reached the target and every one before
// it, so CheckDelivered can be called at once.
func (h *CountingHandler) WaitFinal(ctx context.Context) error {
	return h.wait(ctx, h.finalsDone, "final versions")
}

func (h *CountingHandler) countFinal(obj interface{}) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return
	}
	rv, err := strconv.ParseUint(m.GetResourceVersion(), 10, 64)
	if err == nil && rv >= h.finalRV && h.finals.Add(1) == h.finalTarget {
		close(h.finalsDone)
	}
}

// SignalProgress makes the handler signal ch every n updates; call it
// before the handler is registered.
func (h *CountingHandler) SignalProgress(ch chan struct{}, n int) {
	h.progress, h.progressEvery = ch, int64(n)
}

// OnUpdate counts an update. It counts it before it signals anything, and
// signals the final versions last: a waiter woken by WaitFinal reads every
// count of this handler's notifications, this one included.
func (h *CountingHandler) OnUpdate(_, newObj interface{}) {
	n := h.updates.Add(1)
	if n == h.updateTarget {
		close(h.updatesDone)
	}
	if h.progress != nil && n%h.progressEvery == 0 {
		select {
		case h.progress <- struct{}{}:
		default:
		}
	}
	if h.finalsDone != nil {
		h.countFinal(newObj)
	}
	if h.observe != nil {
		h.observe()
	}
}

// OnDelete counts a delete.
func (h *CountingHandler) OnDelete(_ interface{}) {
	h.deletes.Add(1)
	if h.observe != nil {
		h.observe()
	}
}

// Updates is the number of updates seen so far.
func (h *CountingHandler) Updates() int64 { return h.updates.Load() }

// Delivered is the number of notifications (adds, updates and deletes)
// seen so far.
func (h *CountingHandler) Delivered() int64 {
	return h.adds.Load() + h.updates.Load() + h.deletes.Load()
}

// CheckDelivered returns an error unless the handler saw exactly adds adds,
// updates updates and no delete: every notification a library promised,
// none merged away, none repeated. Call it once no more can come.
func (h *CountingHandler) CheckDelivered(adds, updates int) error {
	a, u, d := h.adds.Load(), h.updates.Load(), h.deletes.Load()
	if a == int64(adds) && u == int64(updates) && d == 0 {
		return nil
	}
	return fmt.Errorf("received %d of %d notifications: %d adds (want %d), %d updates (want %d), %d deletes (want 0)",
		a+u+d, adds+updates, a, adds, u, updates, d)
}

// WaitAdds waits until the add target is reached.
func (h *CountingHandler) WaitAdds(ctx context.Context) error {
	return h.wait(ctx, h.addsDone, "adds")
}

// WaitUpdates waits until the update target is reached.
func (h *CountingHandler) WaitUpdates(ctx context.Context) error {
	return h.wait(ctx, h.updatesDone, "updates")
}

func (h *CountingHandler) wait(ctx context.Context, done <-chan struct{}, what string) error {
	select {
	case <-done: // a reached target wins over an ended context
		return nil
	default:
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for %s: saw %d adds (want %d), %d updates (want %d), %d final versions (want %d), %d deletes: %w",
			what, h.adds.Load(), h.addTarget, h.updates.Load(), h.updateTarget, h.finals.Load(), h.finalTarget,
			h.deletes.Load(), ctx.Err())
	}
}
