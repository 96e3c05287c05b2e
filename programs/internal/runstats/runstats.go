// Package runstats holds what bench-programs records about one process:
// the wrapper (cmd/measure) writes it, the report (cmd/report) reads it.
package runstats

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"time"
)

// GC is one garbage collection as the Go runtime's gctrace line reports it.
type GC struct {
	// At is when the wrapper read the line, since the process started.
	At time.Duration `json:"at"`
	// StartMB is the heap when the collection started, EndMB when it
	// ended, LiveMB what it marked live (the runtime's "X->Y->Z MB").
	StartMB float64 `json:"start_mb"`
	EndMB   float64 `json:"end_mb"`
	LiveMB  float64 `json:"live_mb"`
}

// Process is one run of a program under the wrapper.
type Process struct {
	Command  []string      `json:"command"`
	Wall     time.Duration `json:"wall"`
	CPU      time.Duration `json:"cpu"` // user + system
	MaxRSSMB float64       `json:"max_rss_mb"`
	ExitCode int           `json:"exit_code"`
	GCs      []GC          `json:"gcs"`
}

// gcLine matches the heap part of a gctrace line, e.g.
// "gc 12 @3.456s 2%: ... ms cpu, 45->47->20 MB, 48 MB goal, ...".
var gcLine = regexp.MustCompile(`^gc \d+ @[0-9.]+s .*?, ([0-9.]+)->([0-9.]+)->([0-9.]+) MB,`)

// ParseGC reads one stderr line; ok is false for any other line.
func ParseGC(line string, at time.Duration) (gc GC, ok bool) {
	m := gcLine.FindStringSubmatch(line)
	if m == nil {
		return GC{}, false
	}
	var v [3]float64
	for i := range v {
		f, err := strconv.ParseFloat(m[i+1], 64)
		if err != nil {
			return GC{}, false
		}
		v[i] = f
	}
	return GC{At: at, StartMB: v[0], EndMB: v[1], LiveMB: v[2]}, true
}

// PeakHeapMB is the largest heap any collection started at: the closest the
// trace comes to the heap's peak.
func (p Process) PeakHeapMB() float64 {
	peak := 0.0
	for _, gc := range p.GCs {
		peak = max(peak, gc.StartMB)
	}
	return peak
}

// LiveMBBetween is the median live heap of the collections that happened
// in [from, to), and how many there were.
func (p Process) LiveMBBetween(from, to time.Duration) (float64, int) {
	var xs []float64
	for _, gc := range p.GCs {
		if gc.At >= from && gc.At < to {
			xs = append(xs, gc.LiveMB)
		}
	}
	return Median(xs), len(xs)
}

// LastLiveMBBefore is the live heap of the last collection before t, and
// false if there was none.
func (p Process) LastLiveMBBefore(t time.Duration) (float64, bool) {
	for i := len(p.GCs) - 1; i >= 0; i-- {
		if p.GCs[i].At < t {
			return p.GCs[i].LiveMB, true
		}
	}
	return 0, false
}

// Median is the median of xs, 0 for none.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// Write stores v as indented JSON in path.
func Write(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding %s: %w", path, err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// Read loads path's JSON into v.
func Read(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("decoding %s: %w", path, err)
	}
	return nil
}
