package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/kcache/cache/bench/internal/e2e"
	"github.com/kcache/cache/bench/internal/harness"
)

// e2eResult is one variant's result as cmd/e2e writes it with -json.
type e2eResult struct {
	Variant e2e.Variant
	harness.E2EResult
	Churn *harness.ChurnResult
}

// measured is a result with the step that measured it.
type measured struct {
	step
	e2eResult
}

const mib = 1 << 20

// row is the machine-readable line of a sync measurement.
func (m measured) row() string {
	return fmt.Sprintf("scale-row: pods=%d variant=%s list=%s heap-per-pod-bytes=%.0f steady-heap-mib=%.1f peak-heap-mib=%.1f peak-rss-mib=%.1f sync-s=%.2f sync-cpu-s=%.2f",
		m.pods, m.Variant.Name(), m.list, m.HeapPerPod(), m.SteadyHeap/mib, m.SyncPeakHeap/mib, m.SyncPeakRSS/mib,
		m.SyncSeconds, m.SyncCPUSeconds)
}

// relistRow is the machine-readable line of a relist measurement.
func (m measured) relistRow() string {
	return fmt.Sprintf("scale-relist: pods=%d variant=%s relist-s=%.2f relist-cpu-s=%.2f peak-heap-mib=%.1f steady-heap-mib=%.1f peak/steady=%.2f peak-rss-mib=%.1f notifications=%d adds=%d updates=%d deletes=%d",
		m.pods, m.Variant.Name(), m.RelistSeconds, m.RelistCPUSeconds, m.RelistPeakHeap/mib, m.SteadyHeap/mib,
		ratio(m.RelistPeakHeap, m.SteadyHeap), m.RelistPeakRSS/mib, m.notifications(), m.RelistAdds, m.RelistUpdates, m.RelistDeletes)
}

// churnRow is the machine-readable line of a churn measurement.
func (m measured) churnRow() string {
	c := m.Churn
	return fmt.Sprintf("scale-churn: pods=%d variant=%s events=%d cpu-per-event-us=%.1f cpu-per-event-gc-amortized-us=%.1f heap-per-pod-after-bytes=%.0f",
		m.pods, m.Variant.Name(), c.Events, c.CPUPerEvent()*1e6, c.CPUPerEventGCAmortized()*1e6, c.HeapPerPodAfter())
}

func (m measured) notifications() int64 { return m.RelistAdds + m.RelistUpdates + m.RelistDeletes }

// results is every measurement of a run, with lookups.
type results []measured

// sync returns the sync measurement of variant at pods with list, from the
// step without a relist (the relist step measures its sync again).
func (rs results) sync(pods int, variant, list string) (measured, bool) {
	for _, m := range rs {
		if m.pods == pods && m.list == list && !m.relist && m.Variant.Name() == variant {
			return m, true
		}
	}
	return measured{}, false
}

// relisted returns the relist measurement of variant.
func (rs results) relisted(variant string) (measured, bool) {
	for _, m := range rs {
		if m.relist && m.Variant.Name() == variant {
			return m, true
		}
	}
	return measured{}, false
}

// churned returns the churn measurement of variant at pods.
func (rs results) churned(pods int, variant string) (measured, bool) {
	for _, m := range rs {
		if m.pods == pods && m.Churn != nil && m.Variant.Name() == variant {
			return m, true
		}
	}
	return measured{}, false
}

// writeLines prints the machine-readable lines of one step's results.
func writeLines(w io.Writer, ms []measured) error {
	var b strings.Builder
	for _, m := range ms {
		switch {
		case m.relist:
			b.WriteString(m.relistRow() + "\n")
		default:
			b.WriteString(m.row() + "\n")
		}
		if m.Churn != nil {
			b.WriteString(m.churnRow() + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeReport prints, once every step has run (their lines went out with
// each step), the tables, the simulation's lines and the summary line,
// last.
func writeReport(w io.Writer, all, earlier []measured, sim []string, opts options) error {
	rs := results(all)
	var b strings.Builder
	for _, list := range []string{"stream", "paged"} {
		syncTable(&b, rs, opts.pods, list)
	}
	churnTable(&b, rs)
	relistTable(&b, rs)
	b.WriteString("\n")
	for _, l := range sim {
		b.WriteString(l + "\n")
	}
	// This run's figures come first: a lookup returns the first match.
	b.WriteString("\n" + summary(append(slices.Clip(rs), earlier...), opts) + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// syncTable prints, per pod count, each variant's figures after the
// initial sync with list, and kcache's ratios to client-go.
func syncTable(b *strings.Builder, rs results, counts []int, list string) {
	if !slices.ContainsFunc(rs, func(m measured) bool { return m.list == list && !m.relist }) {
		return // a -relist-only run measured no sync on its own
	}
	fmt.Fprintf(b, "\n### initial sync, %s lists\n\n", list)
	b.WriteString("| pods | heap/pod client-go | kcache | kcache-noshare | kcache/client-go | peak RSS client-go | kcache | kcache/client-go | peak heap client-go | kcache | sync client-go | kcache | kcache/client-go | sync CPU client-go | kcache | kcache/client-go |\n")
	b.WriteString("|---:|" + strings.Repeat("---:|", 15) + "\n")
	for _, n := range counts {
		cg, ok1 := rs.sync(n, "client-go", list)
		kc, ok2 := rs.sync(n, "kcache", list)
		ns, _ := rs.sync(n, "kcache-noshare", list)
		if !ok1 || !ok2 {
			continue
		}
		fmt.Fprintf(b, "| %d | %.0f B | %.0f B | %.0f B | %.2f | %.1f MiB | %.1f MiB | %.2f | %.1f MiB | %.1f MiB | %.2f s | %.2f s | %.2f | %.2f s | %.2f s | %.2f |\n",
			n, cg.HeapPerPod(), kc.HeapPerPod(), ns.HeapPerPod(), ratio(kc.HeapPerPod(), cg.HeapPerPod()),
			cg.SyncPeakRSS/mib, kc.SyncPeakRSS/mib, ratio(kc.SyncPeakRSS, cg.SyncPeakRSS),
			cg.SyncPeakHeap/mib, kc.SyncPeakHeap/mib,
			cg.SyncSeconds, kc.SyncSeconds, ratio(kc.SyncSeconds, cg.SyncSeconds),
			cg.SyncCPUSeconds, kc.SyncCPUSeconds, ratio(kc.SyncCPUSeconds, cg.SyncCPUSeconds))
	}
}

// churnTable prints the churn phases' CPU per watch event.
func churnTable(b *strings.Builder, rs results) {
	var counts []int
	for _, m := range rs {
		if m.Churn != nil && !slices.Contains(counts, m.pods) {
			counts = append(counts, m.pods)
		}
	}
	if len(counts) == 0 {
		return
	}
	b.WriteString("\n### steady churn: CPU per watch event\n\n")
	b.WriteString("| pods | client-go | kcache | kcache-noshare | kcache/client-go | kcache/client-go, GC amortized | kcache-noshare/client-go |\n|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, n := range counts {
		cg, ok1 := rs.churned(n, "client-go")
		kc, ok2 := rs.churned(n, "kcache")
		ns, _ := rs.churned(n, "kcache-noshare")
		if !ok1 || !ok2 {
			continue
		}
		fmt.Fprintf(b, "| %d | %.1f µs | %.1f µs | %s | %.2f | %.2f | %s |\n", n,
			cg.Churn.CPUPerEvent()*1e6, kc.Churn.CPUPerEvent()*1e6, churnCell(ns, func(c *harness.ChurnResult) string {
				return fmt.Sprintf("%.1f µs", c.CPUPerEvent()*1e6)
			}),
			ratio(kc.Churn.CPUPerEvent(), cg.Churn.CPUPerEvent()),
			ratio(kc.Churn.CPUPerEventGCAmortized(), cg.Churn.CPUPerEventGCAmortized()),
			churnCell(ns, func(c *harness.ChurnResult) string {
				return fmt.Sprintf("%.2f", ratio(c.CPUPerEvent(), cg.Churn.CPUPerEvent()))
			}))
	}
}

// churnCell formats m's churn figure, or a dash without one.
func churnCell(m measured, f func(*harness.ChurnResult) string) string {
	if m.Churn == nil {
		return "–"
	}
	return f(m.Churn)
}

// relistTable prints the forced relist's figures per variant.
func relistTable(b *strings.Builder, rs results) {
	var ms []measured
	for _, m := range rs {
		if m.relist {
			ms = append(ms, m)
		}
	}
	if len(ms) == 0 {
		return
	}
	fmt.Fprintf(b, "\n### forced relist at %d pods (etcd compacted, API server restarted)\n\n", ms[0].pods)
	b.WriteString("| variant | relist time | relist CPU | steady heap | peak heap | peak / steady | peak RSS | notifications (adds/updates/deletes) |\n|---|---:|---:|---:|---:|---:|---:|---|\n")
	for _, m := range ms {
		fmt.Fprintf(b, "| %s | %.2f s | %.2f s | %.1f MiB | %.1f MiB | %.2f | %.1f MiB | %d (%d/%d/%d) |\n", m.Variant.Name(),
			m.RelistSeconds, m.RelistCPUSeconds, m.SteadyHeap/mib, m.RelistPeakHeap/mib, ratio(m.RelistPeakHeap, m.SteadyHeap),
			m.RelistPeakRSS/mib, m.notifications(), m.RelistAdds, m.RelistUpdates, m.RelistDeletes)
	}
}

// summary is the last line, for tools: kcache against client-go at the
// largest count, streaming lists (client-go's default).
func summary(rs results, opts options) string {
	top := opts.pods[len(opts.pods)-1]
	cg, _ := rs.sync(top, "client-go", "stream")
	kc, _ := rs.sync(top, "kcache", "stream")
	s := fmt.Sprintf("scale: pods=%d heap/pod kcache/client-go = %.2f, peak rss = %.2f, sync time = %.2f, sync cpu = %.2f",
		top, ratio(kc.HeapPerPod(), cg.HeapPerPod()), ratio(kc.SyncPeakRSS, cg.SyncPeakRSS),
		ratio(kc.SyncSeconds, cg.SyncSeconds), ratio(kc.SyncCPUSeconds, cg.SyncCPUSeconds))
	cgc, ok1 := rs.churned(top, "client-go")
	kcc, ok2 := rs.churned(top, "kcache")
	s += ", churn cpu/event = " + ratioOrDash(ok1 && ok2, func() float64 { return ratio(kcc.Churn.CPUPerEvent(), cgc.Churn.CPUPerEvent()) })
	kr, kcRelisted := rs.relisted("kcache")
	cr, cgRelisted := rs.relisted("client-go")
	s += ", relist peak/steady kcache = " + ratioOrDash(kcRelisted, func() float64 { return ratio(kr.RelistPeakHeap, kr.SteadyHeap) }) +
		" client-go = " + ratioOrDash(cgRelisted, func() float64 { return ratio(cr.RelistPeakHeap, cr.SteadyHeap) })
	k20, ok := rs.sync(20_000, "kcache", "stream")
	s += ", heap/pod growth 20k->" + shortCount(top) + " kcache = " + ratioOrDash(ok && top != 20_000, func() float64 { return ratio(kc.HeapPerPod(), k20.HeapPerPod()) })
	quiet, quietRelisted := rs.relisted("kcache-quiet")
	s += ", notifications after relist opt-in/default = "
	if quietRelisted && kcRelisted {
		s += fmt.Sprintf("%d/%d", quiet.notifications(), kr.notifications())
	} else {
		s += "-"
	}
	return s
}

// shortCount writes 100000 as 100k.
func shortCount(n int) string {
	if n%1000 == 0 {
		return fmt.Sprintf("%dk", n/1000)
	}
	return fmt.Sprint(n)
}

func ratioOrDash(ok bool, f func() float64) string {
	if !ok {
		return "-"
	}
	return fmt.Sprintf("%.2f", f())
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}
