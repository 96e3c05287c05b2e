package cache

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	testingclock "k8s.io/utils/clock/testing"
)

var (
	errRetryTransient = errors.New("retryable")
	errRetryFatal     = errors.New("fatal")
)

// retryStep advances the clock, optionally reports an error, then asks
// ShouldRetry.
type retryStep struct {
	advance time.Duration
	err     error // nil: report nothing
}

func TestRetryWithDeadline_RetriesARunUntilItsDeadline(t *testing.T) {
	const maxRetry, reset = 10 * time.Second, 3 * time.Second
	cases := map[string]struct {
		maxRetry time.Duration
		steps    []retryStep
		want     []bool
	}{
		"no error yet means no retry": {
			maxRetry: maxRetry,
			steps:    []retryStep{{}},
			want:     []bool{false},
		},
		"retries within the deadline of a run": {
			maxRetry: maxRetry,
			steps: []retryStep{
				{err: errRetryTransient},
				{advance: 2 * time.Second, err: errRetryTransient},
				{advance: 2 * time.Second, err: errRetryTransient},
				{advance: 2 * time.Second, err: errRetryTransient},
				{advance: 2 * time.Second, err: errRetryTransient},
				{advance: 2 * time.Second, err: errRetryTransient}, // exactly 10s: still in
				{advance: 2 * time.Second, err: errRetryTransient}, // 12s: out
			},
			want: []bool{true, true, true, true, true, true, false},
		},
		"after giving up the next error starts a new run": {
			maxRetry: maxRetry,
			steps: []retryStep{
				{err: errRetryTransient},
				{advance: 2 * time.Second, err: errRetryTransient},
				{advance: 2 * time.Second, err: errRetryTransient},
				{advance: 2 * time.Second, err: errRetryTransient},
				{advance: 2 * time.Second, err: errRetryTransient},
				{advance: 2 * time.Second, err: errRetryTransient},
				{advance: 2 * time.Second, err: errRetryTransient},
				{advance: 1 * time.Second, err: errRetryTransient},
			},
			want: []bool{true, true, true, true, true, true, false, true},
		},
		"a quiet period resets the run": {
			maxRetry: maxRetry,
			steps: []retryStep{
				{err: errRetryTransient},
				{advance: 8 * time.Second, err: errRetryTransient}, // 8s gap >= reset: new run
				{advance: 2 * time.Second, err: errRetryTransient},
				{advance: 2 * time.Second, err: errRetryTransient},
				{advance: 2 * time.Second, err: errRetryTransient},
			},
			want: []bool{true, true, true, true, true},
		},
		"non-retryable errors are ignored": {
			maxRetry: maxRetry,
			steps: []retryStep{
				{err: errRetryFatal},
				{err: errRetryTransient},
				{advance: 11 * time.Second, err: errRetryFatal}, // does not refresh the run
			},
			want: []bool{false, true, false},
		},
		"zero maximum never retries": {
			maxRetry: 0,
			steps:    []retryStep{{err: errRetryTransient}},
			want:     []bool{false},
		},
		"negative maximum never retries": {
			maxRetry: -time.Second,
			steps:    []retryStep{{err: errRetryTransient}},
			want:     []bool{false},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			clock := testingclock.NewFakeClock(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
			isRetryable := func(err error) bool { return errors.Is(err, errRetryTransient) }
			r := NewRetryWithDeadline(tc.maxRetry, reset, isRetryable, clock)
			var got []bool
			for _, step := range tc.steps {
				clock.Step(step.advance)
				if step.err != nil {
					r.After(step.err)
				}
				got = append(got, r.ShouldRetry())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ShouldRetry answers (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRetryWithDeadline_NilArgumentsHaveSafeDefaults(t *testing.T) {
	r := NewRetryWithDeadline(time.Hour, time.Minute, nil, nil)
	r.After(errRetryTransient)
	if r.ShouldRetry() {
		t.Error("with a nil isRetryable no error should start a run")
	}

	r = NewRetryWithDeadline(time.Hour, time.Minute, func(error) bool { return true }, nil)
	r.After(errRetryTransient)
	if !r.ShouldRetry() {
		t.Error("with the real clock a fresh run should be retried")
	}
}
