package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kcache/cache/programs/internal/runstats"
)

// window is when KWOK started and the idle window after every pod ran, as
// run.sh wrote them to window.txt (Unix seconds, one per line).
type window struct{ start, idleFrom, idleTo float64 }

func readWindow(path string) (window, error) {
	var w window
	b, err := os.ReadFile(path)
	if err != nil {
		return w, fmt.Errorf("reading the idle window: %w", err)
	}
	if _, err := fmt.Sscan(string(b), &w.start, &w.idleFrom, &w.idleTo); err != nil {
		return w, fmt.Errorf("parsing %s: %w", path, err)
	}
	return w, nil
}

func since(start, t float64) time.Duration { return time.Duration((t - start) * float64(time.Second)) }

type kwokRuns struct {
	allRunning, lag, liveHeap, peakHeap, rss, cpu pair
	idleGCs                                       map[string]int
	lines                                         map[string][]string
	equal                                         bool
}

func readKWOK(runs string) (kwokRuns, error) {
	k := kwokRuns{allRunning: pair{}, lag: pair{}, liveHeap: pair{}, peakHeap: pair{}, rss: pair{}, cpu: pair{},
		idleGCs: map[string]int{}, lines: map[string][]string{}}
	for _, v := range variants {
		dir := filepath.Join(runs, "kwok-"+v)
		p, err := readProcess(dir)
		if err != nil {
			return k, err
		}
		var s struct {
			AllRunning     time.Duration `json:"all_running"`
			LagAfterCreate time.Duration `json:"lag_after_create"`
		}
		if err := runstats.Read(filepath.Join(dir, "setup.json"), &s); err != nil {
			return k, err
		}
		w, err := readWindow(filepath.Join(dir, "window.txt"))
		if err != nil {
			return k, err
		}
		state, err := os.ReadFile(filepath.Join(dir, "endstate.txt"))
		if err != nil {
			return k, fmt.Errorf("reading %s's end state: %w", v, err)
		}
		k.lines[v] = strings.Split(strings.TrimSpace(string(state)), "\n")
		k.allRunning[v], k.lag[v] = s.AllRunning.Seconds(), s.LagAfterCreate.Seconds()
		k.liveHeap[v], k.idleGCs[v] = p.LiveMBBetween(since(w.start, w.idleFrom), since(w.start, w.idleTo))
		if k.idleGCs[v] == 0 {
			// No collection in the window: the last one before its end.
			k.liveHeap[v], _ = p.LastLiveMBBefore(since(w.start, w.idleTo))
		}
		k.peakHeap[v], k.rss[v], k.cpu[v] = p.PeakHeapMB(), p.MaxRSSMB, p.CPU.Seconds()
	}
	k.equal = difference(k.lines["stock"], k.lines["kcache"], 1) == "" && len(k.lines["stock"]) > 1
	return k, nil
}

func writeKWOK(b *strings.Builder, k kwokRuns) {
	fmt.Fprintf(b, "## KWOK managing the nodes and pods (one run per variant, a fresh kas each)\n\n")
	fmt.Fprintf(b, "| | stock | kcache | kcache/stock |\n|---|---:|---:|---:|\n")
	row(b, "time until every pod runs (from the first create)", "s", k.allRunning)
	row(b, "of which after the last create", "s", k.lag)
	fmt.Fprintf(b, "| live heap while idle (median of %d / %d GCs in the window; 0: the last before its end) | %.1f MB | %.1f MB | %.2f |\n",
		k.idleGCs["stock"], k.idleGCs["kcache"], k.liveHeap["stock"], k.liveHeap["kcache"], ratio(k.liveHeap))
	row(b, "peak heap (largest heap a GC started at)", "MB", k.peakHeap)
	row(b, "peak RSS", "MB", k.rss)
	row(b, "CPU, whole run", "s", k.cpu)
	fmt.Fprintf(b, "\nend state: %d lines (pods' node, phase, readiness, IP set; nodes Ready; Leases renewed in the last 40 s)\n", len(k.lines["stock"]))
	fmt.Fprintf(b, "kwok end state equal: %t\n", k.equal)
	if d := difference(k.lines["stock"], k.lines["kcache"], 20); d != "" {
		fmt.Fprintf(b, "differences (- stock, + kcache):\n%s", d)
	}
	b.WriteString("\n")
}
