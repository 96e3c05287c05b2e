package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/kcache/cache/bench/internal/harness"
	"github.com/kcache/cache/bench/internal/libclientgo"
	"github.com/kcache/cache/bench/internal/libkcache"
)

const mib = 1 << 20

// writeReport prints the workload, the markdown table, one line per
// variant and, when client-go and kcache both ran, the ratio line.
func writeReport(w io.Writer, opts options, results []result) error {
	size, err := meanWireSize(harness.SimLayout, opts.objects)
	if err != nil {
		return err
	}
	list := "streamed (watch-list, the informers' default)"
	if !opts.watchList {
		list = "listed in pages (the server refuses streaming lists)"
		if opts.onePage {
			list = "listed in one response (the server refuses streaming lists and ignores the page size, as kube-apiserver does at resourceVersion 0)"
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "workload: %d ConfigMaps, %.0f bytes each on average as JSON, in groups of %d over %d namespaces; initial list %s; server in its own process, over HTTP (JSON)\n\n",
		opts.objects, size, harness.SimLayout.GroupSize, harness.SimLayout.Namespaces, list)
	b.WriteString("| variant | objects | heap/object (B) | peak heap (MiB) | peak RSS (MiB) | sync (s) | sync CPU (s) |\n")
	b.WriteString("| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, r := range results {
		fmt.Fprintf(&b, "| %s | %d | %.0f | %.1f | %.1f | %.2f | %.2f |\n", r.Variant.Name(), r.Objects,
			r.HeapPerObject(), r.PeakHeap/mib, r.PeakRSS/mib, r.SyncSeconds, r.SyncCPUSeconds)
	}
	b.WriteString("\n")
	for _, r := range results {
		b.WriteString(variantLine(opts.objects, r) + "\n")
	}
	if line, ok := ratioLine(opts.objects, results); ok {
		b.WriteString(line + "\n")
	}
	_, err = io.WriteString(w, b.String())
	return err
}

// variantLine is a variant's machine-readable line.
func variantLine(objects int, r result) string {
	return fmt.Sprintf("scale-sim: objects=%d variant=%s heap-per-object-bytes=%.0f peak-heap-mib=%.1f peak-rss-mib=%.1f sync-s=%.2f sync-cpu-s=%.2f",
		objects, r.Variant.Name(), r.HeapPerObject(), r.PeakHeap/mib, r.PeakRSS/mib, r.SyncSeconds, r.SyncCPUSeconds)
}

// ratioLine is kcache (as shipped) against client-go, if both ran.
func ratioLine(objects int, results []result) (string, bool) {
	var cg, kc *result
	for k := range results {
		switch r := &results[k]; {
		case r.Variant == variant{Lib: libclientgo.LibName}:
			cg = r
		case r.Variant == variant{Lib: libkcache.LibName}:
			kc = r
		}
	}
	if cg == nil || kc == nil {
		return "", false
	}
	return fmt.Sprintf("scale-sim: objects=%d heap/object kcache/client-go = %.2f, sync time = %.2f",
		objects, ratio(kc.HeapPerObject(), cg.HeapPerObject()), ratio(kc.SyncSeconds, cg.SyncSeconds)), true
}

// ratio is a/b, 0 when b is not positive.
func ratio(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return a / b
}
