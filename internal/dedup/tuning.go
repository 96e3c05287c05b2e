package dedup

import "time"

// tunables are the package's tuning constants, in one place. Each field's
// comment names the benchmark that chose its value; tuning_bench_test.go
// has, for each, a benchmark with one sub-benchmark per value tried
// (BenchmarkTuning_*), which shows what changing it costs. Benchmark
// figures live in docs/ and bench/results/, not here.
type tunables struct {
	// siteTrial, siteMinHitRate and siteMaxBackoff rule the sharing trial of
	// a position: after siteTrial lookups, a position whose lookups found
	// an equal value less than once in siteMinHitRate is no longer looked
	// up; it is tried again after skipping siteTrial values, then twice,
	// four times as many and so on, up to 1<<siteMaxBackoff times. Chosen
	// with make bench-e2e's heap per cached pod (and, for the backoff, on
	// pods dumped from its server, measured offline); BenchmarkDeduper_Pods
	// measures heap and time per pod, and BenchmarkTuning_DedupTrial tries
	// other values.
	siteTrial, siteMinHitRate, siteMaxBackoff int

	// guardBudget is the share of one core the guard spends at most:
	// after checking guardBatch values it pauses (1/guardBudget - 1) times
	// as long as the batch took; guardRoundPause is the least time between
	// the starts of two rounds over the whole table (so that a small table
	// costs next to nothing). Chosen with make bench-e2e's churn phase (the
	// guard's share of an informer's CPU, which must stay a small part of
	// a slowly churning one) and make bench-guard (BenchmarkDedupGuard_Round:
	// the time to cover the table at this budget); BenchmarkTuning_Guard
	// tries other values.
	guardBudget     float64
	guardBatch      int
	guardRoundPause time.Duration

	// compactQuiet is how long an updated object must go unchanged before
	// the compactor shares its parts, compactLongest how long one
	// that keeps changing waits at most, and compactTick how often the
	// compactor looks for due objects while any wait. Chosen with make
	// bench-compare's informer workload (ten updates per pod in a burst:
	// one compaction each, after it) and make bench-e2e's churn phase (an
	// apply and a status update of the same pod within milliseconds: one
	// compaction for both); BenchmarkDedupCompactor_Compact measures one
	// compaction, and BenchmarkTuning_Compactor tries other values.
	compactQuiet, compactLongest, compactTick time.Duration

	// seenMinBits and seenMaxBits bound the size in bits (powers of two)
	// of the filter that remembers the values a table saw once
	// (table.go): a small informer keeps a few hundred bytes, a large
	// one at most seenMaxBits/8. Chosen with make bench-e2e's heap per
	// cached pod and BenchmarkDeduper_Pods; BenchmarkTuning_SeenFilter
	// tries other values.
	seenMinBits, seenMaxBits int
}

// tuning is the package's tuning, read by the code that each value tunes.
// Only the BenchmarkTuning_* benchmarks write it, each restoring it before
// it returns.
var tuning = tunables{
	siteTrial:      512,
	siteMinHitRate: 8,
	siteMaxBackoff: 6,

	guardBudget:     0.0025,
	guardBatch:      64,
	guardRoundPause: 5 * time.Second,

	compactQuiet:   time.Second,
	compactLongest: 10 * time.Second,
	compactTick:    250 * time.Millisecond,

	seenMinBits: 1 << 12,
	seenMaxBits: 1 << 22,
}
