package harness

import (
	"runtime"
	"testing"
	"time"
)

// CPUTimer follows a testing.B's timer with the process CPU time, which
// testing.B does not measure: a loop workload starts it with StartLoop just
// before its `for b.Loop()`, a one-shot workload with StartCPUTimer where
// its timed burst begins; either stops and restarts the benchmark timer
// through it, and calls Report at the end.
type CPUTimer struct {
	b     *testing.B
	start time.Duration // process CPU time when the clock last started
	total time.Duration // CPU time over the timed stretches so far
	on    bool
}

// StartCPUTimer resets b's timer, starts it if it is stopped, and starts
// the CPU clock.
func StartCPUTimer(b *testing.B) *CPUTimer {
	b.ResetTimer()
	t := &CPUTimer{b: b}
	t.StartTimer()
	return t
}

// StartLoop collects garbage and starts a CPUTimer. testing.B collects
// garbage before the workload builds its fixture; collecting again once it
// is built keeps the fixture's garbage from being collected on the loop's
// time.
func StartLoop(b *testing.B) *CPUTimer {
	runtime.GC()
	return StartCPUTimer(b)
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
