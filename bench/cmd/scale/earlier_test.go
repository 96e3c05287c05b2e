package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// earlierFile is a result file as an earlier full run leaves it: sync rows
// at two counts and churn at the larger one.
const earlierFile = `# make bench-scale result
scale-row: pods=20000 variant=client-go list=stream heap-per-pod-bytes=25000 steady-heap-mib=476.8 peak-heap-mib=900.0 peak-rss-mib=1000.0 sync-s=10.00 sync-cpu-s=8.00
scale-row: pods=20000 variant=kcache list=stream heap-per-pod-bytes=9000 steady-heap-mib=171.7 peak-heap-mib=300.0 peak-rss-mib=400.0 sync-s=9.00 sync-cpu-s=7.00
scale-row: pods=100000 variant=client-go list=stream heap-per-pod-bytes=25000 steady-heap-mib=2384.2 peak-heap-mib=3000.0 peak-rss-mib=3000.0 sync-s=80.00 sync-cpu-s=40.00
scale-churn: pods=100000 variant=client-go events=1000 cpu-per-event-us=1000.0 cpu-per-event-gc-amortized-us=1.0 heap-per-pod-after-bytes=1
scale-row: pods=100000 variant=kcache list=stream heap-per-pod-bytes=8500 steady-heap-mib=810.6 peak-heap-mib=1200.0 peak-rss-mib=1200.0 sync-s=60.00 sync-cpu-s=30.00
scale-churn: pods=100000 variant=kcache events=1000 cpu-per-event-us=800.0 cpu-per-event-gc-amortized-us=1.0 heap-per-pod-after-bytes=1
scale-row: pods=100000 variant=kcache list=paged heap-per-pod-bytes=1 steady-heap-mib=1.0 peak-heap-mib=1.0 peak-rss-mib=1.0 sync-s=1.00 sync-cpu-s=1.00
scale: pods=100000 heap/pod kcache/client-go = 0.34, relist peak/steady kcache = -
`

func TestRelistOnlyRunCompletesItsSummaryFromTheEarlierFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "scale-earlier.txt")
	if err := os.WriteFile(path, []byte(earlierFile), 0o644); err != nil {
		t.Fatal(err)
	}
	opts, err := parseOptions([]string{"-pods", "100000", "-relist-only", "-rows-from", path}, &strings.Builder{})
	if err != nil {
		t.Fatal(err)
	}
	if got := steps(opts); len(got) != 1 || !got[0].relist || got[0].pods != 100_000 {
		t.Fatalf("steps = %+v, want the relist at 100000 only", got)
	}
	var b strings.Builder
	earlier, err := copyEarlier(opts.rowsFrom, &b)
	if err != nil {
		t.Fatal(err)
	}
	// The relist step measures its own sync too; the summary must still
	// take the sync figures from the earlier rows, as a full run takes
	// them from its sync step, not from the relist step.
	relisted := results{
		fake(100_000, "stream", "client-go", true, 30_000, 99),
		fake(100_000, "stream", "kcache", true, 9_000, 99),
		fake(100_000, "stream", "kcache-quiet", true, 9_000, 99),
	}
	if err := writeReport(&b, relisted, earlier, nil, opts); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	want := "scale: pods=100000 heap/pod kcache/client-go = 0.34, peak rss = 0.40, sync time = 0.75, sync cpu = 0.75, churn cpu/event = 0.80, relist peak/steady kcache = 1.50 client-go = 1.50, heap/pod growth 20k->100k kcache = 0.94, notifications after relist opt-in/default = 0/100000\n"
	if !strings.HasSuffix(out, want) {
		t.Errorf("last line:\n got: %s\nwant: %s", out[strings.LastIndex(strings.TrimSuffix(out, "\n"), "\n")+1:], want)
	}
	if n := strings.Count(out, "scale-row: "); n != 5 {
		t.Errorf("copied %d scale-row lines, want the file's 5:\n%s", n, out)
	}
	if !strings.Contains(out, "copied from "+path) || strings.Contains(out, "relist peak/steady kcache = -") {
		t.Errorf("copied block does not name its file, or copied the earlier summary:\n%s", out)
	}
}

func TestRowsFromRefusesAFileWithoutRows(t *testing.T) {
	path := filepath.Join(t.TempDir(), "empty.txt")
	if err := os.WriteFile(path, []byte("# nothing here\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := copyEarlier(path, &strings.Builder{}); err == nil || !strings.Contains(err.Error(), "no scale-row") {
		t.Fatalf("err = %v, want one saying the file has no rows", err)
	}
	if _, err := copyEarlier(filepath.Join(t.TempDir(), "missing.txt"), &strings.Builder{}); err == nil {
		t.Fatal("a missing file gave no error")
	}
}

func TestRelistOnlyNeedsTheRelistCountAmongThePods(t *testing.T) {
	if _, err := parseOptions([]string{"-pods", "5000", "-relist-at", "100000", "-relist-only"}, &strings.Builder{}); err == nil {
		t.Fatal("no error for a relist count outside -pods")
	}
}

func TestRelistOnlyReportHasNoEmptySyncTables(t *testing.T) {
	var b strings.Builder
	rs := results{fake(1000, "stream", "kcache", true, 5000, 1)}
	if err := writeReport(&b, rs, nil, nil, options{pods: []int{1000}}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "### initial sync") || !strings.Contains(b.String(), "### forced relist") {
		t.Errorf("report of a relist-only run:\n%s", b.String())
	}
}
