package cache

import (
	"context"
	"fmt"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
)

// This file runs a Reflector: the state machine that goes from listing (or
// a streaming list) to watching, backs off after failures and starts each
// cycle over. It stands above the steps it drives: stepList and
// stepWatchList (reflector_list.go) and stepWatch (reflector_watch.go).

// Run lists and watches until stopCh is closed, backing off after each cycle
// that ends. Prefer RunWithContext.
func (r *Reflector) Run(stopCh <-chan struct{}) {
	r.RunWithContext(wait.ContextForChannel(stopCh))
}

// RunWithContext lists and watches until ctx is canceled. Each error that
// ends a cycle goes to the watch error handler; each new cycle waits for the
// backoff first. It returns once every goroutine it started has ended, save
// a list call that ignores its context: that one is left to return on its
// own, and its result is dropped.
func (r *Reflector) RunWithContext(ctx context.Context) {
	logger := klog.FromContext(ctx)
	logger.V(3).Info("Starting reflector", "type", r.typeDescription, "resyncPeriod", r.resyncPeriod, "reflector", r.name)
	_ = r.drive(ctx, false)
	logger.V(3).Info("Stopping reflector", "type", r.typeDescription, "resyncPeriod", r.resyncPeriod, "reflector", r.name)
}

// ListAndWatch runs one cycle until stopCh is closed. Prefer
// ListAndWatchWithContext.
func (r *Reflector) ListAndWatch(stopCh <-chan struct{}) error {
	return r.ListAndWatchWithContext(wait.ContextForChannel(stopCh))
}

// ListAndWatchWithContext runs one cycle: list (or stream the list), replace
// the store's content, then watch, reopening the watch while that makes
// sense. It returns the error that kept it from listing or from starting a
// watch, and nil when ctx is canceled or when the watch ended in a way that
// calls for a relist.
func (r *Reflector) ListAndWatchWithContext(ctx context.Context) error {
	return r.drive(ctx, true)
}

// drive runs the state machine from the start of a cycle until it stops:
// when ctx is canceled or, with singleCycle, when the cycle ends. It returns
// the error that ended a single cycle.
func (r *Reflector) drive(ctx context.Context, singleCycle bool) error {
	logger := klog.FromContext(ctx)
	m := newReflectorMachine(r.useWatchList, singleCycle)
	c := r.newCycle()
	defer func() { c.finish() }()
	for m.state != reflectorStopped {
		var res stepResult
		if singleCycle {
			res = r.step(ctx, m.state, c)
		} else {
			res = r.guardedStep(ctx, m.state, c)
		}
		if ctx.Err() != nil {
			// Whatever failed as the context ended failed because of it.
			res = stepResult{outcome: outcomeCanceled}
		}
		prev := m.state
		m = m.next(res.outcome)
		logger.V(5).Info("Reflector changed state", "reflector", r.name, "from", prev, "to", m.state, "reason", res.reason)
		cycleDone := res.outcome == outcomeCycleDone || res.outcome == outcomeRelistNow
		if m.state == reflectorStopped && res.outcome != outcomeCanceled && !cycleDone {
			logger.Error(nil, "Reflector stopped: its state cannot produce this outcome", "reflector", r.name, "state", prev, "outcome", res.outcome)
		}
		if !cycleDone {
			continue
		}
		c.finish()
		if singleCycle {
			return res.err
		}
		if res.err != nil {
			r.guardedReportError(ctx, res.err)
		}
		c = r.newCycle()
	}
	return nil
}

// step does the work of one state and says how it went.
func (r *Reflector) step(ctx context.Context, s reflectorState, c *listWatchCycle) stepResult {
	if ctx.Err() != nil {
		return stepResult{outcome: outcomeCanceled}
	}
	if (s == reflectorListing || s == reflectorWatchListing) && !c.announced {
		c.announced = true
		klog.FromContext(ctx).V(3).Info("Listing and watching", "type", r.typeDescription, "reflector", r.name)
	}
	switch s {
	case reflectorListing:
		return r.stepList(ctx)
	case reflectorWatchListing:
		return r.stepWatchList(ctx, c)
	case reflectorWatching:
		r.ensureResyncLoop(ctx, c)
		return r.stepWatch(ctx, c)
	case reflectorBackingOff:
		return r.stepBackOff(ctx)
	default:
		return stepResult{outcome: outcomeCanceled}
	}
}

// reportError hands err to the watch error handler.
func (r *Reflector) reportError(ctx context.Context, err error) {
	r.watchErrorHandler(ctx, r, err)
}

// guardedStep is step for Run: as client-go's wait.BackoffUntil does
// around each list-and-watch cycle, it runs under
// utilruntime.HandleCrashWithContext, which logs "Observed a panic", runs
// utilruntime.PanicHandlers and, with utilruntime.ReallyCrash (the
// default), panics again. With ReallyCrash false a panic ends the cycle
// without an error, and the next one starts after the backoff.
func (r *Reflector) guardedStep(ctx context.Context, s reflectorState, c *listWatchCycle) (res stepResult) {
	crashed := true
	defer func() {
		if crashed {
			res = stepResult{outcome: outcomeCycleDone, reason: "panic"}
		}
	}()
	defer utilruntime.HandleCrashWithContext(ctx)
	res = r.step(ctx, s, c)
	crashed = false
	return res
}

// guardedReportError is reportError for Run, under
// utilruntime.HandleCrashWithContext like the rest of a cycle.
func (r *Reflector) guardedReportError(ctx context.Context, err error) {
	defer utilruntime.HandleCrashWithContext(ctx)
	r.reportError(ctx, err)
}

// stepBackOff is the backingOff state: wait for the next backoff delay.
func (r *Reflector) stepBackOff(ctx context.Context) stepResult {
	d := r.delay()
	klog.FromContext(ctx).V(4).Info("Reflector backing off", "reflector", r.name, "delay", d)
	t := r.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return stepResult{outcome: outcomeCanceled}
	case <-t.C():
		return stepResult{outcome: outcomeWaited}
	}
}

// reflectorState names what a Reflector is doing.
type reflectorState uint8

const (
	// reflectorListing: a (paginated) LIST fills the store.
	reflectorListing reflectorState = iota
	// reflectorWatchListing: a streaming list fills the store, and its
	// stream is kept for watching.
	reflectorWatchListing
	// reflectorWatching: watch events are applied to the store.
	reflectorWatching
	// reflectorBackingOff: waiting before trying again.
	reflectorBackingOff
	// reflectorStopped: the run is over.
	reflectorStopped
)

// String returns the state's name, as logged.
func (s reflectorState) String() string {
	switch s {
	case reflectorListing:
		return "listing"
	case reflectorWatchListing:
		return "watchListing"
	case reflectorWatching:
		return "watching"
	case reflectorBackingOff:
		return "backingOff"
	case reflectorStopped:
		return "stopped"
	}
	return fmt.Sprintf("reflectorState(%d)", uint8(s))
}

// reflectorMachine is the Reflector's position in its state machine.
type reflectorMachine struct {
	state reflectorState
	// resume is, while backingOff, the state to go back to.
	resume reflectorState
	// entry is the state a cycle starts in: watchListing when streaming
	// lists are used, else listing.
	entry reflectorState
	// singleCycle stops the machine at the end of the first cycle
	// (ListAndWatch) instead of backing off into the next (Run).
	singleCycle bool
}

// newReflectorMachine returns a machine at the start of a cycle.
func newReflectorMachine(useWatchList, singleCycle bool) reflectorMachine {
	entry := reflectorListing
	if useWatchList {
		entry = reflectorWatchListing
	}
	return reflectorMachine{state: entry, entry: entry, singleCycle: singleCycle}
}

// next is the transition function: the machine after the current state's
// work ended with o. It is total: an outcome a state cannot produce stops
// the machine.
func (m reflectorMachine) next(o stepOutcome) reflectorMachine {
	to := func(s reflectorState) reflectorMachine {
		m.state, m.resume = s, 0
		return m
	}
	backOffThen := func(s reflectorState) reflectorMachine {
		m.state, m.resume = reflectorBackingOff, s
		return m
	}
	if o == outcomeCanceled || m.state == reflectorStopped {
		return to(reflectorStopped)
	}
	if o == outcomeCycleDone || o == outcomeRelistNow {
		switch {
		case m.singleCycle:
			return to(reflectorStopped)
		case o == outcomeRelistNow:
			return to(m.entry)
		}
		return backOffThen(m.entry)
	}
	switch m.state {
	case reflectorListing, reflectorWatchListing, reflectorWatching:
		switch {
		case o == outcomeSynced && m.state != reflectorWatching:
			return to(reflectorWatching)
		case o == outcomeFallBackToList && m.state == reflectorWatchListing:
			return to(reflectorListing)
		case o == outcomeRetryNow:
			return to(m.state)
		case o == outcomeRetryLater:
			return backOffThen(m.state)
		}
	case reflectorBackingOff:
		if o == outcomeWaited {
			return to(m.resume)
		}
	}
	return to(reflectorStopped)
}
