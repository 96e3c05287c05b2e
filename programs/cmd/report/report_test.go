package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kcache/cache/programs/internal/runstats"
)

func TestCycles(t *testing.T) {
	evicted := func(pod, plugin, node string) string {
		return fmt.Sprintf(`I1129 19:00:01.000000 1 evictions.go:587] "Evicted pod in dry run mode" pod=%q reason="" strategy=%q node=%q profile="programs"`, pod, plugin, node)
	}
	const end = `I1129 19:00:02.000000 1 descheduler.go:252] "Number of evictions/requests" totalEvicted=1 evictionRequests=0`
	log := strings.Join([]string{
		`I1129 19:00:00.000000 1 descheduler.go:10] "Building a pod evictor"`,
		evicted("programs-1/b", "RemovePodsViolatingNodeAffinity", "kwok-node-0000"),
		`gc 3 @1.0s 1%: 0.1+0.2+0.3 ms clock, 0.1+0/1/2+0.1 ms cpu, 10->11->5 MB, 12 MB goal, 0 MB stacks, 0 MB globals, 2 P`,
		evicted("programs-0/a", "RemovePodsViolatingNodeTaints", "kwok-node-0001"),
		end,
		end,
		evicted("programs-0/a", "RemovePodsViolatingNodeTaints", "kwok-node-0001"),
		end,
		evicted("programs-0/c", "RemovePodsViolatingNodeTaints", "kwok-node-0001"), // a cycle cut short
	}, "\n")
	got, err := cycles(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"RemovePodsViolatingNodeAffinity programs-1/b kwok-node-0000", "RemovePodsViolatingNodeTaints programs-0/a kwok-node-0001"},
		nil,
		{"RemovePodsViolatingNodeTaints programs-0/a kwok-node-0001"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("cycles (-want +got):\n%s", diff)
	}
	if _, err := cycles(strings.NewReader(`I1 x] "Evicted pod in dry run mode" reason=""`)); err == nil {
		t.Errorf("an eviction line without its pod: no error")
	}
}

func TestDifference(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b []string
		want string
	}{
		{"equal", []string{"x", "y"}, []string{"x", "y"}, ""},
		{"one each way", []string{"x", "y"}, []string{"x", "z"}, "    - y\n    + z\n"},
		{"repeats", []string{"x", "x"}, []string{"x"}, "    same lines, 2 against 1 (repeats)\n"},
		{"cut", []string{"a", "b", "c"}, nil, "    - a\n    ... 2 more\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			max := 20
			if tc.name == "cut" {
				max = 1
			}
			if got := difference(tc.a, tc.b, max); got != tc.want {
				t.Errorf("difference = %q, want %q", got, tc.want)
			}
		})
	}
}

// writeRuns lays out what run.sh leaves for report: KWOK runs with the
// given end states and descheduler runs logging the given evictions.
func writeRuns(t *testing.T, kwokState map[string]string, evictions map[string][]string) string {
	t.Helper()
	runs := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for v, live := range map[string]float64{"stock": 200, "kcache": 100} {
		dir := filepath.Join(runs, "kwok-1-"+v)
		must(os.MkdirAll(dir, 0o755))
		must(runstats.Write(filepath.Join(dir, "measure.json"), runstats.Process{
			CPU: 60 * time.Second, MaxRSSMB: 2 * live, Wall: 100 * time.Second,
			GCs: []runstats.GC{{At: 10 * time.Second, StartMB: 3 * live, LiveMB: live / 2}, {At: 95 * time.Second, StartMB: live * 1.5, LiveMB: live}},
		}))
		must(runstats.Write(filepath.Join(dir, "setup.json"), map[string]any{"nodes_ready": 1500 * time.Millisecond, "all_running": 90 * time.Second, "lag_after_create": 2 * time.Second}))
		must(os.WriteFile(filepath.Join(dir, "window.txt"), []byte("1000\n1090\n1098\n"), 0o644))
		must(os.WriteFile(filepath.Join(dir, "endstate.txt"), []byte(kwokState[v]), 0o644))
		must(os.WriteFile(filepath.Join(dir, "kwok.log"), []byte(`{"level":"ERROR","msg":"failed to apply stage","err":"x"}`+"\n{\"msg\":\"Patch pod\"}\n"), 0o644))
		for r := 1; r <= 2; r++ {
			dir := filepath.Join(runs, fmt.Sprintf("descheduler-%d-%s", r, v))
			must(os.MkdirAll(dir, 0o755))
			must(runstats.Write(filepath.Join(dir, "measure.json"), runstats.Process{
				CPU: 5 * time.Second, MaxRSSMB: live, Wall: 10 * time.Second, GCs: []runstats.GC{{At: time.Second, StartMB: live}},
			}))
			var log strings.Builder
			for c := 1; c <= 3; c++ {
				if c > 1 { // the first cycle decides on a mirror still filling
					for _, e := range evictions[v] {
						fmt.Fprintf(&log, "I1 x] \"Evicted pod in dry run mode\" pod=%q reason=\"\" strategy=\"RemovePodsViolatingNodeTaints\" node=\"n1\"\n", e)
					}
				}
				fmt.Fprintf(&log, "I1 x] \"Number of evictions/requests\" totalEvicted=%d\n", len(evictions[v]))
			}
			must(os.WriteFile(filepath.Join(dir, "descheduler.log"), []byte(log.String()), 0o644))
		}
	}
	must(os.WriteFile(filepath.Join(runs, "header.txt"), []byte("# header\n"), 0o644))
	return runs
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

func TestReport_LastLine(t *testing.T) {
	same := map[string]string{"stock": "node a ready=true\npod x phase=Running\n", "kcache": "node a ready=true\npod x phase=Running\n"}
	for _, tc := range []struct {
		name      string
		state     map[string]string
		evictions map[string][]string
		want      string
	}{
		{"equal", same, map[string][]string{"stock": {"ns/a", "ns/b"}, "kcache": {"ns/b", "ns/a"}},
			"programs: descheduler decisions equal = true, heap = 0.50; kwok end state equal = true, heap = 0.50"},
		{"a different decision", same, map[string][]string{"stock": {"ns/a", "ns/b"}, "kcache": {"ns/a"}},
			"programs: descheduler decisions equal = false, heap = 0.50; kwok end state equal = true, heap = 0.50"},
		{"no decision at all", same, map[string][]string{},
			"programs: descheduler decisions equal = false, heap = 0.50; kwok end state equal = true, heap = 0.50"},
		{"a different end state", map[string]string{"stock": "node a ready=true\npod x phase=Running\n", "kcache": "node a ready=true\npod x phase=Pending\n"},
			map[string][]string{"stock": {"ns/a"}, "kcache": {"ns/a"}},
			"programs: descheduler decisions equal = true, heap = 0.50; kwok end state equal = false, heap = 0.50"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runs := writeRuns(t, tc.state, tc.evictions)
			var b strings.Builder
			if err := report(&b, runs, filepath.Join(runs, "header.txt"), 2, 1, 3); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(b.String(), "| time until every node is Ready (from the first node create; pods are created after) | 1.5 s | 1.5 s | 1.00 |") {
				t.Errorf("no nodes-Ready row in\n%s", b.String())
			}
			if !strings.Contains(b.String(), "kwok-1-kcache: every pod ran after 90.0 s, live heap 100.0 MB, peak heap 300.0 MB, peak RSS 200.0 MB, CPU 60.0 s, stages failed and retried 1") {
				t.Errorf("the per-run line of kwok-1-kcache is missing or wrong:\n%s", b.String())
			}
			if got := lastLine(b.String()); got != tc.want {
				t.Errorf("last line:\n got %s\nwant %s\nwhole report:\n%s", got, tc.want, b.String())
			}
		})
	}
}

func TestReport_MissingRunIsAnError(t *testing.T) {
	runs := writeRuns(t, map[string]string{"stock": "a\nb\n", "kcache": "a\nb\n"}, nil)
	if err := os.RemoveAll(filepath.Join(runs, "descheduler-2-kcache")); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := report(&b, runs, filepath.Join(runs, "header.txt"), 2, 1, 3); err == nil {
		t.Errorf("a round missing: no error")
	}
	if err := report(&b, writeRuns(t, map[string]string{"stock": "a\nb\n", "kcache": "a\nb\n"}, nil), filepath.Join(runs, "header.txt"), 1, 1, 4); err == nil {
		t.Errorf("fewer cycles than asked for: no error")
	}
}
