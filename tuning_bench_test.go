package cache

import (
	"math"
	"testing"
)

// The BenchmarkTuning_* benchmarks show what changing a value of tuning.go
// costs: each runs one sub-benchmark per value tried, the package's own
// value among them (marked "now"), and restores tuning before it returns.
// They are not timed assertions: they report, and a person compares.

// withTuning runs b's body with tuning changed by set, and puts it back.
func withTuning(b *testing.B, set func(*tunables), body func(b *testing.B)) {
	saved := tuning
	set(&tuning)
	defer func() { tuning = saved }()
	body(b)
}

// never is a stretch or size no listing reaches: the yield is off.
const never = math.MaxInt32

// BenchmarkTuning_ListYield tries other listing stretches
// (listMatchStretch, listCopyStretch) on BenchmarkSharedInformer_WritesWithReaders'
// workload with 10 readers: events/s is the writers' side, lists/s the
// readers'.
func BenchmarkTuning_ListYield(b *testing.B) {
	for _, tt := range []struct {
		name         string
		match, copyN int
	}{
		{"off", never, never},
		{"64,2048", 64, 2048},
		{"now:256,8192", 256, 8192},
		{"1024,32768", 1024, 32768},
	} {
		b.Run(tt.name, func(b *testing.B) {
			withTuning(b, func(t *tunables) { t.listMatchStretch, t.listCopyStretch = tt.match, tt.copyN },
				func(b *testing.B) { benchWritesWithReaders(b, 10) })
		})
	}
}

// BenchmarkTuning_StoreReadYield tries other sizes from which a store read
// yields (storeBulkRead) on the same workload.
func BenchmarkTuning_StoreReadYield(b *testing.B) {
	for _, tt := range []struct {
		name string
		size int
	}{{"off", never}, {"256", 256}, {"now:1024", 1024}, {"4096", 4096}} {
		b.Run(tt.name, func(b *testing.B) {
			withTuning(b, func(t *tunables) { t.storeBulkRead = tt.size },
				func(b *testing.B) { benchWritesWithReaders(b, 10) })
		})
	}
}
