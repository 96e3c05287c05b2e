package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/kcache/cache/programs/internal/runstats"
)

// window is when KWOK started and the idle window after every pod ran, as
// run.sh wrote them to window.txt (Unix seconds, one per line).
// stageFailed matches KWOK's log line for a stage it failed to apply (it
// retries): many of them mean KWOK acted on a pod twice.
var stageFailed = regexp.MustCompile(`"msg":"failed to apply stage"`)

// eachLine calls fn with every line of path.
func eachLine(path string, fn func(line []byte)) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("opening %s: %w", path, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for sc.Scan() {
		fn(sc.Bytes())
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	return nil
}

// countLines counts the lines of path that re matches.
func countLines(path string, re *regexp.Regexp) (int, error) {
	n := 0
	err := eachLine(path, func(line []byte) {
		if re.Match(line) {
			n++
		}
	})
	return n, err
}

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
	rounds                                                    int
	nodesReady, allRunning, lag, liveHeap, peakHeap, rss, cpu pair
	idleGCs                                                   map[string][]int
	lines                                                     []string
	equal                                                     bool
	differences                                               string
	// perRun is one line per run: its figures and how often KWOK logged
	// that it failed to apply a stage (and retried).
	perRun []string
}

// readKWOK reads every KWOK run: the figures are medians over a variant's
// rounds, and every run's end state must equal the first's.
func readKWOK(runs string, rounds int) (kwokRuns, error) {
	k := kwokRuns{rounds: rounds, nodesReady: pair{}, allRunning: pair{}, lag: pair{}, liveHeap: pair{}, peakHeap: pair{}, rss: pair{}, cpu: pair{},
		idleGCs: map[string][]int{}, equal: true}
	refName := ""
	for _, v := range variants {
		var nodesReady, allRunning, lag, live, peak, rss, cpu []float64
		for r := 1; r <= rounds; r++ {
			name := fmt.Sprintf("kwok-%d-%s", r, v)
			dir := filepath.Join(runs, name)
			p, err := readProcess(dir)
			if err != nil {
				return k, err
			}
			var s struct {
				NodesReady     time.Duration `json:"nodes_ready"`
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
				return k, fmt.Errorf("reading %s's end state: %w", name, err)
			}
			lines := strings.Split(strings.TrimSpace(string(state)), "\n")
			if k.lines == nil {
				k.lines, refName = lines, name
			} else if d := difference(k.lines, lines, 20); d != "" {
				k.equal = false
				k.differences += fmt.Sprintf("  %s against %s (- that, + this):\n%s", name, refName, d)
			}
			heap, n := p.LiveMBBetween(since(w.start, w.idleFrom), since(w.start, w.idleTo))
			if n == 0 {
				// No collection in the window: the last one before its end.
				heap, _ = p.LastLiveMBBefore(since(w.start, w.idleTo))
			}
			k.idleGCs[v] = append(k.idleGCs[v], n)
			failed, err := countLines(filepath.Join(dir, "kwok.log"), stageFailed)
			if err != nil {
				return k, err
			}
			k.perRun = append(k.perRun, fmt.Sprintf("%s: every pod ran after %.1f s, live heap %.1f MB, peak heap %.1f MB, peak RSS %.1f MB, CPU %.1f s, stages failed and retried %d",
				name, s.AllRunning.Seconds(), heap, p.PeakHeapMB(), p.MaxRSSMB, p.CPU.Seconds(), failed))
			nodesReady = append(nodesReady, s.NodesReady.Seconds())
			allRunning, lag = append(allRunning, s.AllRunning.Seconds()), append(lag, s.LagAfterCreate.Seconds())
			live, peak, rss, cpu = append(live, heap), append(peak, p.PeakHeapMB()), append(rss, p.MaxRSSMB), append(cpu, p.CPU.Seconds())
		}
		k.nodesReady[v] = runstats.Median(nodesReady)
		k.allRunning[v], k.lag[v] = runstats.Median(allRunning), runstats.Median(lag)
		k.liveHeap[v], k.peakHeap[v], k.rss[v], k.cpu[v] = runstats.Median(live), runstats.Median(peak), runstats.Median(rss), runstats.Median(cpu)
	}
	if len(k.lines) <= 1 {
		k.equal = false
		k.differences += "  the end state is empty\n"
	}
	return k, nil
}

func writeKWOK(b *strings.Builder, k kwokRuns) {
	fmt.Fprintf(b, "## KWOK managing the nodes and pods (%d rounds per variant, the order alternating, a fresh kas each run; medians)\n\n", k.rounds)
	fmt.Fprintf(b, "| | stock | kcache | kcache/stock |\n|---|---:|---:|---:|\n")
	row(b, "time until every node is Ready (from the first node create; pods are created after)", "s", k.nodesReady)
	row(b, "time until every pod runs (from the first pod create)", "s", k.allRunning)
	row(b, "of which after the last pod create", "s", k.lag)
	fmt.Fprintf(b, "| live heap while idle (GCs in each run's window: %v / %v; 0: the last before its end) | %.1f MB | %.1f MB | %.2f |\n",
		k.idleGCs["stock"], k.idleGCs["kcache"], k.liveHeap["stock"], k.liveHeap["kcache"], ratio(k.liveHeap))
	row(b, "peak heap (largest heap a GC started at)", "MB", k.peakHeap)
	row(b, "peak RSS", "MB", k.rss)
	row(b, "CPU, whole run", "s", k.cpu)
	fmt.Fprintf(b, "\nper run (kwok-<round>-<variant>; which ran first in each round: see times above):\n")
	for _, l := range k.perRun {
		fmt.Fprintf(b, "  %s\n", l)
	}
	fmt.Fprintf(b, "\nend state: %d lines (pods' node, phase, readiness, IP set; nodes Ready; Leases renewed in the last 40 s)\n", len(k.lines))
	fmt.Fprintf(b, "kwok end state equal (every run, both variants): %t\n", k.equal)
	if k.differences != "" {
		fmt.Fprintf(b, "differences:\n%s", k.differences)
	}
	b.WriteString("\n")
}
