package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/kcache/cache/bench/internal/harness"
)

// row is one line of the table: a label and a figure per result.
type row struct {
	label string
	value func(r result) float64
	unit  string // "MiB", "B", "s", "ms", "µs"
}

var rows = []row{
	{"pods cached", func(r result) float64 { return float64(r.Pods) }, ""},
	{"initial sync time", func(r result) float64 { return r.SyncSeconds }, "s"},
	{"initial sync CPU", func(r result) float64 { return r.SyncCPUSeconds }, "s"},
	{"process CPU (sync + relist)", func(r result) float64 { return r.CPUSeconds }, "s"},
	{"peak RSS, initial sync (VmHWM)", func(r result) float64 { return r.SyncPeakRSS }, "MiB"},
	{"peak heap, initial list", func(r result) float64 { return r.SyncPeakHeap }, "MiB"},
	{"peak live heap, initial list", func(r result) float64 { return r.SyncPeakLive }, "MiB"},
	{"steady heap after sync (GC)", func(r result) float64 { return r.SteadyHeap }, "MiB"},
	{"steady live heap after sync (GC)", func(r result) float64 { return r.SteadyLive }, "MiB"},
	{"heap per cached pod", func(r result) float64 { return r.HeapPerPod() }, "B"},
}

// relistRows are the relist's figures, printed when some result has them.
var relistRows = []row{
	{"relist time (incl. API server restart)", func(r result) float64 { return r.RelistSeconds }, "s"},
	{"relist CPU", func(r result) float64 { return r.RelistCPUSeconds }, "s"},
	{"peak heap, relist", func(r result) float64 { return r.RelistPeakHeap }, "MiB"},
	{"peak live heap, relist", func(r result) float64 { return r.RelistPeakLive }, "MiB"},
	{"peak RSS, relist (VmHWM reset before)", func(r result) float64 { return r.RelistPeakRSS }, "MiB"},
	{"heap after relist (GC)", func(r result) float64 { return r.AfterRelistHeap }, "MiB"},
	{"runtime memory before relist (GOMEMLIMIT's measure)", func(r result) float64 { return r.RelistSteadyMemory }, "MiB"},
	{"memory limit during relist (-relist-memory-limit; 0: none)", func(r result) float64 { return r.RelistMemoryLimit }, "MiB"},
	{"notifications after relist (adds + updates + deletes)", func(r result) float64 {
		return float64(r.RelistAdds + r.RelistUpdates + r.RelistDeletes)
	}, ""},
}

// churnRows are the churn phase's figures, printed when some result has
// them; a result without them shows "–".
var churnRows = []struct {
	label string
	value func(c *harness.ChurnResult) float64
	unit  string
}{
	{"churn: watch events seen", func(c *harness.ChurnResult) float64 { return float64(c.Events) }, ""},
	{"churn: process CPU", func(c *harness.ChurnResult) float64 { return c.CPUSeconds }, "s"},
	{"churn: CPU per watch event", func(c *harness.ChurnResult) float64 { return c.CPUPerEvent() }, "µs"},
	{"churn: GC CPU in window", func(c *harness.ChurnResult) float64 { return c.GCSeconds }, "ms"},
	{"churn: GC cycles in window", func(c *harness.ChurnResult) float64 { return float64(c.GCCycles) }, ""},
	{"churn: allocated per watch event", func(c *harness.ChurnResult) float64 { return c.AllocPerEvent() }, "B"},
	{"churn: GC cycle cost at settled heap", func(c *harness.ChurnResult) float64 { return c.GCCycleSeconds }, "ms"},
	{"churn: CPU per watch event, GC amortized", func(c *harness.ChurnResult) float64 { return c.CPUPerEventGCAmortized() }, "µs"},
	{"churn: peak heap", func(c *harness.ChurnResult) float64 { return c.PeakHeap }, "MiB"},
	{"churn: heap per cached pod, before (GC)", func(c *harness.ChurnResult) float64 { return c.HeapPerPodBefore() }, "B"},
	{"churn: heap per cached pod, after (GC)", func(c *harness.ChurnResult) float64 { return c.HeapPerPodAfter() }, "B"},
	{"churn: live heap per cached pod, before", func(c *harness.ChurnResult) float64 { return c.LivePerPodBefore() }, "B"},
	{"churn: live heap per cached pod, after", func(c *harness.ChurnResult) float64 { return c.LivePerPodAfter() }, "B"},
}

func format(v float64, unit string) string {
	switch unit {
	case "MiB":
		return fmt.Sprintf("%.1f MiB", v/(1<<20))
	case "B":
		return fmt.Sprintf("%.0f B", v)
	case "s":
		return fmt.Sprintf("%.2f s", v)
	case "ms": // v in seconds
		return fmt.Sprintf("%.1f ms", v*1e3)
	case "µs": // v in seconds
		return fmt.Sprintf("%.1f µs", v*1e6)
	}
	return fmt.Sprintf("%.0f", v)
}

// find returns the result of the variant named name.
func find(results []result, name string) (result, bool) {
	for _, r := range results {
		if r.Variant.Name() == name {
			return r, true
		}
	}
	return result{}, false
}

// writeReport prints the table, then the ratios, and as its last line the
// summary of kcache as it runs by default (sharing on) against client-go;
// without a kcache result, of the first kcache variant.
func writeReport(w io.Writer, results []result) error {
	var b strings.Builder
	b.WriteString("\n| | " + names(results) + " |\n|---|" + strings.Repeat("---:|", len(results)) + "\n")
	printed := rows
	if anyRelist(results) {
		printed = append(printed[:len(printed):len(printed)], relistRows...)
	}
	for _, r := range printed {
		b.WriteString("| " + r.label + " |")
		for _, res := range results {
			b.WriteString(" " + format(r.value(res), r.unit) + " |")
		}
		b.WriteString("\n")
	}
	if anyChurn(results) {
		for _, r := range churnRows {
			b.WriteString("| " + r.label + " |")
			for _, res := range results {
				cell := "–"
				if res.Churn != nil {
					cell = format(r.value(res.Churn), r.unit)
				}
				b.WriteString(" " + cell + " |")
			}
			b.WriteString("\n")
		}
	}
	for _, r := range results {
		writeAttribution(&b, r)
	}
	cg, ok := find(results, "client-go")
	if !ok {
		_, err := io.WriteString(w, b.String())
		return err
	}
	b.WriteString("\n")
	var last result
	for _, r := range results {
		if r.Variant.Lib != "kcache" {
			continue
		}
		last = r
		if r.RelistSeconds > 0 {
			fmt.Fprintf(&b, "%s: relist peak heap / own steady heap = %.2f (live: %.2f)\n", r.Variant.Name(),
				ratio(r.RelistPeakHeap, r.SteadyHeap), ratio(r.RelistPeakLive, r.SteadyHeap))
		}
		if cgt, ok := find(results, "client-go+"+fieldsV1String); ok {
			fmt.Fprintf(&b, "%s: heap/pod / client-go+%s's = %.2f\n", r.Variant.Name(), fieldsV1String, ratio(r.HeapPerPod(), cgt.HeapPerPod()))
		}
		if r.Variant.Tag == "" {
			b.WriteString(r.Variant.Name() + " vs client-go: " + summary(r, cg) + "\n")
		}
	}
	// The last line is kcache as it runs by default, if measured.
	if kc, ok := find(results, "kcache"); ok {
		last = kc
	}
	if last.Variant.Lib != "" {
		b.WriteString("\n" + summary(last, cg) + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func names(results []result) string {
	n := make([]string, len(results))
	for k, r := range results {
		n[k] = r.Variant.Name()
	}
	return strings.Join(n, " | ")
}

// summary is the last line: each figure a ratio kcache / client-go. The
// churn phase's figures come last, when both ran it, so that the fields
// before them read the same with or without the phase.
func summary(kc, cg result) string {
	s := fmt.Sprintf("e2e: heap/pod kcache/client-go = %.2f, peak RSS = %.2f, initial-list peak heap = %.2f, relist peak heap = %.2f, sync time = %.2f",
		ratio(kc.HeapPerPod(), cg.HeapPerPod()),
		ratio(max(kc.SyncPeakRSS, kc.RelistPeakRSS), max(cg.SyncPeakRSS, cg.RelistPeakRSS)),
		ratio(kc.SyncPeakHeap, cg.SyncPeakHeap),
		ratio(kc.RelistPeakHeap, cg.RelistPeakHeap),
		ratio(kc.SyncSeconds, cg.SyncSeconds))
	if kc.Churn != nil && cg.Churn != nil {
		s += fmt.Sprintf(", churn CPU/event kcache/client-go = %.2f, churn CPU/event GC amortized = %.2f, churn heap/pod = %.2f",
			ratio(kc.Churn.CPUPerEvent(), cg.Churn.CPUPerEvent()),
			ratio(kc.Churn.CPUPerEventGCAmortized(), cg.Churn.CPUPerEventGCAmortized()),
			ratio(kc.Churn.HeapPerPodAfter(), cg.Churn.HeapPerPodAfter()))
	}
	return s
}

// anyRelist reports whether some result measured a relist.
func anyRelist(results []result) bool {
	for _, r := range results {
		if r.RelistSeconds > 0 {
			return true
		}
	}
	return false
}

func anyChurn(results []result) bool {
	for _, r := range results {
		if r.Churn != nil {
			return true
		}
	}
	return false
}

// churnLine describes the churn phase's update stream, above the table.
func churnLine(c churnRun) string {
	return fmt.Sprintf("churn: %d pod updates asked at %g/s for %s (seed %d), made in %.1f s: %d watch events (each update a server-side apply of labels and annotations, then a status update flipping the Ready condition)",
		c.Churn.Updates(), c.Churn.Rate, c.Churn.Duration, c.Churn.Seed, c.Stats.Seconds, c.Stats.Events)
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// writeAttribution writes where r's cached pods' bytes go, when its child
// was asked (-attribution): one line per field path, most bytes first.
func writeAttribution(b *strings.Builder, r result) {
	a := r.Attribution
	if a == nil {
		return
	}
	fmt.Fprintf(b, "\nattribution %s: %d pods, %.0f B per pod in all (every block the cached pods reach, once, in its size class, charged to the field path that reached it first)\n",
		r.Variant.Name(), a.Objects, a.BytesPerObject)
	for _, row := range a.Rows {
		fmt.Fprintf(b, "attribution %s: %.1f B in %.2f blocks per pod: %s\n",
			r.Variant.Name(), row.BytesPerObject, row.BlocksPerObject, row.Path)
	}
}
