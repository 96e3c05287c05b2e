package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kcache/cache/bench/internal/harness"
)

func results(ns, allocs float64, extra map[string]float64) []harness.Result {
	return []harness.Result{{N: 1, NsPerOp: ns, AllocsPerOp: allocs, Extra: extra}}
}

func TestTargets(t *testing.T) {
	rep := &report{
		rows: []*row{
			{name: "Indexer/Add", group: harness.GroupIndexer, results: map[string][]harness.Result{
				cg: results(100, 4, nil), kc: results(50, 2, nil)}},
			{name: "Indexer/List", group: harness.GroupIndexer, results: map[string][]harness.Result{
				cg: results(100, 1, nil), kc: results(120, 1.004, nil)}},
			{name: "Informer/10handlers", group: harness.GroupInformer, results: map[string][]harness.Result{
				cg: results(1, 1, map[string]float64{"events/s": 100}), kc: results(1, 1, map[string]float64{"events/s": 250})}},
			{name: "WriteRate/0readers", group: harness.GroupWriteRate, results: map[string][]harness.Result{
				cg: results(1, 1, map[string]float64{"events/s": 100}), kc: results(1, 1, map[string]float64{"events/s": 100})}},
			{name: "WriteRate/10readers", group: harness.GroupWriteRate, results: map[string][]harness.Result{
				cg: results(1, 1, map[string]float64{"events/s": 10}), kc: results(1, 1, map[string]float64{"events/s": 40})}},
		},
		memory: &memRow{results: map[string][]harness.MemResult{
			cg: {{Pods: 10, SteadyBytes: 1000, SyncPeakInuse: 3000, RelistPeakInuse: 2000, RelistPeakLive: 1900}},
			kc: {{Pods: 10, SteadyBytes: 900, SyncPeakInuse: 1500, RelistPeakInuse: 1900, RelistPeakLive: 1000}},
		}},
	}
	type verdict struct {
		Goal string
		Met  bool
	}
	var got []verdict
	for _, tg := range rep.targets() {
		got = append(got, verdict{tg.goal, tg.met})
	}
	want := []verdict{
		{"every indexer, queue and lister workload: time ratio ≤ 1.0", false},
		{"(the same on process CPU time)", true},                                  // no CPU time measured: 0/0
		{"every indexer, queue and lister workload: allocs/op ratio ≤ 1.0", true}, // 1.004 prints 1.00
		{"geometric mean of their time ratios ≤ 0.6", false},                      // sqrt(0.5*1.2) = 0.77
		{"(the same on process CPU time)", false},
		{"informer events/s with 10 handlers ≥ 2× client-go's", true},
		{"kcache write rate with 10 namespace listers ≥ 50% of its rate with none", false},
		{"peak heap during initial sync ≤ 0.6× client-go's", true},
		{"heap per cached pod ≤ 1.0× client-go's", true},
		{"kcache peak heap during relist ≤ 1.2× its steady cache (live heap)", true}, // 1000/900 = 1.11
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("targets (-want +got):\n%s", diff)
	}

	var out strings.Builder
	rep.write(&out)
	for _, s := range []string{"| Indexer/Add | 100 ns | 50 ns | 0.50 |", "### Targets", "| Informer/10handlers | 100.0 | 250.0 | 2.50 | ", "| 0 ns | 0 ns | 1.00 |"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("report lacks %q:\n%s", s, out.String())
		}
	}
}

// TestFailedRunsAreCounted: a run that failed (a handler that fell short of
// every notification, say) is listed under Errors and counted, which makes
// run return an error and the command exit non-zero.
func TestFailedRunsAreCounted(t *testing.T) {
	tests := map[string]struct {
		rep  *report
		want int
	}{
		"no errors": {rep: &report{rows: []*row{{name: "Informer/10handlers", group: harness.GroupInformer}}}, want: 0},
		"a short handler and a memory error": {rep: &report{
			rows:   []*row{{name: "Informer/10handlers", group: harness.GroupInformer, errs: []string{"kcache round 1: handler 3 of 10: received 109996 of 110000 notifications"}}},
			memory: &memRow{errs: []string{"client-go round 1: child died"}},
		}, want: 2},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := tc.rep.errorCount(); got != tc.want {
				t.Errorf("errorCount = %d, want %d", got, tc.want)
			}
			var out strings.Builder
			tc.rep.writeErrors(&out)
			if got := strings.Contains(out.String(), "### Errors"); got != (tc.want > 0) {
				t.Errorf("Errors section printed = %t, want %t:\n%s", got, tc.want > 0, out.String())
			}
		})
	}
}

// TestDeltaColumn: the verdict column is benchstat's, from the rounds of
// both libraries, and its warnings become notes under the table.
func TestDeltaColumn(t *testing.T) {
	rounds := func(ns ...float64) []harness.Result {
		var rs []harness.Result
		for _, v := range ns {
			rs = append(rs, harness.Result{N: 1, NsPerOp: v})
		}
		return rs
	}
	tests := []struct {
		name      string
		cg, kc    []harness.Result
		want      string
		wantNotes int
	}{
		{name: "five rounds apart", cg: rounds(100, 101, 102, 100, 101), kc: rounds(50, 51, 50, 51, 50),
			want: "-50.50% (p=0.008 n=5)"},
		{name: "two rounds cannot tell", cg: rounds(100, 101), kc: rounds(50, 51), want: "~ (p=0.333 n=2)", wantNotes: 1},
		{name: "one side missing", cg: rounds(100), want: missing},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &row{name: "Indexer/Add", results: map[string][]harness.Result{cg: tc.cg, kc: tc.kc}}
			var notes []string
			if got := r.delta(nsPerOp, &notes); got != tc.want {
				t.Errorf("delta = %q, want %q", got, tc.want)
			}
			if len(notes) != tc.wantNotes {
				t.Errorf("notes %q, want %d", notes, tc.wantNotes)
			}
		})
	}
}
