package cache

import (
	"time"

	"k8s.io/utils/clock"
)

// warpClock is a real clock that runs factor times faster: Now advances
// factor times as fast as the wall clock, and every timer, ticker and
// sleep lasts 1/factor of what is asked. Everything measured with it stays
// consistent (a 30s backoff ends when Now has moved 30s), so the soak test
// can run an informer's backoffs, resyncs and timeouts at high speed
// without a fake clock that someone has to step.
type warpClock struct {
	base   time.Time
	factor time.Duration
}

var _ clock.WithTicker = warpClock{}

func newWarpClock(factor int) warpClock {
	return warpClock{base: time.Now(), factor: time.Duration(factor)}
}

// real converts a warped duration into wall-clock time; positive durations
// stay positive.
func (c warpClock) real(d time.Duration) time.Duration {
	if d <= 0 {
		return d
	}
	return max(d/c.factor, 1)
}

func (c warpClock) Now() time.Time { return c.base.Add(time.Since(c.base) * c.factor) }

func (c warpClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

func (c warpClock) After(d time.Duration) <-chan time.Time { return time.After(c.real(d)) }

func (c warpClock) NewTimer(d time.Duration) clock.Timer {
	return warpTimer{t: time.NewTimer(c.real(d)), c: c}
}

func (c warpClock) Sleep(d time.Duration) { time.Sleep(c.real(d)) }

func (c warpClock) Tick(d time.Duration) <-chan time.Time { return time.Tick(c.real(d)) }

func (c warpClock) NewTicker(d time.Duration) clock.Ticker {
	return warpTicker{t: time.NewTicker(c.real(d))}
}

type warpTimer struct {
	t *time.Timer
	c warpClock
}

func (w warpTimer) C() <-chan time.Time        { return w.t.C }
func (w warpTimer) Stop() bool                 { return w.t.Stop() }
func (w warpTimer) Reset(d time.Duration) bool { return w.t.Reset(w.c.real(d)) }

type warpTicker struct{ t *time.Ticker }

func (w warpTicker) C() <-chan time.Time { return w.t.C }
func (w warpTicker) Stop()               { w.t.Stop() }
