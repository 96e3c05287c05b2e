package harness

import (
	"runtime"
	"runtime/metrics"
	"time"
)

// B times one run of one workload, a small cousin of testing.B that can live
// outside a test binary and lets a workload build its (large) fixture once
// per run. A loop workload writes
//
//	setup()
//	for b.Loop() { op() }
//
// and Loop grows the iteration count until the timer has run for BenchTime.
// A one-shot workload instead brackets its work with StartTimer/StopTimer
// and calls SetN with the number of operations it performed.
//
// Only time with the timer on counts, and only the allocations made while
// it is on: StopTimer/StartTimer read runtime.MemStats, which stops the
// world, so call them around fixture work, not around every operation.
type B struct {
	// BenchTime is how long Loop keeps iterating; at least one iteration
	// always runs.
	BenchTime time.Duration
	// MaxN caps the iterations Loop runs; zero means no cap.
	MaxN int

	n        int
	timerOn  bool
	start    time.Time
	elapsed  time.Duration
	cpu0     time.Duration // process CPU time when the timer last started
	cpu      time.Duration // process CPU time accumulated over timed stretches
	mallocs0 uint64        // Mallocs when the timer last started
	bytes0   uint64        // TotalAlloc when the timer last started
	mallocs  uint64        // mallocs accumulated over timed stretches
	bytes    uint64        // bytes accumulated over timed stretches
	extra    map[string]float64

	// Loop state. Invariant: i <= next while looping.
	looping bool
	i, next int
	// live is the live heap measured when Loop started, after a GC.
	live uint64
}

// NewB returns a B whose Loop runs for benchTime.
func NewB(benchTime time.Duration) *B { return &B{BenchTime: benchTime} }

// StartTimer starts timing; it does nothing when the timer is on.
func (b *B) StartTimer() {
	if b.timerOn {
		return
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.mallocs0, b.bytes0 = ms.Mallocs, ms.TotalAlloc
	b.timerOn = true
	b.cpu0 = processCPU()
	b.start = time.Now()
}

// StopTimer stops timing; it does nothing when the timer is off.
func (b *B) StopTimer() {
	if !b.timerOn {
		return
	}
	b.elapsed += time.Since(b.start)
	b.cpu += processCPU() - b.cpu0
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.mallocs += ms.Mallocs - b.mallocs0
	b.bytes += ms.TotalAlloc - b.bytes0
	b.timerOn = false
}

// ResetTimer forgets the time and allocations measured so far.
func (b *B) ResetTimer() {
	b.elapsed, b.cpu, b.mallocs, b.bytes = 0, 0, 0, 0
	if b.timerOn {
		b.timerOn = false
		b.StartTimer()
	}
}

// SetN records how many operations a one-shot workload performed.
func (b *B) SetN(n int) { b.n = n }

// ReportMetric attaches an extra named figure (for example "events/s") to
// the result.
func (b *B) ReportMetric(name string, v float64) {
	if b.extra == nil {
		b.extra = make(map[string]float64)
	}
	b.extra[name] = v
}

// Elapsed is the timed duration so far.
func (b *B) Elapsed() time.Duration {
	if b.timerOn {
		return b.elapsed + time.Since(b.start)
	}
	return b.elapsed
}

// Loop reports whether the workload should run one more iteration. The
// first call collects garbage and starts the timer; the call that returns
// false stops it and records the iteration count.
func (b *B) Loop() bool {
	if b.i < b.next {
		b.i++
		return true
	}
	return b.loopSlow()
}

// loopSlow starts the loop or, at the end of a batch, decides whether to run
// another, larger one. Batches keep the clock out of the per-op path.
func (b *B) loopSlow() bool {
	if !b.looping {
		b.looping = true
		runtime.GC()
		b.live = liveHeap()
		b.ResetTimer()
		b.StartTimer()
		b.i, b.next = 1, 1
		return true
	}
	elapsed := b.Elapsed()
	capped := b.MaxN > 0 && b.i >= b.MaxN
	if capped || (elapsed >= b.BenchTime && !b.owesCollections(elapsed)) {
		b.StopTimer()
		b.n = b.i
		b.looping = false
		return false
	}
	want := b.moreIterations(elapsed)
	want = min(want+want/5+1, int64(b.i)*100)
	next := b.i + int(max(want, 1))
	if b.MaxN > 0 {
		next = min(next, b.MaxN)
	}
	b.next = next
	b.i++
	return true
}

// The garbage collector runs once per live heap allocated, roughly, and a
// cycle over a big fixture costs as much as hundreds of operations of a
// workload that allocates megabytes. A run that allocated about one live
// heap may or may not contain a cycle, and its time per op then depends on
// that coin toss more than on the library. So a loop that has allocated
// between a quarter of the live heap and gcShare live heaps keeps going
// until it reaches gcShare, paying its share of collections like any
// other; a loop allocating less is too rarely interrupted to matter.
const (
	gcShare = 2
	// gcShareTime bounds that extension, in multiples of BenchTime.
	gcShareTime = 5
)

// owesCollections reports whether the loop must go on to pay its share of
// garbage collections; see gcShare.
func (b *B) owesCollections(elapsed time.Duration) bool {
	if b.live == 0 || elapsed >= gcShareTime*b.BenchTime {
		return false
	}
	allocated := b.allocatedSoFar()
	return allocated >= b.live/4 && allocated < gcShare*b.live
}

// moreIterations estimates the iterations still needed: enough to reach
// BenchTime, or gcShare live heaps of allocation when that is owed.
func (b *B) moreIterations(elapsed time.Duration) int64 {
	if elapsed < b.BenchTime {
		perOp := max(elapsed.Nanoseconds()/int64(b.i), 1)
		return int64(b.BenchTime-elapsed) / perOp
	}
	allocated := b.allocatedSoFar()
	perOp := max(allocated/uint64(b.i), 1)
	return int64((gcShare*b.live - allocated) / perOp)
}

// allocatedSoFar is the bytes allocated in timed stretches up to now.
func (b *B) allocatedSoFar() uint64 {
	if !b.timerOn {
		return b.bytes
	}
	return b.bytes + heapAllocs() - b.bytes0
}

// Result is the outcome of one run.
func (b *B) Result() Result {
	n := max(b.n, 1)
	r := Result{
		N:           b.n,
		NsPerOp:     float64(b.elapsed.Nanoseconds()) / float64(n),
		CPUNsPerOp:  float64(b.cpu.Nanoseconds()) / float64(n),
		AllocsPerOp: float64(b.mallocs) / float64(n),
		BytesPerOp:  float64(b.bytes) / float64(n),
	}
	if len(b.extra) > 0 {
		r.Extra = make(map[string]float64, len(b.extra))
		for k, v := range b.extra {
			r.Extra[k] = v
		}
	}
	return r
}

// Result holds the figures of one run of one workload with one library.
type Result struct {
	N       int
	NsPerOp float64 // wall-clock time
	// CPUNsPerOp is the CPU time of the whole process (every goroutine, the
	// garbage collector included) per op: unlike NsPerOp it barely moves
	// when other processes load the machine. Zero where not measured.
	CPUNsPerOp  float64
	AllocsPerOp float64
	BytesPerOp  float64
	Extra       map[string]float64
}

// heapAllocs is the bytes allocated since the process started, the same
// count StartTimer records.
func heapAllocs() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.TotalAlloc
}

// liveHeap is the heap the last garbage collection found live.
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: metricHeapLive}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}
