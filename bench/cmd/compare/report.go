package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/kcache/cache/bench/internal/harness"
	"github.com/kcache/cache/bench/internal/libclientgo"
	"github.com/kcache/cache/bench/internal/libkcache"
	"github.com/kcache/cache/bench/internal/stats"
)

const (
	cg = libclientgo.LibName
	kc = libkcache.LibName
)

// report is everything a comparison measured.
type report struct {
	rounds, memRounds int
	sizes             harness.Sizes
	mem               harness.MemConfig
	libs              []string
	started           time.Time
	elapsed           time.Duration
	loadStart         string // 1-minute load average, or "?"
	loadEnd           string
	rows              []*row
	memory            *memRow // nil when the probe did not run
}

// sample is one figure of every run of one row for one library.
func (r *row) sample(lib string, f func(harness.Result) float64) []float64 {
	var vs []float64
	for _, res := range r.results[lib] {
		vs = append(vs, f(res))
	}
	return vs
}

// stat is the median of one figure of one row for one library.
func (r *row) stat(lib string, f func(harness.Result) float64) float64 {
	return stats.Median(r.sample(lib, f))
}

// delta is benchstat's verdict on kcache against client-go for f: the
// change of the median, or "~" when the U test finds no significant
// difference, with the p-value and rounds. Its warnings (too few rounds
// for a verdict, say) go to notes.
func (r *row) delta(f func(harness.Result) float64, notes *[]string) string {
	base, next := r.sample(cg, f), r.sample(kc, f)
	c, ok := stats.Compare(base, next)
	if !ok {
		return missing
	}
	for _, msg := range stats.Warnings(c.Warnings) {
		if !slices.Contains(*notes, msg) {
			*notes = append(*notes, msg)
		}
	}
	return stats.Delta(base, next)
}

// withInterval appends the confidence interval of the median of vs, as
// benchstat prints it ("± 3%"), to the formatted median; nothing when the
// rounds are too few for a finite one.
func withInterval(formatted string, vs []float64) string {
	s := stats.Summarize(vs)
	if math.IsInf(s.Lo, 0) || math.IsInf(s.Hi, 0) || math.IsNaN(s.Lo) || math.IsNaN(s.Hi) {
		return formatted
	}
	return formatted + " ± " + s.PctRangeString()
}

func nsPerOp(r harness.Result) float64     { return r.NsPerOp }
func cpuNsPerOp(r harness.Result) float64  { return r.CPUNsPerOp }
func allocsPerOp(r harness.Result) float64 { return r.AllocsPerOp }
func bytesPerOp(r harness.Result) float64  { return r.BytesPerOp }

func extra(name string) func(harness.Result) float64 {
	return func(r harness.Result) float64 {
		if v, ok := r.Extra[name]; ok {
			return v
		}
		return math.NaN()
	}
}

// pair is one figure for both libraries.
type pair struct{ cg, kc float64 }

func (p pair) ratio() float64 { return stats.Ratio(p.kc, p.cg) }

// roundedRatio is the ratio of the figures rounded to unit, so that
// background allocations of the runtime (0.001 allocs/op against 0) do not
// turn equal figures into a wild ratio.
func (p pair) roundedRatio(unit float64) float64 {
	return stats.Ratio(math.Round(p.kc/unit)*unit, math.Round(p.cg/unit)*unit)
}

// allocsRatio and bytesRatio compare allocs/op to a hundredth and B/op to
// a byte.
func (p pair) allocsRatio() float64 { return p.roundedRatio(0.01) }
func (p pair) bytesRatio() float64  { return p.roundedRatio(1) }

func (r *row) pair(f func(harness.Result) float64) pair {
	return pair{cg: r.stat(cg, f), kc: r.stat(kc, f)}
}

// table writes a markdown table.
func table(w io.Writer, header []string, rows [][]string) {
	fmt.Fprintf(w, "| %s |\n", strings.Join(header, " | "))
	seps := make([]string, len(header))
	for i := range seps {
		seps[i] = "---:"
	}
	seps[0] = "---"
	fmt.Fprintf(w, "| %s |\n", strings.Join(seps, " | "))
	for _, r := range rows {
		fmt.Fprintf(w, "| %s |\n", strings.Join(r, " | "))
	}
	fmt.Fprintln(w)
}

// loadAverage is the 1-minute load average, "?" where unknown.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	if f := strings.Fields(string(b)); len(f) > 0 {
		return f[0]
	}
	return "?"
}

func (rep *report) rowsOf(groups ...harness.Group) []*row {
	var out []*row
	for _, r := range rep.rows {
		for _, g := range groups {
			if r.group == g {
				out = append(out, r)
			}
		}
	}
	return out
}

func (rep *report) find(name string) *row {
	for _, r := range rep.rows {
		if r.name == name {
			return r
		}
	}
	return nil
}

func (rep *report) write(w io.Writer) {
	fmt.Fprintf(w, "## kcache vs client-go\n\n")
	fmt.Fprintf(w, "%s %s/%s, GOMAXPROCS %d; libraries %s; %d rounds per library, alternating in one process; "+
		"medians, compared the way benchstat does (golang.org/x/perf/benchmath). ratio = kcache / client-go: lower is better for time, allocs and bytes, higher for events/s. "+
		"Run took %s; load average %s at the start, %s at the end.\n\n",
		runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.GOMAXPROCS(0), strings.Join(rep.libs, ", "),
		rep.rounds, rep.elapsed.Round(time.Second), rep.loadStart, rep.loadEnd)
	rep.writeMicro(w)
	rep.writeInformer(w)
	rep.writeWriteRate(w)
	rep.writeMemory(w)
	rep.writeTargets(w)
	rep.writeErrors(w)
}

func (rep *report) writeMicro(w io.Writer) {
	rows := rep.rowsOf(harness.GroupIndexer, harness.GroupQueue, harness.GroupLister)
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(w, "### Indexer, queues and listers (%d pods, three indexes)\n\n", rep.sizes.Pods)
	var cells [][]string
	var times, cpus, allocs, bytes []float64
	var notes []string
	for _, r := range rows {
		t, c, a, b := r.pair(nsPerOp), r.pair(cpuNsPerOp), r.pair(allocsPerOp), r.pair(bytesPerOp)
		times, cpus = append(times, t.ratio()), append(cpus, c.ratio())
		allocs, bytes = append(allocs, a.allocsRatio()), append(bytes, b.bytesRatio())
		cells = append(cells, []string{
			r.name,
			withInterval(fmtNs(t.cg), r.sample(cg, nsPerOp)), withInterval(fmtNs(t.kc), r.sample(kc, nsPerOp)),
			fmtRatio(t.ratio()), r.delta(nsPerOp, &notes), fmtRatio(c.ratio()),
			fmtCount(a.cg), fmtCount(a.kc), fmtRatio(a.allocsRatio()),
			fmtBytes(b.cg), fmtBytes(b.kc), fmtRatio(b.bytesRatio()),
		})
	}
	gt, _ := stats.GeoMean(times)
	gc, _ := stats.GeoMean(cpus)
	ga, _ := stats.GeoMean(allocs)
	gb, _ := stats.GeoMean(bytes)
	cells = append(cells, []string{"**geometric mean**", "", "", fmtRatio(gt), "", fmtRatio(gc), "", "", fmtRatio(ga), "", "", fmtRatio(gb)})
	table(w, []string{"workload", "client-go time/op", "kcache time/op", "ratio", "vs client-go", "cpu ratio",
		"client-go allocs/op", "kcache allocs/op", "ratio", "client-go B/op", "kcache B/op", "ratio"}, cells)
	fmt.Fprintf(w, "Update: every pod in turn to a newer version and back, one in ten moving node. "+
		"ByIndex/IndexKeys: namespace, node and app indexes in turn. "+
		"Replace (queues): Replace with every pod, then pop until empty (Pop for DeltaFIFO, PopBatch for RealFIFO). "+
		"Listers: selector tier=web (a quarter of the pods). "+
		"vs client-go: benchstat's verdict on the time, the change of the median or ~ when the Mann-Whitney U test finds "+
		"no significant difference (p ≥ 0.05), with the p-value and the rounds per library; ± is the 95%% confidence "+
		"interval of the median, printed from 6 rounds on. "+
		"cpu ratio: the ratio of process CPU time (all goroutines and the GC), which other load on the machine barely moves.\n\n")
	writeNotes(w, notes)
}

// writeNotes lists benchstat's warnings about a table, if any.
func writeNotes(w io.Writer, notes []string) {
	if len(notes) > 0 {
		fmt.Fprintf(w, "benchstat: %s.\n\n", strings.Join(notes, "; "))
	}
}

func (rep *report) writeInformer(w io.Writer) {
	rows := rep.rowsOf(harness.GroupInformer)
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(w, "### SharedIndexInformer: %d Modified events over %d pods, until every handler saw the last version of every pod\n\n",
		rep.sizes.Events, rep.sizes.InformerPods)
	var cells [][]string
	var notes []string
	for _, r := range rows {
		e, c, a, b := r.pair(extra("events/s")), r.pair(cpuNsPerOp), r.pair(allocsPerOp), r.pair(bytesPerOp)
		d := r.pair(extra("delivered"))
		cells = append(cells, []string{
			r.name,
			fmtCount(e.cg), fmtCount(e.kc), fmtRatio(e.ratio()), r.delta(extra("events/s"), &notes),
			fmtNs(c.cg), fmtNs(c.kc), fmtRatio(c.ratio()),
			fmtCount(a.cg), fmtCount(a.kc), fmtRatio(a.allocsRatio()),
			fmtBytes(b.cg), fmtBytes(b.kc), fmtRatio(b.bytesRatio()),
			fmtCount(d.cg), fmtCount(d.kc),
		})
	}
	table(w, []string{"workload", "client-go events/s", "kcache events/s", "ratio", "vs client-go",
		"client-go cpu/event", "kcache cpu/event", "ratio", "client-go allocs/event", "kcache allocs/event", "ratio", "client-go B/event", "kcache B/event", "ratio", "client-go delivered", "kcache delivered"}, cells)
	fmt.Fprintf(w, "Timed until every handler saw the last version of every pod. delivered: notifications the "+
		"handler that received the fewest received, median per run; every handler must receive every notification "+
		"(one add per pod, one update per event), and a run in which one fell short fails. "+
		"vs client-go: benchstat's verdict on events/s, as in the table above.\n\n")
	writeNotes(w, notes)
}

func (rep *report) writeWriteRate(w io.Writer) {
	rows := rep.rowsOf(harness.GroupWriteRate)
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(w, "### Write rate while goroutines loop ListAllByNamespace (tier=web) on the informer's %d-pod namespace\n\n",
		rep.sizes.InformerPods)
	base := rep.find("WriteRate/0readers")
	var basePair pair
	if base != nil {
		basePair = base.pair(extra("events/s"))
	} else {
		basePair = pair{math.NaN(), math.NaN()}
	}
	var cells [][]string
	var notes []string
	for _, r := range rows {
		e, l := r.pair(extra("events/s")), r.pair(extra("lists/s"))
		cells = append(cells, []string{
			r.name,
			fmtCount(e.cg), fmtCount(e.kc), fmtRatio(e.ratio()), r.delta(extra("events/s"), &notes),
			fmtRatio(stats.Ratio(e.cg, basePair.cg)), fmtRatio(stats.Ratio(e.kc, basePair.kc)),
			fmtCount(l.cg), fmtCount(l.kc),
		})
	}
	table(w, []string{"workload", "client-go events/s", "kcache events/s", "ratio", "vs client-go",
		"client-go vs its 0 readers", "kcache vs its 0 readers", "client-go lists/s", "kcache lists/s"}, cells)
	fmt.Fprintf(w, "Events are applied updates seen by one handler, counted over %s; the feeder keeps at most 4096 in flight "+
		"and refills in batches of at least 2048. The vs-0-readers columns divide by the same library's 0-reader rate.\n\n",
		rep.sizes.Window)
	writeNotes(w, notes)
}

// memStat is the median of one memory figure for one library.
func (m *memRow) stat(lib string, f func(harness.MemResult) float64) float64 {
	if m == nil {
		return math.NaN()
	}
	var vs []float64
	for _, res := range m.results[lib] {
		vs = append(vs, f(res))
	}
	return stats.Median(vs)
}

func (m *memRow) pair(f func(harness.MemResult) float64) pair {
	return pair{cg: m.stat(cg, f), kc: m.stat(kc, f)}
}

func perSteady(f func(harness.MemResult) float64) func(harness.MemResult) float64 {
	return func(m harness.MemResult) float64 { return f(m) / m.SteadyBytes }
}

func (rep *report) writeMemory(w io.Writer) {
	m := rep.memory
	if m == nil {
		return
	}
	how := "streaming list (watch-list, the informer default)"
	if !rep.mem.WatchList {
		how = "list, paged on relist"
	}
	fmt.Fprintf(w, "### Memory: informer syncing %d fresh pods by %s, then relisting after a 410 with 1 pod in %d changed "+
		"(child process per library and round, %d rounds; bytes above the heap before the informer started)\n\n",
		rep.mem.Pods, how, rep.mem.ChangedEvery, rep.memRounds)
	type line struct {
		name  string
		f     func(harness.MemResult) float64
		print func(float64) string
	}
	lines := []line{
		{"heap per cached pod", harness.MemResult.PerPod, fmtBytes},
		{"(one pod object alone, for reference)", func(m harness.MemResult) float64 { return m.ObjectBytes }, fmtBytes},
		{"cache overhead per pod (the two lines above subtracted)", func(m harness.MemResult) float64 { return m.PerPod() - m.ObjectBytes }, fmtBytes},
		{"steady cache (HeapInuse after sync and GC)", func(m harness.MemResult) float64 { return m.SteadyBytes }, fmtBytes},
		{"peak HeapInuse during initial sync", func(m harness.MemResult) float64 { return m.SyncPeakInuse }, fmtBytes},
		{"(that peak minus the steady cache: the sync's transient)", func(m harness.MemResult) float64 { return m.SyncPeakInuse - m.SteadyBytes }, fmtBytes},
		{"peak live heap during initial sync", func(m harness.MemResult) float64 { return m.SyncPeakLive }, fmtBytes},
		{"peak HeapInuse during relist, × steady", perSteady(func(m harness.MemResult) float64 { return m.RelistPeakInuse }), fmtRatio},
		{"peak live heap during relist, × steady", perSteady(func(m harness.MemResult) float64 { return m.RelistPeakLive }), fmtRatio},
		{"HeapInuse after relist and GC", func(m harness.MemResult) float64 { return m.AfterRelistBytes }, fmtBytes},
		{"initial sync time", func(m harness.MemResult) float64 { return m.SyncSeconds }, fmtSeconds},
		{"relist time (from the 410)", func(m harness.MemResult) float64 { return m.RelistSeconds }, fmtSeconds},
	}
	var cells [][]string
	for _, l := range lines {
		p := m.pair(l.f)
		cells = append(cells, []string{l.name, l.print(p.cg), l.print(p.kc), fmtRatio(p.ratio())})
	}
	table(w, []string{"figure", "client-go", "kcache", "ratio"}, cells)
	fmt.Fprintf(w, "HeapInuse is sampled every ms (runtime/metrics); the live heap is the one the last GC marked, "+
		"so its peak ignores garbage not yet collected.\n\n")
}

// target is one goal of the issue and how the run fared.
type target struct {
	goal, measured string
	met            bool
	known          bool // false when the run did not measure it
}

func (rep *report) targets() []target {
	var ts []target
	micro := rep.rowsOf(harness.GroupIndexer, harness.GroupQueue, harness.GroupLister)
	if len(micro) > 0 {
		var times, cpus []float64
		var slowT, slowC, slowA []string
		over := func(list []string, name string, r float64) []string {
			if atMost(r, 1) {
				return list
			}
			return append(list, fmt.Sprintf("%s %s", name, fmtRatio(r)))
		}
		for _, r := range micro {
			t, c, a := r.pair(nsPerOp).ratio(), r.pair(cpuNsPerOp).ratio(), r.pair(allocsPerOp).allocsRatio()
			times, cpus = append(times, t), append(cpus, c)
			slowT, slowC, slowA = over(slowT, r.name, t), over(slowC, r.name, c), over(slowA, r.name, a)
		}
		ts = append(ts,
			target{"every indexer, queue and lister workload: time ratio ≤ 1.0", listOrAll(slowT, len(micro)), len(slowT) == 0, true},
			target{"(the same on process CPU time)", listOrAll(slowC, len(micro)), len(slowC) == 0, true},
			target{"every indexer, queue and lister workload: allocs/op ratio ≤ 1.0", listOrAll(slowA, len(micro)), len(slowA) == 0, true})
		g, _ := stats.GeoMean(times)
		gc, _ := stats.GeoMean(cpus)
		ts = append(ts,
			target{"geometric mean of their time ratios ≤ 0.6", fmtRatio(g), atMost(g, 0.6), !math.IsNaN(g)},
			target{"(the same on process CPU time)", fmtRatio(gc), atMost(gc, 0.6), !math.IsNaN(gc)})
	}
	if r := rep.find("Informer/10handlers"); r != nil {
		p := r.pair(extra("events/s"))
		ts = append(ts, target{"informer events/s with 10 handlers ≥ 2× client-go's",
			fmt.Sprintf("%s× (%s vs %s events/s)", fmtRatio(p.ratio()), fmtCount(p.kc), fmtCount(p.cg)),
			atLeast(p.ratio(), 2), !math.IsNaN(p.ratio())})
	}
	if r0, r10 := rep.find("WriteRate/0readers"), rep.find("WriteRate/10readers"); r0 != nil && r10 != nil {
		own := stats.Ratio(r10.stat(kc, extra("events/s")), r0.stat(kc, extra("events/s")))
		ts = append(ts, target{"kcache write rate with 10 namespace listers ≥ 50% of its rate with none",
			fmt.Sprintf("%.0f%%", own*100), atLeast(own, 0.5), !math.IsNaN(own)})
	}
	if m := rep.memory; m != nil {
		peak := m.pair(func(r harness.MemResult) float64 { return r.SyncPeakInuse }).ratio()
		ts = append(ts, target{"peak heap during initial sync ≤ 0.6× client-go's", fmtRatio(peak) + "×", atMost(peak, 0.6), !math.IsNaN(peak)})
		per := m.pair(harness.MemResult.PerPod).ratio()
		ts = append(ts, target{"heap per cached pod ≤ 1.0× client-go's", fmtRatio(per) + "×", atMost(per, 1), !math.IsNaN(per)})
		relist := m.stat(kc, perSteady(func(r harness.MemResult) float64 { return r.RelistPeakInuse }))
		live := m.stat(kc, perSteady(func(r harness.MemResult) float64 { return r.RelistPeakLive }))
		// Judged on the live heap: HeapInuse peaks near twice the live heap
		// under GOGC=100 whenever the decoder allocates a full new copy of
		// the pods, whatever the cache does with it.
		ts = append(ts, target{"kcache peak heap during relist ≤ 1.2× its steady cache (live heap)",
			fmt.Sprintf("%s× live heap (%s× HeapInuse)", fmtRatio(live), fmtRatio(relist)), atMost(live, 1.2), !math.IsNaN(live)})
	}
	return ts
}

// atMost and atLeast compare a ratio as printed, to two decimals, so that
// the verdict agrees with the table (1.004 allocs/op ratio reads 1.00).
func atMost(r, limit float64) bool { return math.Round(r*100) <= math.Round(limit*100) }

func atLeast(r, limit float64) bool { return math.Round(r*100) >= math.Round(limit*100) }

func listOrAll(bad []string, n int) string {
	if len(bad) == 0 {
		return fmt.Sprintf("all %d within", n)
	}
	return fmt.Sprintf("%d of %d over: %s", len(bad), n, strings.Join(bad, ", "))
}

func (rep *report) writeTargets(w io.Writer) {
	ts := rep.targets()
	if len(ts) == 0 {
		return
	}
	fmt.Fprintf(w, "### Targets\n\n")
	var cells [][]string
	for _, t := range ts {
		verdict := "no"
		switch {
		case !t.known:
			verdict, t.measured = "not measured", missing
		case t.met:
			verdict = "yes"
		}
		cells = append(cells, []string{t.goal, t.measured, verdict})
	}
	table(w, []string{"target", "measured", "met"}, cells)
}

// errorCount is the number of runs that failed.
func (rep *report) errorCount() int { return len(rep.errors()) }

func (rep *report) writeErrors(w io.Writer) {
	errs := rep.errors()
	if len(errs) == 0 {
		return
	}
	fmt.Fprintf(w, "### Errors\n\n")
	for _, e := range errs {
		fmt.Fprintf(w, "- %s\n", strings.ReplaceAll(e, "\n", " "))
	}
	fmt.Fprintln(w)
}

// errors lists every failed run, named by its workload.
func (rep *report) errors() []string {
	var errs []string
	for _, r := range rep.rows {
		for _, e := range r.errs {
			errs = append(errs, r.name+": "+e)
		}
	}
	if rep.memory != nil {
		for _, e := range rep.memory.errs {
			errs = append(errs, "Memory: "+e)
		}
	}
	return errs
}
