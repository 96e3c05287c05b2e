package harness

import (
	"testing"
	"time"
)

var retained [][]byte

func TestBLoop(t *testing.T) {
	tests := []struct {
		name      string
		benchTime time.Duration
		maxN      int
		wantN     int
	}{
		{name: "zero bench time runs once", benchTime: 0, wantN: 1},
		{name: "MaxN caps a long bench time", benchTime: time.Hour, maxN: 50, wantN: 50},
		{name: "MaxN of one", benchTime: time.Hour, maxN: 1, wantN: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := NewB(tc.benchTime)
			b.MaxN = tc.maxN
			ran := 0
			for b.Loop() {
				ran++
			}
			if got := b.Result().N; got != tc.wantN || ran != tc.wantN {
				t.Errorf("N = %d, body ran %d times; want %d", got, ran, tc.wantN)
			}
		})
	}
}

func TestBLoopRunsForBenchTime(t *testing.T) {
	b := NewB(20 * time.Millisecond)
	for b.Loop() {
		time.Sleep(time.Microsecond) // the op being measured, not synchronisation
	}
	if b.Elapsed() < 20*time.Millisecond {
		t.Errorf("timed %v, want at least the bench time", b.Elapsed())
	}
	if b.Result().N < 2 {
		t.Errorf("N = %d, want the loop to grow past one iteration", b.Result().N)
	}
}

// TestBCountsOnlyTimedAllocations checks that allocations made with the
// timer stopped are left out.
func TestBCountsOnlyTimedAllocations(t *testing.T) {
	retained = nil
	b := NewB(time.Hour)
	b.MaxN = 100
	for b.Loop() {
		retained = append(retained, make([]byte, 4096))
		b.StopTimer()
		retained = append(retained, make([]byte, 1<<20))
		b.StartTimer()
	}
	res := b.Result()
	if res.BytesPerOp < 4096 || res.BytesPerOp > 64<<10 {
		t.Errorf("B/op = %v, want about 4 KiB (the 1 MiB allocated untimed left out)", res.BytesPerOp)
	}
	if res.AllocsPerOp < 1 {
		t.Errorf("allocs/op = %v, want at least 1", res.AllocsPerOp)
	}
	retained = nil
}

func TestBOneShot(t *testing.T) {
	b := NewB(0)
	b.StartTimer()
	retained = append(retained, make([]byte, 8192))
	b.StopTimer()
	b.SetN(4)
	b.ReportMetric("events/s", 12)
	res := b.Result()
	if res.N != 4 || res.BytesPerOp < 2048 || res.Extra["events/s"] != 12 {
		t.Errorf("result %+v, want N 4, at least 2 KiB/op and events/s 12", res)
	}
	retained = nil
}

// TestBLoopPaysItsShareOfCollections checks that a loop whose allocations
// reach a quarter of the live heap runs on until it has allocated gcShare
// live heaps, and that one allocating little stops at the bench time.
func TestBLoopPaysItsShareOfCollections(t *testing.T) {
	retained = [][]byte{make([]byte, 8<<20)} // a live heap of about 8 MiB
	defer func() { retained = nil }()
	tests := []struct {
		name      string
		perOp     int
		wantBytes func(live uint64) (lo, hi uint64)
	}{
		{"a heavy allocator goes on to two live heaps", 256 << 10, func(live uint64) (uint64, uint64) { return gcShare * live, 8 * gcShare * live }},
		{"a light allocator stops at the bench time", 16, func(uint64) (uint64, uint64) { return 0, 4 << 20 }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := NewB(20 * time.Millisecond)
			var sink []byte
			for b.Loop() {
				sink = make([]byte, tc.perOp)
				time.Sleep(time.Millisecond) // the op being measured
			}
			_ = sink
			allocated := uint64(b.Result().BytesPerOp * float64(b.Result().N))
			lo, hi := tc.wantBytes(b.live)
			if allocated < lo || allocated > hi {
				t.Errorf("allocated %d bytes over %d ops with a live heap of %d; want %d..%d", allocated, b.Result().N, b.live, lo, hi)
			}
		})
	}
}

func TestFixtureReleaseClusterRebuildsOnDemand(t *testing.T) {
	f := NewFixture(Sizes{Pods: 10})
	first := f.Pods()
	f.ReleaseCluster()
	if f.pods != nil || f.keys != nil {
		t.Fatal("ReleaseCluster kept the cluster pods")
	}
	again := f.Pods()
	if len(again) != 10 || again[0] == first[0] || again[3].Name != first[3].Name {
		t.Errorf("rebuilt pods: %d, same first object %v; want 10 fresh copies of the same pods", len(again), again[0] == first[0])
	}
}
