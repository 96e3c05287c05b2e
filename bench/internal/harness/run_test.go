package harness

import (
	"errors"
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestRun runs small workloads through testing.Benchmark: a loop runs
// exactly Sizes.Iterations times, a one-shot workload once with its
// reported events as operations, and a failing or panicking workload comes
// back as an error.
func TestRun(t *testing.T) {
	var ran int
	tests := []struct {
		name    string
		group   Group
		run     func(b *testing.B, fx *Fixture) error
		wantN   int
		wantRan int
		wantErr string
	}{
		{name: "a loop runs Iterations times", group: GroupIndexer, run: func(b *testing.B, _ *Fixture) error {
			cpu := StartLoop(b)
			for b.Loop() {
				ran++
			}
			cpu.Report(b.N)
			return nil
		}, wantN: 7, wantRan: 7},
		{name: "a one-shot runs once and counts its events", group: GroupInformer, run: func(b *testing.B, _ *Fixture) error {
			ran++
			b.ReportMetric(40, UnitEvents)
			return nil
		}, wantN: 40, wantRan: 1},
		{name: "an error fails the run", group: GroupInformer, run: func(*testing.B, *Fixture) error {
			ran++
			return errors.New("handler 3 of 10: received 9 of 10 notifications")
		}, wantRan: 1, wantErr: "received 9 of 10"},
		{name: "an error inside a loop fails the run", group: GroupQueue, run: func(b *testing.B, _ *Fixture) error {
			for b.Loop() {
				ran++
				return errors.New("pop: closed")
			}
			return nil
		}, wantRan: 1, wantErr: "pop: closed"},
		{name: "a panic fails the run", group: GroupLister, run: func(*testing.B, *Fixture) error {
			ran++
			panic("boom")
		}, wantRan: 1, wantErr: "panic: boom"},
	}
	benchTimeBefore := flag.Lookup("test.benchtime").Value.String()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ran = 0
			w := Workload{Name: tc.name, Group: tc.group, Run: tc.run}
			res, err := Run(w, Sizes{Iterations: 7, BenchTime: time.Hour}, nil)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if res.N != tc.wantN || ran != tc.wantRan {
				t.Errorf("N = %d, body ran %d times; want %d and %d", res.N, ran, tc.wantN, tc.wantRan)
			}
			if got := flag.Lookup("test.benchtime").Value.String(); got != benchTimeBefore {
				t.Errorf("-test.benchtime left at %q, want it back at %q", got, benchTimeBefore)
			}
		})
	}
}

func TestBenchTime(t *testing.T) {
	tests := []struct {
		group Group
		sizes Sizes
		want  string
	}{
		{GroupIndexer, Sizes{BenchTime: 300 * time.Millisecond}, "300ms"},
		{GroupLister, Sizes{BenchTime: time.Second, Iterations: 50}, "50x"},
		{GroupInformer, Sizes{BenchTime: time.Second}, "1x"},
		{GroupWriteRate, Sizes{Iterations: 50}, "1x"},
	}
	for _, tc := range tests {
		if got := benchTime(tc.group, tc.sizes); got != tc.want {
			t.Errorf("benchTime(%s, %+v) = %q, want %q", tc.group, tc.sizes, got, tc.want)
		}
	}
}

// TestResultOf divides by the iterations, or by the events a one-shot
// workload reported, and folds the CPU metric into its field.
func TestResultOf(t *testing.T) {
	tests := []struct {
		name string
		in   testing.BenchmarkResult
		want Result
	}{
		{name: "a loop", in: testing.BenchmarkResult{N: 4, T: 400, MemAllocs: 8, MemBytes: 800,
			Extra: map[string]float64{UnitCPU: 90}},
			want: Result{N: 4, NsPerOp: 100, CPUNsPerOp: 90, AllocsPerOp: 2, BytesPerOp: 200}},
		{name: "a one-shot", in: testing.BenchmarkResult{N: 1, T: 1000, MemAllocs: 50, MemBytes: 5000,
			Extra: map[string]float64{UnitEvents: 10, UnitCPU: 70, "events/s": 3, "delivered": 10}},
			want: Result{N: 10, NsPerOp: 100, CPUNsPerOp: 70, AllocsPerOp: 5, BytesPerOp: 500,
				Extra: map[string]float64{"events/s": 3, "delivered": 10}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, resultOf(tc.in)); diff != "" {
				t.Errorf("resultOf (-want +got):\n%s", diff)
			}
		})
	}
}
