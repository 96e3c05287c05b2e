package launcher

import (
	"context"
	"fmt"
	"log/slog"
	"time"
)

// StepError reports which startup step failed, and after how long.
type StepError struct {
	Step    string
	Elapsed time.Duration
	Err     error
}

// Error names the step, its duration and the cause.
func (e *StepError) Error() string {
	return fmt.Sprintf("step %q failed after %v: %v", e.Step, e.Elapsed.Round(time.Millisecond), e.Err)
}

// Unwrap returns the cause.
func (e *StepError) Unwrap() error { return e.Err }

// runStep runs fn with a context limited to timeout (no limit when timeout is
// 0) and wraps a failure in a *StepError. fn must return when its context
// ends; every step here does, which is what keeps startup from hanging.
func runStep(ctx context.Context, log *slog.Logger, name string, timeout time.Duration, fn func(context.Context) error) error {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, timeout, fmt.Errorf("timed out after %v", timeout))
		defer cancel()
	}
	began := time.Now()
	if ctx.Err() != nil { // do not even begin once startup was called off
		return &StepError{Step: name, Err: context.Cause(ctx)}
	}
	log.Info("step started", "step", name)
	if err := fn(ctx); err != nil {
		return &StepError{Step: name, Elapsed: time.Since(began), Err: err}
	}
	log.Info("step done", "step", name, "took", time.Since(began).Round(time.Millisecond))
	return nil
}
