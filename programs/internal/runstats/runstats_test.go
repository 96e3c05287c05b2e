package runstats

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseGC(t *testing.T) {
	at := 3 * time.Second
	for _, tc := range []struct {
		name string
		line string
		want GC
		ok   bool
	}{
		{"a collection", "gc 12 @3.456s 2%: 0.010+0.52+0.003 ms clock, 0.021+0.10/0.38/0.42+0.007 ms cpu, 45->47->20 MB, 48 MB goal, 0 MB stacks, 0 MB globals, 4 P",
			GC{At: at, StartMB: 45, EndMB: 47, LiveMB: 20}, true},
		{"a forced one", "gc 3 @120.001s 0%: 0.1+1.2+0.01 ms clock, 0.2+0/1/2+0.02 ms cpu, 300->300->150 MB, 310 MB goal, 0 MB stacks, 0 MB globals, 2 P (forced)",
			GC{At: at, StartMB: 300, EndMB: 300, LiveMB: 150}, true},
		{"a klog line", `I1129 19:00:00.000000 1 evictions.go:587] "Evicted pod in dry run mode" pod="a/b"`, GC{}, false},
		{"a scavenger line", "scvg: 0 MB released", GC{}, false},
		{"cut short", "gc 4 @1.0s 1%: 0.1+0.2+0.3 ms clock", GC{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := ParseGC(tc.line, at)
			if ok != tc.ok || got != tc.want {
				t.Errorf("ParseGC = %+v, %t; want %+v, %t", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestProcessFigures(t *testing.T) {
	p := Process{GCs: []GC{
		{At: 1 * time.Second, StartMB: 100, LiveMB: 50},
		{At: 5 * time.Second, StartMB: 400, LiveMB: 200},
		{At: 10 * time.Second, StartMB: 250, LiveMB: 120},
		{At: 11 * time.Second, StartMB: 260, LiveMB: 130},
		{At: 12 * time.Second, StartMB: 240, LiveMB: 110},
	}}
	if got := p.PeakHeapMB(); got != 400 {
		t.Errorf("PeakHeapMB = %v, want 400", got)
	}
	if got, n := p.LiveMBBetween(10*time.Second, 13*time.Second); got != 120 || n != 3 {
		t.Errorf("LiveMBBetween(10s, 13s) = %v over %d, want 120 over 3", got, n)
	}
	if got, ok := p.LastLiveMBBefore(11 * time.Second); got != 120 || !ok {
		t.Errorf("LastLiveMBBefore(11s) = %v, %t; want 120, true", got, ok)
	}
	if _, ok := p.LastLiveMBBefore(time.Second); ok {
		t.Errorf("LastLiveMBBefore(1s): found a collection, want none")
	}
	if got, n := p.LiveMBBetween(20*time.Second, 30*time.Second); got != 0 || n != 0 {
		t.Errorf("LiveMBBetween with no collection = %v over %d, want 0 over 0", got, n)
	}
}

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{3, 1, 2}, 2}, {[]float64{4, 1, 3, 2}, 2.5}} {
		in := append([]float64(nil), tc.in...)
		if got := Median(tc.in); got != tc.want {
			t.Errorf("Median(%v) = %v, want %v", tc.in, got, tc.want)
		}
		if !cmp.Equal(in, tc.in) {
			t.Errorf("Median reordered its argument: %v", tc.in)
		}
	}
}

func TestWriteRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.json")
	want := Process{Command: []string{"kwok"}, Wall: time.Minute, CPU: 2 * time.Second, MaxRSSMB: 10.5, GCs: []GC{{At: time.Second, LiveMB: 1}}}
	if err := Write(path, want); err != nil {
		t.Fatal(err)
	}
	var got Process
	if err := Read(path, &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("read back differs (-want +got):\n%s", diff)
	}
	if err := Read(filepath.Join(t.TempDir(), "missing.json"), &got); err == nil {
		t.Errorf("Read of a missing file: no error")
	}
}
