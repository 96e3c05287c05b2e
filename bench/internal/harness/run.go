package harness

import (
	"flag"
	"fmt"
	"runtime/debug"
	"strconv"
	"sync"
	"testing"
)

// Units a workload reports with testing.B.ReportMetric that Run folds into
// the Result instead of leaving them among the extra figures.
const (
	// UnitEvents is the number of events a one-shot workload timed: its
	// operations, which time, allocations and bytes are divided by.
	UnitEvents = "events"
	// UnitCPU is the process CPU time per operation; see CPUTimer.
	UnitCPU = "cpu-ns/op"
)

// benchMu serialises Run: testing.Benchmark reads its benchmark time from
// the process-wide -test.benchtime flag, which Run sets for each workload.
var benchMu sync.Mutex

var initTesting sync.Once

// Run measures one run of w with testing.Benchmark. A loop workload (the
// micro groups) iterates for Sizes.BenchTime, or exactly Sizes.Iterations
// times when that is set; any other workload runs once and reports its
// operation count as UnitEvents. An error or panic of the workload comes
// back as the error, with no result.
func Run(w Workload, sizes Sizes, fx *Fixture) (Result, error) {
	benchMu.Lock()
	defer benchMu.Unlock()
	initTesting.Do(testing.Init)
	prev := flag.Lookup("test.benchtime").Value.String()
	if err := flag.Set("test.benchtime", benchTime(w.Group, sizes)); err != nil {
		return Result{}, fmt.Errorf("set the benchmark time: %w", err)
	}
	// A test binary's own benchmarks keep the -test.benchtime they were given.
	defer func() { _ = flag.Set("test.benchtime", prev) }()
	var runErr error
	r := testing.Benchmark(func(b *testing.B) {
		defer func() {
			if p := recover(); p != nil {
				runErr = fmt.Errorf("panic: %v\n%s", p, debug.Stack())
				b.FailNow()
			}
		}()
		if err := w.Run(b, fx); err != nil {
			runErr = err
			b.FailNow()
		}
	})
	if runErr != nil {
		return Result{}, runErr
	}
	if r.N == 0 {
		return Result{}, fmt.Errorf("%s: testing.Benchmark reported a failure", w.Name)
	}
	return resultOf(r), nil
}

// benchTime is the -test.benchtime value for a workload of group g.
func benchTime(g Group, sizes Sizes) string {
	switch {
	case !g.Micro():
		return "1x"
	case sizes.Iterations > 0:
		return strconv.Itoa(sizes.Iterations) + "x"
	}
	return sizes.BenchTime.String()
}

// resultOf turns a testing.BenchmarkResult into per-operation figures.
func resultOf(r testing.BenchmarkResult) Result {
	ops := float64(r.N)
	if v, ok := r.Extra[UnitEvents]; ok {
		ops = v
	}
	ops = max(ops, 1)
	res := Result{
		N:           int(ops),
		NsPerOp:     float64(r.T.Nanoseconds()) / ops,
		CPUNsPerOp:  r.Extra[UnitCPU],
		AllocsPerOp: float64(r.MemAllocs) / ops,
		BytesPerOp:  float64(r.MemBytes) / ops,
	}
	for unit, v := range r.Extra {
		if unit == UnitEvents || unit == UnitCPU {
			continue
		}
		if res.Extra == nil {
			res.Extra = make(map[string]float64)
		}
		res.Extra[unit] = v
	}
	return res
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
