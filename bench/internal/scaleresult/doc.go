// Package scaleresult reads the machine-readable lines of a `make
// bench-scale` result file, bench/results/scale-<UTC>.txt: one line per
// measurement,
//
//	scale-row: pods=<N> variant=<client-go|kcache|kcache-noshare> list=<stream|paged> heap-per-pod-bytes=<int> steady-heap-mib=<f.1> peak-heap-mib=<f.1> peak-rss-mib=<f.1> sync-s=<f.2> sync-cpu-s=<f.2>
//
// Every other line of the file (its header, free text, tables, the
// scale-sim: lines and the closing scale: line) is left to its readers.
// Row.String writes the same line back, so the program that writes the file
// and the ones that read it can share one format.
package scaleresult
