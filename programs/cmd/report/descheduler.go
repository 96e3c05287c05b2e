package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kcache/cache/programs/internal/runstats"
)

type deschedulerRuns struct {
	rounds, cycles           int
	wall, cpu, rss, peakHeap pair
	// first and later are each variant's decisions in the first cycle
	// and in each later one (the same in every later cycle when equal).
	first, later map[string][]int
	equal        bool
	differences  string
}

// readDescheduler reads every round's process; each figure is the median
// over a variant's rounds. The decisions of every cycle after the first
// must be the same in every run. The first cycle is reported apart: in dry
// run the descheduler decides on a fake clientset that its real informers'
// handlers fill, and its first cycle may start before the fake's informers
// have caught up (both builds; it is the program's own race).
func readDescheduler(runs string, rounds, wantCycles int) (deschedulerRuns, error) {
	d := deschedulerRuns{rounds: rounds, cycles: wantCycles, wall: pair{}, cpu: pair{}, rss: pair{}, peakHeap: pair{},
		first: map[string][]int{}, later: map[string][]int{}, equal: true}
	var ref []string
	refName := ""
	for _, v := range variants {
		var wall, cpu, rss, heap []float64
		for r := 1; r <= rounds; r++ {
			name := fmt.Sprintf("descheduler-%d-%s", r, v)
			dir := filepath.Join(runs, name)
			p, err := readProcess(dir)
			if err != nil {
				return d, err
			}
			f, err := os.Open(filepath.Join(dir, "descheduler.log"))
			if err != nil {
				return d, fmt.Errorf("opening %s's log: %w", name, err)
			}
			got, err := cycles(f)
			f.Close()
			if err != nil {
				return d, fmt.Errorf("%s: %w", name, err)
			}
			if len(got) < wantCycles {
				return d, fmt.Errorf("%s finished %d cycles, want %d", name, len(got), wantCycles)
			}
			d.first[v] = append(d.first[v], len(got[0]))
			for c, decided := range got[1:wantCycles] {
				d.later[v] = append(d.later[v], len(decided))
				if ref == nil {
					ref, refName = decided, name+" cycle 2"
				} else if diff := difference(ref, decided, 20); diff != "" {
					d.equal = false
					d.differences += fmt.Sprintf("  %s cycle %d against %s (- that, + this):\n%s", name, c+2, refName, diff)
				}
			}
			wall, cpu, rss, heap = append(wall, p.Wall.Seconds()), append(cpu, p.CPU.Seconds()), append(rss, p.MaxRSSMB), append(heap, p.PeakHeapMB())
		}
		d.wall[v], d.cpu[v], d.rss[v], d.peakHeap[v] = runstats.Median(wall), runstats.Median(cpu), runstats.Median(rss), runstats.Median(heap)
	}
	if len(ref) == 0 {
		d.equal = false
		d.differences += "  no cycle after the first decided any eviction: the scenario did not exercise the plugins\n"
	}
	return d, nil
}

func writeDescheduler(b *strings.Builder, d deschedulerRuns) {
	fmt.Fprintf(b, "## descheduler, dry run (RemovePodsViolatingNodeTaints, RemovePodsViolatingNodeAffinity), %d cycles per process, %d rounds per variant, medians\n\n", d.cycles, d.rounds)
	fmt.Fprintf(b, "| | stock | kcache | kcache/stock |\n|---|---:|---:|---:|\n")
	fmt.Fprintf(b, "| evictions decided, cycles 2-%d (every cycle) | %v | %v | |\n", d.cycles, d.later["stock"], d.later["kcache"])
	fmt.Fprintf(b, "| evictions decided, cycle 1 (the dry run's mirror may still be filling) | %v | %v | |\n", d.first["stock"], d.first["kcache"])
	row(b, "peak heap (largest heap a GC started at)", "MB", d.peakHeap)
	row(b, "peak RSS", "MB", d.rss)
	row(b, "CPU of the process (start, sync, every cycle)", "s", d.cpu)
	row(b, "wall time of the process", "s", d.wall)
	fmt.Fprintf(b, "\ndescheduler decisions equal (cycles 2-%d of every run, both variants): %t\n", d.cycles, d.equal)
	if d.differences != "" {
		fmt.Fprintf(b, "differences:\n%s", d.differences)
	}
	b.WriteString("\n")
}
