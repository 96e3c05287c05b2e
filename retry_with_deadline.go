package cache

import (
	"sync"
	"time"

	clockpkg "k8s.io/utils/clock"
)

// RetryWithDeadline decides whether a run of failures is still worth
// retrying. Report each error with After; ShouldRetry then says yes while
// the current run of retryable errors has lasted no longer than the
// maximum retry duration.
//
// A run starts at the first retryable error and ends when no retryable
// error was reported for the minimum reset period; the next retryable error
// then starts a new run. Errors that are not retryable are ignored.
type RetryWithDeadline interface {
	// After records one failed attempt and its error.
	After(error)
	// ShouldRetry reports whether to try again. Once it says no, the run
	// is forgotten, so the next retryable error starts a new one.
	ShouldRetry() bool
}

// NewRetryWithDeadline returns a RetryWithDeadline that retries runs of
// errors accepted by isRetryable for up to maxRetryDuration, forgetting a
// run after minResetPeriod without a retryable error. A maxRetryDuration of
// zero or less never retries. A nil isRetryable treats no error as
// retryable; a nil clock means the real clock. The result is safe for
// concurrent use.
func NewRetryWithDeadline(maxRetryDuration, minResetPeriod time.Duration, isRetryable func(error) bool, clock clockpkg.Clock) RetryWithDeadline {
	if isRetryable == nil {
		isRetryable = func(error) bool { return false }
	}
	if clock == nil {
		clock = clockpkg.RealClock{}
	}
	return &retryWithDeadline{
		maxRetryDuration: maxRetryDuration,
		minResetPeriod:   minResetPeriod,
		isRetryable:      isRetryable,
		clock:            clock,
	}
}

// retryWithDeadline is the RetryWithDeadline of NewRetryWithDeadline.
type retryWithDeadline struct {
	// mu guards runStart and lastError.
	mu sync.Mutex
	// runStart is when the current run of retryable errors began; zero
	// when there is no run.
	runStart time.Time
	// lastError is when the latest retryable error of the run was
	// reported; zero when there is no run.
	lastError time.Time

	maxRetryDuration time.Duration
	minResetPeriod   time.Duration
	isRetryable      func(error) bool
	clock            clockpkg.Clock
}

// After records err; only retryable errors count. isRetryable runs before
// the lock is taken.
func (r *retryWithDeadline) After(err error) {
	if !r.isRetryable(err) {
		return
	}
	now := r.clock.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if now.Sub(r.lastError) >= r.minResetPeriod {
		r.runStart = time.Time{}
	}
	if r.runStart.IsZero() {
		r.runStart = now
	}
	r.lastError = now
}

// ShouldRetry reports whether the current run is within the deadline, and
// forgets the run when it is not.
func (r *retryWithDeadline) ShouldRetry() bool {
	if r.maxRetryDuration <= 0 {
		return false
	}
	now := r.clock.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if now.Sub(r.runStart) <= r.maxRetryDuration {
		return true
	}
	r.runStart, r.lastError = time.Time{}, time.Time{}
	return false
}
