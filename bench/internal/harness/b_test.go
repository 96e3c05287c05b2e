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

// TestBOwesCollections pins the rule that keeps a loop going until it has
// paid its share of garbage collections, on the figures the rule reads
// (live heap, bytes allocated, time elapsed, ops so far) rather than on a
// real loop, whose op count would depend on how busy the machine is.
func TestBOwesCollections(t *testing.T) {
	const live = 8 << 20
	bench := 20 * time.Millisecond
	tests := []struct {
		name      string
		live      uint64
		allocated uint64
		elapsed   time.Duration
		wantOwes  bool
		wantMore  int64 // iterations still needed, after 10 ops
	}{
		{"a heavy allocator past its bench time goes on to two live heaps", live, live, bench, true, 10},
		{"a quarter of the live heap is already heavy", live, live / 4, bench, true, 70},
		{"less than a quarter is too light to matter", live, live/4 - 1, bench, false, -1},
		{"two live heaps are the share", live, gcShare * live, bench, false, -1},
		{"the extension ends at gcShareTime bench times", live, live, gcShareTime * bench, false, -1},
		{"no live heap measured, no extension", 0, live, bench, false, -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := NewB(bench)
			b.live, b.bytes, b.i = tc.live, tc.allocated, 10
			if got := b.owesCollections(tc.elapsed); got != tc.wantOwes {
				t.Errorf("owesCollections = %v, want %v", got, tc.wantOwes)
			}
			if tc.wantMore >= 0 {
				if got := b.moreIterations(tc.elapsed); got != tc.wantMore {
					t.Errorf("moreIterations = %d, want %d", got, tc.wantMore)
				}
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
