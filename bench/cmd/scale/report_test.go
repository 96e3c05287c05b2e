package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kcache/cache/bench/internal/e2e"
	"github.com/kcache/cache/bench/internal/harness"
)

// fake returns a measurement of variant at pods whose figures scale with
// heapPerPod and syncSeconds.
func fake(pods int, list, variant string, relist bool, heapPerPod, syncSeconds float64) measured {
	v := e2e.Variant{Lib: "kcache"}
	switch variant {
	case "client-go":
		v = e2e.Variant{Lib: "client-go"}
	case "kcache-noshare":
		v.NoShare = true
	case "kcache-quiet":
		v.Quiet = true
	}
	m := measured{step: step{pods: pods, list: list, relist: relist}}
	m.Variant = v
	m.Pods = pods
	m.SteadyHeap = heapPerPod * float64(pods)
	m.SyncPeakHeap, m.SyncPeakRSS = 2*m.SteadyHeap, 3*m.SteadyHeap
	m.SyncSeconds, m.SyncCPUSeconds = syncSeconds, syncSeconds/2
	if relist {
		m.RelistSeconds, m.RelistPeakHeap = 10, 1.5*m.SteadyHeap
		if !v.Quiet {
			m.RelistUpdates = int64(pods)
		}
	}
	return m
}

func TestSummary(t *testing.T) {
	opts := options{pods: []int{20_000, 100_000}}
	rs := results{
		fake(20_000, "stream", "client-go", false, 25_000, 5),
		fake(20_000, "stream", "kcache", false, 6_000, 4),
		fake(100_000, "stream", "client-go", false, 25_000, 25),
		fake(100_000, "stream", "kcache", false, 6_300, 20),
		fake(100_000, "paged", "kcache", false, 1, 1), // never read by the summary
		fake(100_000, "stream", "client-go", true, 25_000, 25),
		fake(100_000, "stream", "kcache", true, 6_300, 20),
		fake(100_000, "stream", "kcache-quiet", true, 6_300, 20),
	}
	churned := func(m measured, cpu float64) measured {
		m.Churn = &harness.ChurnResult{Events: 1000, CPUSeconds: cpu}
		return m
	}
	rs = append(rs, churned(fake(100_000, "stream", "client-go", false, 0, 0), 1), churned(fake(100_000, "stream", "kcache", false, 0, 0), 0.9))
	got := summary(rs, opts)
	want := "scale: pods=100000 heap/pod kcache/client-go = 0.25, peak rss = 0.25, sync time = 0.80, sync cpu = 0.80, churn cpu/event = 0.90, relist peak/steady kcache = 1.50 client-go = 1.50, heap/pod growth 20k->100k kcache = 1.05, notifications after relist opt-in/default = 0/100000"
	if got != want {
		t.Fatalf("summary\n got: %s\nwant: %s", got, want)
	}
}

func TestSummary_MissingPhasesAreDashes(t *testing.T) {
	opts := options{pods: []int{1_000}}
	rs := results{fake(1_000, "stream", "client-go", false, 20_000, 1), fake(1_000, "stream", "kcache", false, 5_000, 1)}
	got := summary(rs, opts)
	want := "scale: pods=1000 heap/pod kcache/client-go = 0.25, peak rss = 0.25, sync time = 1.00, sync cpu = 1.00, churn cpu/event = -, relist peak/steady kcache = - client-go = -, heap/pod growth 20k->1k kcache = -, notifications after relist opt-in/default = -"
	if got != want {
		t.Fatalf("summary\n got: %s\nwant: %s", got, want)
	}
}

func TestWriteLinesAndReport(t *testing.T) {
	opts := options{pods: []int{1_000}}
	rs := []measured{fake(1_000, "stream", "client-go", false, 20_000, 1), fake(1_000, "stream", "kcache", false, 5_000, 1),
		fake(1_000, "stream", "kcache", true, 5_000, 1)}
	var b strings.Builder
	if err := writeLines(&b, rs); err != nil {
		t.Fatal(err)
	}
	if err := writeReport(&b, rs, nil, []string{"scale-sim: objects=10 variant=kcache"}, opts); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"scale-row: pods=1000 variant=client-go list=stream heap-per-pod-bytes=20000 steady-heap-mib=19.1 peak-heap-mib=38.1 peak-rss-mib=57.2 sync-s=1.00 sync-cpu-s=0.50\n",
		"scale-row: pods=1000 variant=kcache list=stream heap-per-pod-bytes=5000 ",
		"scale-relist: pods=1000 variant=kcache relist-s=10.00 ",
		"scale-sim: objects=10 variant=kcache\n",
		"| 1000 | 20000 B | 5000 B |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "scale-row:") != 2 {
		t.Errorf("want one row per sync measurement (the relist step's sync is not a row):\n%s", out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "scale: pods=1000 ") {
		t.Errorf("last line %q is not the summary", last)
	}
}

func TestSteps(t *testing.T) {
	opts := options{pods: []int{1_000, 5_000}, churnAt: []int{5_000, 7_000}, relistAt: 5_000, churn: time.Minute, churnRate: 200}
	var got []string
	for _, s := range steps(opts) {
		got = append(got, strings.Join(s.args(opts, "f.json"), " "))
	}
	want := []string{
		"-n 1000 -only client-go,kcache,kcache-noshare -list stream -relist=false -churn 0s -churn-rate 200 -timeout 0s -json f.json",
		"-n 1000 -only client-go,kcache,kcache-noshare -list paged -relist=false -churn 0s -churn-rate 200 -timeout 0s -json f.json",
		"-n 5000 -only client-go,kcache,kcache-noshare -list stream -relist=false -churn 1m0s -churn-rate 200 -timeout 0s -json f.json",
		"-n 5000 -only client-go,kcache,kcache-noshare -list paged -relist=false -churn 0s -churn-rate 200 -timeout 0s -json f.json",
		"-n 5000 -only client-go,kcache,kcache-noshare,kcache-quiet -list stream -relist=true -churn 0s -churn-rate 200 -timeout 0s -json f.json",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("steps:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestParseOptions(t *testing.T) {
	tests := []struct {
		args    []string
		pods    []int
		relist  int
		wantErr bool
	}{
		{args: nil, pods: []int{1000, 5000, 20000, 50000, 100000}, relist: 100000},
		{args: []string{"-pods", "20_000, 1000,1000"}, pods: []int{1000, 20000}, relist: 20000},
		{args: []string{"-pods", "1000", "-relist-at", "-1"}, pods: []int{1000}, relist: -1},
		{args: []string{"-pods", "0"}, wantErr: true},
		{args: []string{"-pods", ","}, wantErr: true},
		{args: []string{"-churn-at", "x"}, wantErr: true},
	}
	for _, tc := range tests {
		o, err := parseOptions(tc.args, &strings.Builder{})
		if (err != nil) != tc.wantErr {
			t.Errorf("%q: error %v, want error %t", tc.args, err, tc.wantErr)
			continue
		}
		if err == nil && (!slices.Equal(o.pods, tc.pods) || o.relistAt != tc.relist) {
			t.Errorf("%q: pods %v relist-at %d, want %v %d", tc.args, o.pods, o.relistAt, tc.pods, tc.relist)
		}
	}
}
