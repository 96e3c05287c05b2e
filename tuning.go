package cache

// tunables are the package's tuning constants, in one place (value
// sharing's are internal/dedup's, in its tuning.go). Each field's
// comment names the benchmark that chose its value; tuning_bench_test.go
// has, for each, a benchmark with one sub-benchmark per value tried
// (BenchmarkTuning_*), which shows what changing it costs. Benchmark
// figures live in docs/ and bench/results/, not here.
type tunables struct {
	// listMatchStretch and listCopyStretch: a listing (ListAll,
	// ListAllByNamespace) yields the processor once per stretch of
	// objects: every listMatchStretch objects whose labels it tests, every
	// listCopyStretch objects it passes on untested (each of those is far
	// cheaper). A stretch is some microseconds of work, a yield a fraction
	// of one. Chosen with BenchmarkSharedInformer_WritesWithReaders (the
	// informer's event rate while readers loop over a namespace) and
	// BenchmarkListAll (what the yields cost a listing alone);
	// BenchmarkTuning_ListYield tries other values.
	listMatchStretch, listCopyStretch int

	// storeBulkRead is the size from which a store read (List, ByIndex,
	// Index, ListAllByNamespace's bucket) yields the processor once it has
	// released the lock. Chosen with BenchmarkSharedInformer_WritesWithReaders;
	// BenchmarkTuning_StoreReadYield tries other values.
	storeBulkRead int
}

// tuning is the package's tuning, read by the code that each value tunes.
// Only the BenchmarkTuning_* benchmarks write it, each restoring it before
// it returns.
var tuning = tunables{
	listMatchStretch: 256,
	listCopyStretch:  8192,
	storeBulkRead:    1024,
}

// Besides the tuning, this file holds the one other set of package-wide
// switches. releaseBehaviour switches on, in the overlay of a newer client-go
// release, what that release does differently where kcache follows
// v0.37.2 by default; the release's adapter file sets it in an init.
var releaseBehaviour struct {
	// lazyStoreRVMetric (v0.38): a store asks its metrics provider for the
	// resource-version gauge at the gauge's first Set, not when it is made.
	lazyStoreRVMetric bool
	// mutationCacheSkipsVanished (v0.38): MutationCache.ByIndex treats a key
	// of the index whose object is gone from the store (deleted meanwhile)
	// as not indexed, so a remembered write for it may be returned.
	mutationCacheSkipsVanished bool
	// resyncQueueErrorWrapsKeyError (v0.38): RealFIFO.Resync, meeting a
	// known object its key function refuses, returns the KeyError wrapped
	// in "couldn't queue object: "; v0.37.2 returns that prefix with an
	// empty wrapped error (resyncQueueErrorV037).
	resyncQueueErrorWrapsKeyError bool
}
