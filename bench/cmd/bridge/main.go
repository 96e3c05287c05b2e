// Command bridge measures what github.com/kcache/cache/clientgo costs: the
// libbridge workloads (event fan-out to 1 and 10 handlers, List of a synced
// cache) on a native kcache informer and through the client-go wrapper,
// alternating within each round, and prints the median of each, the ratio
// wrapper / native (1.00 is free; the target is within 5%) and benchstat's
// verdict on the difference ("~" when the U test finds none), of wall time
// and of process CPU time per op. On a loaded machine the wall times
// swing from round to round; CPU time barely moves, so read that ratio.
//
//	go run ./cmd/bridge               # 7 rounds at full sizes, a few minutes
//	go run ./cmd/bridge -quick        # smoke run
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"k8s.io/klog/v2"

	"github.com/kcache/cache/bench/internal/harness"
	"github.com/kcache/cache/bench/internal/libbridge"
	"github.com/kcache/cache/bench/internal/stats"
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
	fmt.Fprintf(out, "| workload | %[1]s ns/op | %[2]s ns/op | ratio | vs %[1]s | %[1]s cpu ns/op | %[2]s cpu ns/op | cpu ratio |\n|---|---|---|---|---|---|---|---|\n",
		libs[0].Name, libs[1].Name)
	for i, w0 := range libs[0].Workloads {
		ns, cpu := make([][]float64, len(libs)), make([][]float64, len(libs))
		for r := 0; r < rounds; r++ {
			for l, lib := range libs {
				start := time.Now()
				res, err := harness.Run(lib.Workloads[i], sizes, fx)
				if err != nil {
					return fmt.Errorf("%s %s round %d: %w", lib.Name, w0.Name, r+1, err)
				}
				ns[l] = append(ns[l], res.NsPerOp)
				cpu[l] = append(cpu[l], res.CPUNsPerOp)
				fmt.Fprintf(progress, "%s %s round %d: %.1f ns/op, cpu %.1f ns/op (%.1fs)\n",
					w0.Name, lib.Name, r+1, res.NsPerOp, res.CPUNsPerOp, time.Since(start).Seconds())
			}
		}
		a, b := stats.Median(ns[0]), stats.Median(ns[1])
		ca, cb := stats.Median(cpu[0]), stats.Median(cpu[1])
		fmt.Fprintf(out, "| %s | %.1f | %.1f | %.3f | %s | %.1f | %.1f | %.3f |\n", w0.Name, a, b, stats.Ratio(b, a),
			stats.Delta(ns[0], ns[1]), ca, cb, stats.Ratio(cb, ca))
	}
	return nil
}
