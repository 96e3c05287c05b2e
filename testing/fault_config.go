package framework

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/clock"
)

// FaultConfig says how often a FaultyListerWatcher injects each kind of
// fault (see FaultKind). Every probability is in [0, 1]; zero, the
// default, never injects that kind. Call faults are drawn per List or
// Watch call, in the order gone, internal error, timeout, and the first
// one drawn wins; stream faults are drawn per event.
type FaultConfig struct {
	// Rand drives every decision; seed it to repeat a run (as far as the
	// scheduling of concurrent callers allows). Nil uses a fixed seed. The
	// FaultyListerWatcher takes it over: do not use it elsewhere.
	Rand *rand.Rand
	// Clock times delayed events; nil is the real clock.
	Clock clock.Clock

	// ListGone is the probability that a List without a continue token
	// fails with 410.
	ListGone float64
	// ContinueGone is the probability that a List with a continue token
	// fails with 410.
	ContinueGone float64
	// ListInternalError is the probability that a List fails with 500.
	ListInternalError float64
	// ListTimeout is the probability that a List times out.
	ListTimeout float64

	// WatchGone is the probability that a Watch fails with 410.
	WatchGone float64
	// WatchInternalError is the probability that a Watch fails with 500.
	WatchInternalError float64
	// WatchTimeout is the probability that a Watch times out.
	WatchTimeout float64

	// StreamClosed is the probability that an opened stream closes before
	// its first event.
	StreamClosed float64
	// StreamDropped is the probability, per event, that the stream breaks
	// instead of delivering it.
	StreamDropped float64
	// ErrorEvent is the probability, per event, that an ERROR event is
	// sent instead of it and the stream closes.
	ErrorEvent float64
	// Bookmark is the probability, per event, that a bookmark follows it.
	Bookmark float64
	// Delay is the probability, per event, that it is held back.
	Delay float64
	// MaxDelay is the longest an event is held back; it must be positive
	// when Delay is.
	MaxDelay time.Duration

	// ListDelay is how long every List call that is not failed by a fault
	// takes to answer, on Clock: a slow server, under which paging shows.
	// Unlike the faults it is not drawn at random; a context that ends
	// first fails the call with the context's error.
	ListDelay time.Duration
}

// probability returns the configured probability of k.
func (c *FaultConfig) probability(k FaultKind) float64 {
	switch k {
	case FaultListGone:
		return c.ListGone
	case FaultContinueGone:
		return c.ContinueGone
	case FaultListInternalError:
		return c.ListInternalError
	case FaultListTimeout:
		return c.ListTimeout
	case FaultWatchGone:
		return c.WatchGone
	case FaultWatchInternalError:
		return c.WatchInternalError
	case FaultWatchTimeout:
		return c.WatchTimeout
	case FaultStreamClosed:
		return c.StreamClosed
	case FaultStreamDropped:
		return c.StreamDropped
	case FaultErrorEvent:
		return c.ErrorEvent
	case FaultBookmark:
		return c.Bookmark
	case FaultDelay:
		return c.Delay
	}
	return 0
}

// Validate reports a probability outside [0, 1], delays without a maximum,
// or a negative list delay.
func (c FaultConfig) Validate() error {
	var errs []error
	for k := range NumFaultKinds {
		if p := c.probability(k); !(p >= 0 && p <= 1) {
			errs = append(errs, fmt.Errorf("fault config: probability of %s is %v, want a value in [0, 1]", k, p))
		}
	}
	if c.ListDelay < 0 {
		errs = append(errs, fmt.Errorf("fault config: ListDelay is %v, want 0 or more", c.ListDelay))
	}
	if c.Delay > 0 && c.MaxDelay <= 0 {
		errs = append(errs, fmt.Errorf("fault config: Delay is %v but MaxDelay is %v, want a positive maximum", c.Delay, c.MaxDelay))
	}
	return errors.Join(errs...)
}

// faultError is the API error of an injected call fault of kind k.
func faultError(k FaultKind, verb string) error {
	switch k {
	case FaultListGone, FaultContinueGone, FaultWatchGone:
		return apierrors.NewResourceExpired(fmt.Sprintf("injected fault: %s: resource version too old", verb))
	case FaultListInternalError, FaultWatchInternalError:
		return apierrors.NewInternalError(fmt.Errorf("injected fault: %s failed", verb))
	default:
		return apierrors.NewTimeoutError(fmt.Sprintf("injected fault: %s timed out", verb), 1)
	}
}
