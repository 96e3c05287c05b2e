package harness

import (
	"runtime"
	"runtime/metrics"

	"github.com/kcache/cache/bench/internal/stats"
)

// The runtime/metrics samples the churn window's GC figures come from.
// The GC CPU time is the runtime's own estimate: the time its mark
// workers and assists ran, plus each stop-the-world pause times
// GOMAXPROCS; sweeping counts as the program's time.
const (
	metricGCCPU    = "/cpu/classes/gc/total:cpu-seconds"
	metricGCCycles = "/gc/cycles/total:gc-cycles"
	metricAllocs   = "/gc/heap/allocs:bytes"
	metricGOGC     = "/gc/gogc:percent"
)

// gcCycleRuns is how many forced GC cycles MeasureGCCycle takes the
// median of.
const gcCycleRuns = 3

// gcCounters are the runtime's cumulative GC counters at one moment.
type gcCounters struct {
	CPU    float64 // GC CPU seconds
	Cycles uint64  // GC cycles completed
	Allocs uint64  // heap bytes allocated
}

// gcMeter reads gcCounters; its samples are made once, so that a read in
// the window allocates nothing.
type gcMeter struct{ samples []metrics.Sample }

func newGCMeter() gcMeter {
	return gcMeter{samples: []metrics.Sample{{Name: metricGCCPU}, {Name: metricGCCycles}, {Name: metricAllocs}}}
}

func (m gcMeter) read() gcCounters {
	metrics.Read(m.samples)
	return gcCounters{
		CPU:    m.samples[0].Value.Float64(),
		Cycles: m.samples[1].Value.Uint64(),
		Allocs: m.samples[2].Value.Uint64(),
	}
}

// setGCWindow records in r what the GC counters moved by from c0 to c1.
func (r *ChurnResult) setGCWindow(c0, c1 gcCounters) {
	r.GCSeconds = c1.CPU - c0.CPU
	r.GCCycles = c1.Cycles - c0.Cycles
	r.AllocBytes = float64(c1.Allocs - c0.Allocs)
}

// GCCycle is what one full GC cycle of the process costs at its current
// heap.
type GCCycle struct {
	// Seconds is the GC CPU time of one forced cycle (the median of
	// several, each measured apart), as the runtime estimates it.
	Seconds float64
	// Live is the live heap the last cycle marked, the whole process's.
	Live uint64
	// GOGC is the GOGC in force; negative when the GC is off.
	GOGC int
}

// MeasureGCCycle forces runs GC cycles (at least one) one after the other
// and returns the median GC CPU time of one, the live heap after them and
// the GOGC in force, which it reads without changing it.
func MeasureGCCycle(runs int) GCCycle {
	m := newGCMeter()
	costs := make([]float64, max(runs, 1))
	for k := range costs {
		before := m.read()
		runtime.GC()
		costs[k] = m.read().CPU - before.CPU
	}
	samples := []metrics.Sample{{Name: metricHeapLive}, {Name: metricGOGC}}
	metrics.Read(samples)
	return GCCycle{
		Seconds: stats.Median(costs),
		Live:    samples[0].Value.Uint64(),
		// The runtime reports an off GC (-1) as that int64 cast to uint64.
		GOGC: int(int64(samples[1].Value.Uint64())),
	}
}

// setGCCycle records c in r.
func (r *ChurnResult) setGCCycle(c GCCycle) {
	r.GCCycleSeconds, r.GCLive, r.GOGC = c.Seconds, float64(c.Live), c.GOGC
}

// AllocPerEvent is the bytes allocated per notification in the window.
func (r ChurnResult) AllocPerEvent() float64 {
	if r.Events == 0 {
		return 0
	}
	return r.AllocBytes / float64(r.Events)
}

// CPUPerEventGCAmortized is the process CPU time per notification, in
// seconds, with the GC time the window happened to hold replaced by the
// GC's steady-state price of what the window allocated. In a steady state
// a GC cycle starts once the program has allocated GOGC% of the live heap
// since the last, so each byte allocated costs GCCycleSeconds /
// (GCLive × GOGC/100):
//
//	(CPUSeconds − GCSeconds)/Events
//	  + GCCycleSeconds / (GCLive × GOGC/100) × AllocBytes/Events
//
// A window shorter than a GC cycle otherwise charges a whole cycle to a
// small heap, whose cycles come often, and none to a large one. It is 0
// without events or without a live heap measured. With the GC off
// (GOGC < 0) allocating costs no GC time; GOGC=0, a cycle on every
// allocation, has no runway to spread a cycle over and is taken alike.
func (r ChurnResult) CPUPerEventGCAmortized() float64 {
	if r.Events == 0 || r.GCLive <= 0 {
		return 0
	}
	events := float64(r.Events)
	perByte := 0.0
	if r.GOGC > 0 {
		perByte = r.GCCycleSeconds / (r.GCLive * float64(r.GOGC) / 100)
	}
	return (r.CPUSeconds-r.GCSeconds)/events + perByte*r.AllocBytes/events
}
