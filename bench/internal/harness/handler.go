package harness

import (
	"context"
	"fmt"
	"sync/atomic"
)

// CountingHandler is an event handler (it has the method set of both
// packages' ResourceEventHandler) that counts notifications and closes
// AddsDone and UpdatesDone when the counts reach their targets.
type CountingHandler struct {
	adds, updates, deletes atomic.Int64

	addTarget, updateTarget int64
	addsDone, updatesDone   chan struct{}

	// progress, when not nil, gets a signal (dropped if one is pending)
	// every progressEvery updates, so that a feeder can wait for the
	// informer to catch up without waking for every event.
	progress      chan struct{}
	progressEvery int64
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
}

// SignalProgress makes the handler signal ch every n updates; call it
// before the handler is registered.
func (h *CountingHandler) SignalProgress(ch chan struct{}, n int) {
	h.progress, h.progressEvery = ch, int64(n)
}

// OnUpdate counts an update.
func (h *CountingHandler) OnUpdate(_, _ interface{}) {
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
}

// OnDelete counts a delete.
func (h *CountingHandler) OnDelete(_ interface{}) { h.deletes.Add(1) }

// Updates is the number of updates seen so far.
func (h *CountingHandler) Updates() int64 { return h.updates.Load() }

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
		return fmt.Errorf("waiting for %s: saw %d adds (want %d), %d updates (want %d), %d deletes: %w",
			what, h.adds.Load(), h.addTarget, h.updates.Load(), h.updateTarget, h.deletes.Load(), ctx.Err())
	}
}
