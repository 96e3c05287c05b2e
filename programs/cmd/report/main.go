// Command report writes make bench-programs' result file from the runs
// run.sh left in -runs: KWOK stock and kcache (kwok-<round>-<variant>/) and
// the descheduler's dry-run cycles (descheduler-<round>-<variant>/). With
// -kwok-race it writes make bench-programs-kwok-race's instead, from
// kwok-race-<round>-<variant>/.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kcache/cache/programs/internal/runstats"
)

var variants = []string{"stock", "kcache"}

func main() {
	runs := flag.String("runs", "", "the runs directory")
	header := flag.String("header", "", "the header to start the file with")
	rounds := flag.Int("rounds", 1, "descheduler rounds per variant")
	cycles := flag.Int("cycles", 3, "descheduler cycles per process")
	kwokRounds := flag.Int("kwok-rounds", 1, "KWOK runs per variant")
	race := flag.Bool("kwok-race", false, "report the KWOK race runs (-kwok-rounds of them per build)")
	out := flag.String("out", "", "the result file")
	flag.Parse()
	var b strings.Builder
	var err error
	if *race {
		err = reportRace(&b, *runs, *header, *kwokRounds)
	} else {
		err = report(&b, *runs, *header, *rounds, *kwokRounds, *cycles)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "report: %v\n", err)
		os.Exit(1)
	}
	if err := os.WriteFile(*out, []byte(b.String()), 0o644); err != nil {
		fmt.Fprintf(os.Stderr, "report: %v\n", err)
		os.Exit(1)
	}
}

func report(b *strings.Builder, runs, header string, rounds, kwokRounds, cycles int) error {
	h, err := os.ReadFile(header)
	if err != nil {
		return fmt.Errorf("reading the header: %w", err)
	}
	b.Write(h)
	kw, err := readKWOK(runs, kwokRounds)
	if err != nil {
		return err
	}
	ds, err := readDescheduler(runs, rounds, cycles)
	if err != nil {
		return err
	}
	writeKWOK(b, kw)
	writeDescheduler(b, ds)
	fmt.Fprintf(b, "programs: descheduler decisions equal = %t, heap = %.2f; kwok end state equal = %t, heap = %.2f\n",
		ds.equal, ratio(ds.peakHeap), kw.equal, ratio(kw.liveHeap))
	return nil
}

// pair is one figure for stock and for kcache.
type pair map[string]float64

func ratio(p pair) float64 {
	if p["stock"] == 0 {
		return 0
	}
	return p["kcache"] / p["stock"]
}

func row(b *strings.Builder, name, unit string, p pair) {
	fmt.Fprintf(b, "| %s | %.1f %s | %.1f %s | %.2f |\n", name, p["stock"], unit, p["kcache"], unit, ratio(p))
}

func readProcess(dir string) (runstats.Process, error) {
	var p runstats.Process
	err := runstats.Read(filepath.Join(dir, "measure.json"), &p)
	return p, err
}
