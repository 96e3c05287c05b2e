// Command bridge measures what github.com/kcache/cache/clientgo costs: the
// libbridge workloads (event fan-out to 1 and 10 handlers, List of a synced
// cache) on a native kcache informer and through the client-go wrapper,
// alternating within each round, and prints the median of each and the
// ratio wrapper / native of ns/op (1.00 is free; the target is within 5%).
//
//	go run ./cmd/bridge               # 7 rounds at full sizes, a few minutes
//	go run ./cmd/bridge -quick        # smoke run
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	"k8s.io/klog/v2"

	"github.com/kcache/cache/bench/internal/harness"
	"github.com/kcache/cache/bench/internal/libbridge"
)

func main() {
	rounds := flag.Int("rounds", 7, "rounds per library")
	quick := flag.Bool("quick", false, "small sizes: a smoke run")
	flag.Parse()
	klog.SetOutput(io.Discard)
	sizes := harness.FullSizes
	if *quick {
		sizes = harness.QuickSizes
	}
	if err := run(os.Stdout, os.Stderr, sizes, *rounds); err != nil {
		fmt.Fprintln(os.Stderr, "bridge:", err)
		os.Exit(1)
	}
}

// run measures every workload rounds times per library, alternating, and
// writes the markdown table to out.
func run(out, progress io.Writer, sizes harness.Sizes, rounds int) error {
	libs := []harness.Library{libbridge.Native(), libbridge.Bridge()}
	fx := harness.NewFixture(sizes)
	fmt.Fprintf(out, "| workload | %s ns/op | %s ns/op | ratio |\n|---|---|---|---|\n", libs[0].Name, libs[1].Name)
	for i, w0 := range libs[0].Workloads {
		ns := make([][]float64, len(libs))
		for r := 0; r < rounds; r++ {
			for l, lib := range libs {
				b := harness.NewB(sizes.BenchTime)
				b.MaxN = sizes.MaxN
				start := time.Now()
				if err := lib.Workloads[i].Run(b, fx); err != nil {
					return fmt.Errorf("%s %s round %d: %w", lib.Name, w0.Name, r+1, err)
				}
				res := b.Result()
				ns[l] = append(ns[l], res.NsPerOp)
				fmt.Fprintf(progress, "%s %s round %d: %.1f ns/op (%.1fs)\n", w0.Name, lib.Name, r+1, res.NsPerOp, time.Since(start).Seconds())
			}
		}
		a, b := median(ns[0]), median(ns[1])
		fmt.Fprintf(out, "| %s | %.1f | %.1f | %.3f |\n", w0.Name, a, b, b/a)
	}
	return nil
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
