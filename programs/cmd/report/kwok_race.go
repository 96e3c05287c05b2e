package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The KWOK race runs (make bench-programs-kwok-race): KWOK at debug level,
// nodes and pods created at once, a bounded wait. KWOK v0.8.0 drops a pod's
// event ("Skip pod", reason "read only") while its Lease informer does not
// hold the Lease of the pod's node; it creates that Lease itself when it
// takes the node on, and re-lists the node's pods once, right after. A pod
// whose every event is dropped stays Pending. These runs count, per build,
// the events dropped and the pods left not running.

// raceRun is what one race run showed.
type raceRun struct {
	name string
	// dropped counts the pod events dropped as read only, by event type
	// (ADDED from the watch, SYNC from a list).
	dropped map[string]int
	// beforeLease counts the dropped events of a pod whose node KWOK had
	// not yet created a Lease for.
	beforeLease int
	// longest is the longest time from a Lease's creation to a drop of an
	// event of a pod on its node: how late the Lease reached KWOK's cache.
	longest time.Duration
	// pods and notRunning are from the run's end state.
	pods, notRunning int
}

// kwokLine is the part of a KWOK log line (JSON) the race reads.
type kwokLine struct {
	Time   time.Time `json:"time"`
	Msg    string    `json:"msg"`
	Reason string    `json:"reason"`
	Event  string    `json:"event"`
	Node   string    `json:"node"`
}

// readRaceLog reads a KWOK debug log; lines that are not JSON (the GC
// trace) are skipped.
func readRaceLog(path string, r *raceRun) error {
	leaseAt := map[string]time.Time{}
	r.dropped = map[string]int{}
	return eachLine(path, func(line []byte) {
		var l kwokLine
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &l) != nil {
			return
		}
		switch {
		case l.Msg == "Creating lease":
			leaseAt[l.Node] = l.Time
		case l.Msg == "Skip pod" && l.Reason == "read only":
			r.dropped[l.Event]++
			at, ok := leaseAt[l.Node]
			if !ok {
				r.beforeLease++
			} else if d := l.Time.Sub(at); d > r.longest {
				r.longest = d
			}
		}
	})
}

// countNotRunning counts the pods of an end state (cmd/driver endstate)
// and those not Running and Ready.
func countNotRunning(path string, r *raceRun) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(l, "pod ") {
			continue
		}
		r.pods++
		if !strings.Contains(l, " phase=Running ready=true") {
			r.notRunning++
		}
	}
	return nil
}

// reportRace writes the race runs' result: a line per run, the sums per
// build, and the last line.
func reportRace(b *strings.Builder, runs, header string, rounds int) error {
	h, err := os.ReadFile(header)
	if err != nil {
		return fmt.Errorf("reading the header: %w", err)
	}
	b.Write(h)
	type sum struct{ runs, dropped, stuckRuns, notRunning int }
	sums := map[string]*sum{}
	fmt.Fprintf(b, "## KWOK's Lease race: nodes and pods created at once (%d runs per build, the order alternating, a fresh kas each)\n\n", rounds)
	for r := 1; r <= rounds; r++ {
		for _, v := range variants {
			run := raceRun{name: fmt.Sprintf("kwok-race-%d-%s", r, v)}
			dir := filepath.Join(runs, run.name)
			if err := readRaceLog(filepath.Join(dir, "kwok.log"), &run); err != nil {
				return err
			}
			if err := countNotRunning(filepath.Join(dir, "endstate.txt"), &run); err != nil {
				return err
			}
			if run.pods == 0 {
				return fmt.Errorf("%s: no pod in the end state", run.name)
			}
			s := sums[v]
			if s == nil {
				s = &sum{}
				sums[v] = s
			}
			s.runs++
			s.dropped += run.dropped["ADDED"] + run.dropped["SYNC"]
			s.notRunning += run.notRunning
			if run.notRunning > 0 {
				s.stuckRuns++
			}
			fmt.Fprintf(b, "  %s: pod events dropped as read only: ADDED %d, SYNC %d (%d before the node had a Lease); longest drop after the Lease's creation %d ms; pods not running at the end %d of %d\n",
				run.name, run.dropped["ADDED"], run.dropped["SYNC"], run.beforeLease, run.longest.Milliseconds(), run.notRunning, run.pods)
		}
	}
	fmt.Fprintf(b, "\n| | stock | kcache |\n|---|---:|---:|\n")
	fmt.Fprintf(b, "| runs | %d | %d |\n", sums["stock"].runs, sums["kcache"].runs)
	fmt.Fprintf(b, "| pod events dropped as read only, all runs | %d | %d |\n", sums["stock"].dropped, sums["kcache"].dropped)
	fmt.Fprintf(b, "| runs that left a pod not running | %d | %d |\n", sums["stock"].stuckRuns, sums["kcache"].stuckRuns)
	fmt.Fprintf(b, "| pods left not running, all runs | %d | %d |\n\n", sums["stock"].notRunning, sums["kcache"].notRunning)
	fmt.Fprintf(b, "kwok-race: runs=%d dropped stock = %d kcache = %d, runs with pods stuck stock = %d kcache = %d\n",
		rounds, sums["stock"].dropped, sums["kcache"].dropped, sums["stock"].stuckRuns, sums["kcache"].stuckRuns)
	return nil
}
