package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kcache/cache/bench/internal/e2e"
	"github.com/kcache/cache/bench/internal/harness"
)

func res(v variant, pods int, steady, syncPeak, relistPeak, rss, syncSec float64) result {
	return result{Variant: v, E2EResult: harness.E2EResult{Pods: pods, SteadyHeap: steady, SyncPeakHeap: syncPeak,
		RelistPeakHeap: relistPeak, SyncPeakRSS: rss, RelistPeakRSS: rss / 2, SyncSeconds: syncSec, RelistSeconds: 1,
		RelistUpdates: int64(pods)}}
}

// withoutRelist is r as measured with -relist=false.
func withoutRelist(r result) result {
	r.RelistSeconds, r.RelistPeakHeap, r.RelistPeakRSS, r.RelistUpdates = 0, 0, 0, 0
	return r
}

func TestWriteReport_LastLine(t *testing.T) {
	cg := res(variant{Lib: "client-go"}, 100, 1000, 2000, 4000, 800, 2)
	noShare := res(variant{Lib: "kcache", NoShare: true}, 100, 900, 1800, 3000, 600, 2)
	kc := res(variant{Lib: "kcache"}, 100, 400, 1000, 2000, 400, 2.2)
	tests := []struct {
		name    string
		results []result
		want    string
	}{
		{"both modes measured: the last line is kcache's default, sharing",
			[]result{cg, kc, noShare},
			"e2e: heap/pod kcache/client-go = 0.40, peak RSS = 0.50, initial-list peak heap = 0.50, relist peak heap = 0.50, sync time = 1.10"},
		{"without sharing only: the last variant of kcache measured",
			[]result{cg, noShare},
			"e2e: heap/pod kcache/client-go = 0.90, peak RSS = 0.75, initial-list peak heap = 0.90, relist peak heap = 0.75, sync time = 1.00"},
		{"no client-go: no summary",
			[]result{noShare},
			"| notifications after relist (adds + updates + deletes) | 100 |"},
		{"no relist measured (-relist=false): no relist rows",
			[]result{withoutRelist(noShare)},
			"| heap per cached pod | 9 B |"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			if err := writeReport(&b, tt.results); err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(b.String()), "\n")
			if got := lines[len(lines)-1]; got != tt.want {
				t.Errorf("last line:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

// withChurn gives r a churn result: events notifications for cpu seconds,
// heapAfter bytes of heap per pod after it.
func withChurn(r result, events int64, cpu, heapAfter float64) result {
	r.Churn = &harness.ChurnResult{Pods: r.Pods, Events: events, CPUSeconds: cpu,
		BeforeHeap: r.SteadyHeap, AfterHeap: heapAfter * float64(r.Pods), BeforeLive: r.SteadyHeap / 2, AfterLive: heapAfter * float64(r.Pods) / 2, PeakHeap: 3 << 20}
	return r
}

// withGC gives r's churn result its GC figures: gc seconds of GC CPU and
// cycles GC cycles in the window, alloc bytes allocated in it, and a
// cycle of cycleCost seconds at a live heap of live bytes, GOGC=100.
func withGC(r result, gc float64, cycles uint64, alloc, cycleCost, live float64) result {
	r.Churn.GCSeconds, r.Churn.GCCycles, r.Churn.AllocBytes = gc, cycles, alloc
	r.Churn.GCCycleSeconds, r.Churn.GCLive, r.Churn.GOGC = cycleCost, live, 100
	return r
}

func TestWriteReport_Churn(t *testing.T) {
	// Every variant pays 1 ns of GC per byte allocated in the steady
	// state; kcache and kcache-noshare paid a cycle in the window,
	// client-go none.
	cg := withGC(withChurn(res(variant{Lib: "client-go"}, 100, 1000, 2000, 4000, 800, 2), 400, 0.02, 12), 0, 0, 400_000, 0.003, 3e6)
	kc := withGC(withChurn(res(variant{Lib: "kcache"}, 100, 400, 1000, 2000, 400, 2.2), 400, 0.03, 6), 0.012, 1, 400_000, 0.001, 1e6)
	noShare := withGC(withChurn(res(variant{Lib: "kcache", NoShare: true}, 100, 900, 1800, 3000, 600, 2), 400, 0.01, 11), 0.002, 1, 200_000, 0.002, 2e6)
	tests := []struct {
		name      string
		results   []result
		wantLast  string
		wantLines []string // lines the report must hold
		notLines  []string // prefixes no line may start with
	}{
		{
			name:     "every variant churned: rows for all, both ratios appended to the last line",
			results:  []result{cg, kc, noShare},
			wantLast: "e2e: heap/pod kcache/client-go = 0.40, peak RSS = 0.50, initial-list peak heap = 0.50, relist peak heap = 0.50, sync time = 1.10, churn CPU/event kcache/client-go = 1.50, churn CPU/event GC amortized = 0.90, churn heap/pod = 0.50",
			wantLines: []string{
				"| | client-go | kcache | kcache-noshare |",
				"| churn: watch events seen | 400 | 400 | 400 |",
				"| churn: process CPU | 0.02 s | 0.03 s | 0.01 s |",
				"| churn: CPU per watch event | 50.0 µs | 75.0 µs | 25.0 µs |",
				"| churn: GC CPU in window | 0.0 ms | 12.0 ms | 2.0 ms |",
				"| churn: GC cycles in window | 0 | 1 | 1 |",
				"| churn: allocated per watch event | 1000 B | 1000 B | 500 B |",
				"| churn: GC cycle cost at settled heap | 3.0 ms | 1.0 ms | 2.0 ms |",
				"| churn: CPU per watch event, GC amortized | 51.0 µs | 46.0 µs | 20.5 µs |",
				"| churn: peak heap | 3.0 MiB | 3.0 MiB | 3.0 MiB |",
				"| churn: heap per cached pod, before (GC) | 10 B | 4 B | 9 B |",
				"| churn: heap per cached pod, after (GC) | 12 B | 6 B | 11 B |",
				"| churn: live heap per cached pod, before | 5 B | 2 B | 4 B |",
				"| churn: live heap per cached pod, after | 6 B | 3 B | 6 B |",
				"kcache-noshare vs client-go: e2e: heap/pod kcache/client-go = 0.90, peak RSS = 0.75, initial-list peak heap = 0.90, relist peak heap = 0.75, sync time = 1.00, churn CPU/event kcache/client-go = 0.50, churn CPU/event GC amortized = 0.40, churn heap/pod = 0.92",
			},
		},
		{
			name:     "no churn phase: no churn rows, the last line as before",
			results:  []result{res(variant{Lib: "client-go"}, 100, 1000, 2000, 4000, 800, 2), res(variant{Lib: "kcache"}, 100, 400, 1000, 2000, 400, 2.2)},
			wantLast: "e2e: heap/pod kcache/client-go = 0.40, peak RSS = 0.50, initial-list peak heap = 0.50, relist peak heap = 0.50, sync time = 1.10",
			notLines: []string{"| churn:"},
		},
		{
			name:      "a variant without a churn result: a dash in its column, no churn ratio",
			results:   []result{res(variant{Lib: "client-go"}, 100, 1000, 2000, 4000, 800, 2), kc},
			wantLast:  "e2e: heap/pod kcache/client-go = 0.40, peak RSS = 0.50, initial-list peak heap = 0.50, relist peak heap = 0.50, sync time = 1.10",
			wantLines: []string{"| churn: CPU per watch event | – | 75.0 µs |"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			if err := writeReport(&b, tt.results); err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(b.String()), "\n")
			if got := lines[len(lines)-1]; got != tt.wantLast {
				t.Errorf("last line:\n got %q\nwant %q", got, tt.wantLast)
			}
			for _, want := range tt.wantLines {
				if !slices.Contains(lines, want) {
					t.Errorf("no line %q in\n%s", want, b.String())
				}
			}
			for _, not := range tt.notLines {
				for _, l := range lines {
					if strings.HasPrefix(l, not) {
						t.Errorf("line %q, want none starting with %q", l, not)
					}
				}
			}
		})
	}
}

func TestChurnLine(t *testing.T) {
	c := churnRun{
		Churn: e2e.Churn{Rate: 20, Duration: 10 * time.Second, Seed: 1},
		Stats: e2e.ChurnStats{Updates: 200, Events: 400, Seconds: 10.04},
	}
	want := "churn: 200 pod updates asked at 20/s for 10s (seed 1), made in 10.0 s: 400 watch events (each update a server-side apply of labels and annotations, then a status update flipping the Ready condition)"
	if got := churnLine(c); got != want {
		t.Errorf("churnLine:\n got %q\nwant %q", got, want)
	}
}

func TestSelectVariants(t *testing.T) {
	tests := []struct {
		only    string
		want    []string
		wantErr bool
	}{
		{"", []string{"client-go", "kcache", "kcache-noshare", "kcache-quiet", "client-go+fieldsv1string", "kcache+fieldsv1string"}, false},
		{"kcache-noshare, client-go", []string{"kcache-noshare", "client-go"}, false},
		{"nope", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.only, func(t *testing.T) {
			vs, err := selectVariants(tt.only)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			var got []string
			for _, v := range vs {
				got = append(got, v.Name())
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestChildEnv(t *testing.T) {
	parent := []string{"A=1", "KCACHE_SHARE_VALUES=true", "B=2", "KCACHE_QUIET_RELIST=true", "KUBE_FEATURE_WatchListClient=true"}
	tests := []struct {
		v    variant
		list listMode
		want string
	}{
		{variant{Lib: "kcache"}, listStream, "A=1,B=2"},
		{variant{Lib: "client-go"}, listPaged, "A=1,B=2,KUBE_FEATURE_WatchListClient=false"},
		{variant{Lib: "kcache", NoShare: true}, listStream, "A=1,B=2,KCACHE_SHARE_VALUES=false"},
		{variant{Lib: "kcache", Quiet: true}, listStream, "A=1,B=2,KCACHE_QUIET_RELIST=true"},
		{variant{Lib: "kcache", Quiet: true}, listPaged, "A=1,B=2,KCACHE_QUIET_RELIST=true,KUBE_FEATURE_WatchListClient=false"},
	}
	for _, tt := range tests {
		t.Run(tt.v.Name()+"/"+string(tt.list), func(t *testing.T) {
			if got := strings.Join(childEnv(parent, tt.v, tt.list), ","); got != tt.want {
				t.Errorf("env %q, want %q", got, tt.want)
			}
		})
	}
}

func TestParseListMode(t *testing.T) {
	for in, want := range map[string]listMode{"stream": listStream, "paged": listPaged, "": "", "pages": ""} {
		got, err := parseListMode(in)
		if got != want || (err != nil) != (want == "") {
			t.Errorf("parseListMode(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

// With -attribution, each variant that has one reports its field paths
// after the table, and the summary stays the last line.
func TestWriteReport_Attribution(t *testing.T) {
	cg := res(variant{Lib: "client-go"}, 100, 1000, 2000, 4000, 800, 2)
	kc := res(variant{Lib: "kcache"}, 100, 400, 1000, 2000, 400, 2.2)
	kc.Attribution = &harness.Attribution{Objects: 100, BytesPerObject: 3.5, Rows: []harness.AttributionRow{
		{Path: "Pod*", BytesPerObject: 2, BlocksPerObject: 1},
		{Path: "Pod.Spec.Containers[]", BytesPerObject: 1.5, BlocksPerObject: 0.25},
	}}
	var b strings.Builder
	if err := writeReport(&b, []result{withoutRelist(cg), withoutRelist(kc)}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range strings.Split(b.String(), "\n") {
		if strings.HasPrefix(l, "attribution ") {
			got = append(got, strings.SplitN(l, " (", 2)[0])
		}
	}
	want := []string{
		"attribution kcache: 100 pods, 4 B per pod in all",
		"attribution kcache: 2.0 B in 1.00 blocks per pod: Pod*",
		"attribution kcache: 1.5 B in 0.25 blocks per pod: Pod.Spec.Containers[]",
	}
	if !slices.Equal(got, want) {
		t.Errorf("attribution lines:\n got %q\nwant %q", got, want)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "e2e: heap/pod") {
		t.Errorf("last line %q, want the summary", last)
	}
}
