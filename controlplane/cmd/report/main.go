// Command report turns the control-plane runs (the driver's result.json and
// endstate.txt per run) and the scheduler_perf figures into the result file
// of make bench-control-plane. See controlplane/README.md.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/kcache/cache/controlplane/internal/runresult"
)

// result is one run as the driver recorded it (result.json), with the run's
// directory and its end state.
type result struct {
	runresult.Result

	dir   string
	state []string
}

func main() {
	runs := flag.String("runs", "", "directory of the runs (ROUND-VARIANT/)")
	header := flag.String("header", "", "file copied at the top")
	times := flag.String("times", "", "times.tsv of run.sh (step, seconds)")
	schedPerf := flag.String("sched-perf", "", "scheduler_perf figures (workload, variant, metric, value), may be empty")
	profiles := flag.String("profiles", "", "summary of the components' profiles, copied before the wall times; may be empty")
	out := flag.String("out", "", "result file")
	flag.Parse()

	dirs, err := filepath.Glob(filepath.Join(*runs, "*-*"))
	if err != nil || len(dirs) == 0 {
		log.Fatalf("report: no runs under %s", *runs)
	}
	// In the order they ran: run.sh alternates the variants' order by round.
	mtime := func(d string) int64 {
		st, err := os.Stat(filepath.Join(d, "result.json"))
		if err != nil {
			log.Fatalf("report: %v", err)
		}
		return st.ModTime().UnixNano()
	}
	sort.Slice(dirs, func(i, j int) bool { return mtime(dirs[i]) < mtime(dirs[j]) })
	byVariant := map[string][]*result{}
	var all []*result
	for _, d := range dirs {
		var r result
		b, err := os.ReadFile(filepath.Join(d, "result.json"))
		if err != nil {
			log.Fatalf("report: %v", err)
		}
		if err := json.Unmarshal(b, &r); err != nil {
			log.Fatalf("report: %s: %v", d, err)
		}
		st, err := os.ReadFile(filepath.Join(d, "endstate.txt"))
		if err != nil {
			log.Fatalf("report: %v", err)
		}
		r.dir, r.state = filepath.Base(d), strings.Split(strings.TrimSpace(string(st)), "\n")
		byVariant[r.Variant] = append(byVariant[r.Variant], &r)
		all = append(all, &r)
	}
	stock, kc := byVariant["stock"], byVariant["kcache"]
	if len(stock) == 0 || len(kc) == 0 {
		log.Fatal("report: need at least one stock and one kcache run")
	}

	var w strings.Builder
	if *header != "" {
		b, err := os.ReadFile(*header)
		if err != nil {
			log.Fatal(err)
		}
		w.Write(b)
	}
	p := func(f string, a ...any) { fmt.Fprintf(&w, f, a...) }
	p("scenario: %d pods (deployments, statefulsets, jobs) in %d namespaces on %d KWOK nodes; runs in order: %s\n",
		stock[0].Pods, stock[0].Namespaces, stock[0].Nodes, runNames(all))
	p("figures:  the median over the runs of each variant; heap = go_memstats_heap_inuse_bytes, RSS = process_resident_memory_bytes,\n")
	p("          CPU = process_cpu_seconds_total, all from each component's /metrics, scraped every 2 s; steady = median of an idle\n")
	p("          window after the create phase converged (every pod running), opened by a garbage collection in each component\n")
	p("          (its heap profile with gc=1, kept in the run's directory); peak = largest sample of the run\n\n")

	type row struct {
		name string
		get  func(*result) float64
		unit string
	}
	mib := func(x float64) float64 { return x / (1 << 20) }
	var rows []row
	for _, c := range []struct{ key, label string }{{"kcm", "kube-controller-manager"}, {"scheduler", "kube-scheduler"}} {
		rows = append(rows,
			row{c.label + " heap, steady", func(r *result) float64 { return mib(r.Steady[c.key].Heap) }, "MiB"},
			row{c.label + " RSS, steady", func(r *result) float64 { return mib(r.Steady[c.key].RSS) }, "MiB"},
			row{c.label + " heap, peak", func(r *result) float64 { return mib(r.Peak[c.key].Heap) }, "MiB"},
			row{c.label + " RSS, peak", func(r *result) float64 { return mib(r.Peak[c.key].RSS) }, "MiB"},
			row{c.label + " heap, steady at the end", func(r *result) float64 { return mib(r.SteadyEnd[c.key].Heap) }, "MiB"},
			row{c.label + " CPU, whole scenario", func(r *result) float64 { return cpu(r, c.key) }, "s"},
		)
	}
	rows = append(rows, row{"pods scheduled per second (create phase)", func(r *result) float64 { return r.ScheduledPS }, "pods/s"})
	for i, ph := range stock[0].Phases {
		rows = append(rows, row{"phase " + ph.Name + ": time to converge", func(r *result) float64 { return r.Phases[i].Seconds }, "s"})
	}
	for i, ph := range stock[0].Phases {
		rows = append(rows,
			row{"phase " + ph.Name + ": kube-controller-manager CPU", func(r *result) float64 { return r.Phases[i].CPU["kcm"] }, "s"},
			row{"phase " + ph.Name + ": kube-scheduler CPU", func(r *result) float64 { return r.Phases[i].CPU["scheduler"] }, "s"})
	}
	p("| figure | unit | stock | kcache | kcache/stock |\n|---|---|---:|---:|---:|\n")
	ratios := map[string]float64{}
	for _, r := range rows {
		s, k := med(stock, r.get), med(kc, r.get)
		ratios[r.name] = ratio(k, s)
		p("| %s | %s | %.1f | %.1f | %s |\n", r.name, r.unit, s, k, fmtRatio(ratios[r.name]))
	}
	p("\n")
	for _, r := range all {
		for _, ph := range r.Phases {
			if !ph.Converged {
				p("run %s: phase %s did not converge\n", r.dir, ph.Name)
			}
		}
	}

	// End states: every run against the first.
	equal := true
	p("end state: %d lines per run (object counts per kind and namespace, pods per owner chain, phase and readiness,\n", len(all[0].state))
	p("           endpoint slice members per service by owner chain and readiness; nodes, IPs and generated names left out)\n")
	for _, r := range all[1:] {
		d := diff(all[0].state, r.state)
		if len(d) == 0 {
			p("end state %s = %s\n", r.dir, all[0].dir)
			continue
		}
		equal = false
		p("end state %s differs from %s in %d lines:\n", r.dir, all[0].dir, len(d))
		for _, l := range d[:min(len(d), 20)] {
			p("    %s\n", l)
		}
	}
	p("\n")

	// scheduler_perf.
	spMin, spN := math.NaN(), 0
	if *schedPerf != "" {
		spMin, spN = schedulerPerf(&w, *schedPerf)
	}
	if *profiles != "" {
		if b, err := os.ReadFile(*profiles); err == nil && len(b) > 0 {
			p("%s\n", strings.TrimRight(string(b), "\n"))
		}
	}
	if *times != "" {
		if b, err := os.ReadFile(*times); err == nil && len(b) > 0 {
			p("wall times (s):\n")
			for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				p("    %s\n", strings.ReplaceAll(l, "\t", " "))
			}
			p("\n")
		}
	}
	p("control-plane: pods=%d kcm heap kcache/stock = %s, scheduler heap = %s, kcm cpu = %s, scheduler cpu = %s, end states equal = %v, scheduler_perf throughput kcache/stock min = %s over %d workloads\n",
		stock[0].Pods, fmtRatio(ratios["kube-controller-manager heap, steady"]), fmtRatio(ratios["kube-scheduler heap, steady"]),
		fmtRatio(ratios["kube-controller-manager CPU, whole scenario"]), fmtRatio(ratios["kube-scheduler CPU, whole scenario"]),
		equal, fmtRatio(spMin), spN)
	if err := os.WriteFile(*out, []byte(w.String()), 0o644); err != nil {
		log.Fatal(err)
	}
}

func runNames(rs []*result) string {
	var names []string
	for _, r := range rs {
		names = append(names, r.dir)
	}
	return strings.Join(names, ", ")
}

func cpu(r *result, key string) float64 {
	t := 0.0
	for _, ph := range r.Phases {
		t += ph.CPU[key]
	}
	return t
}

func med(rs []*result, get func(*result) float64) float64 {
	var xs []float64
	for _, r := range rs {
		xs = append(xs, get(r))
	}
	return median(xs)
}

// median of xs (the mean of the middle two for an even count).
func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return math.NaN()
	}
	return a / b
}

func fmtRatio(x float64) string {
	if math.IsNaN(x) {
		return "n/a"
	}
	return strconv.FormatFloat(x, 'f', 2, 64)
}

// diff returns the lines only one of a and b has, marked - (a) and + (b).
func diff(a, b []string) []string {
	count := map[string]int{}
	for _, l := range a {
		count[l]++
	}
	for _, l := range b {
		count[l]--
	}
	var out []string
	for l, n := range count {
		switch {
		case n > 0:
			out = append(out, "- "+l)
		case n < 0:
			out = append(out, "+ "+l)
		}
	}
	sort.Strings(out)
	return out
}

// schedulerPerf prints the scheduler_perf table from lines "workload
// variant metric value" (metric: Average, Perc50, Perc90, Perc99 of
// SchedulingThroughput in pods/s) and returns the smallest kcache/stock
// ratio of the averages and the number of workloads with both.
func schedulerPerf(w *strings.Builder, path string) (float64, int) {
	f, err := os.Open(path)
	if err != nil {
		return math.NaN(), 0
	}
	defer f.Close()
	vals := map[string]map[string][]float64{} // workload -> variant/metric -> values
	var order []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) != 4 {
			continue
		}
		v, err := strconv.ParseFloat(fs[3], 64)
		if err != nil {
			continue
		}
		if vals[fs[0]] == nil {
			vals[fs[0]] = map[string][]float64{}
			order = append(order, fs[0])
		}
		vals[fs[0]][fs[1]+"/"+fs[2]] = append(vals[fs[0]][fs[1]+"/"+fs[2]], v)
	}
	if len(order) == 0 {
		fmt.Fprintf(w, "scheduler_perf: not run\n\n")
		return math.NaN(), 0
	}
	m := func(xs []float64) float64 {
		if len(xs) == 0 {
			return math.NaN()
		}
		return median(xs)
	}
	fmt.Fprintf(w, "scheduler_perf (test/integration/scheduler_perf, unedited), SchedulingThroughput in pods/s, median over runs:\n\n")
	fmt.Fprintf(w, "| workload | stock avg | kcache avg | kcache/stock | stock p50 | kcache p50 | stock p90 | kcache p90 | runs per side |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	lowest, n := math.NaN(), 0
	for _, wl := range order {
		v := vals[wl]
		r := ratio(m(v["kcache/Average"]), m(v["stock/Average"]))
		if !math.IsNaN(r) {
			n++
			if math.IsNaN(lowest) || r < lowest {
				lowest = r
			}
		}
		fmt.Fprintf(w, "| %s | %.1f | %.1f | %s | %.1f | %.1f | %.1f | %.1f | %d |\n", wl, m(v["stock/Average"]), m(v["kcache/Average"]), fmtRatio(r),
			m(v["stock/Perc50"]), m(v["kcache/Perc50"]), m(v["stock/Perc90"]), m(v["kcache/Perc90"]), len(v["kcache/Average"]))
	}
	fmt.Fprintf(w, "\n")
	return lowest, n
}
