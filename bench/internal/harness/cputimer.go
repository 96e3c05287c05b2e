package harness

import (
	"testing"
	"time"
)

// CPUTimer follows a testing.B's timer with the process CPU time, which
// testing.B does not measure: start it just before the timed loop (or, in a
// one-shot workload, right after ResetTimer), stop and restart the
// benchmark timer through it, and Report at the end.
type CPUTimer struct {
	b     *testing.B
	start time.Duration // process CPU time when the clock last started
	total time.Duration // CPU time over the timed stretches so far
	on    bool
}

// StartCPUTimer starts b's timer, if it is stopped, and the CPU clock.
func StartCPUTimer(b *testing.B) *CPUTimer {
	t := &CPUTimer{b: b}
	t.StartTimer()
	return t
}

// StopTimer stops b's timer and the CPU clock.
func (t *CPUTimer) StopTimer() {
	t.b.StopTimer()
	if t.on {
		t.total += processCPU() - t.start
		t.on = false
	}
}

// StartTimer restarts the CPU clock and b's timer.
func (t *CPUTimer) StartTimer() {
	if !t.on {
		t.start, t.on = processCPU(), true
	}
	t.b.StartTimer()
}

// Report stops the clock and reports the CPU time per op over ops
// operations as UnitCPU.
func (t *CPUTimer) Report(ops int) {
	if t.on {
		t.total += processCPU() - t.start
		t.on = false
	}
	t.b.ReportMetric(float64(t.total.Nanoseconds())/float64(max(ops, 1)), UnitCPU)
}
