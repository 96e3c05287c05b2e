package main

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"slices"
)

// dryRunEviction matches the descheduler's log line for an eviction it
// only decided (dry run); the pod, the plugin and the node are what is
// compared. cycleEnd matches the line that ends a descheduling cycle.
var (
	dryRunEviction = regexp.MustCompile(`"Evicted pod in dry run mode"`)
	cycleEnd       = regexp.MustCompile(`"Number of evictions/requests"`)
	podField       = regexp.MustCompile(` pod="([^"]+)"`)
	strategyField  = regexp.MustCompile(` strategy="([^"]+)"`)
	nodeField      = regexp.MustCompile(` node="([^"]+)"`)
)

// cycles reads a descheduler log and returns each finished cycle's dry-run
// evictions as sorted "plugin pod node" lines; evictions after the last
// finished cycle are left out.
func cycles(r io.Reader) ([][]string, error) {
	var out [][]string
	var cur []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if cycleEnd.MatchString(line) {
			slices.Sort(cur)
			out = append(out, cur)
			cur = nil
			continue
		}
		if !dryRunEviction.MatchString(line) {
			continue
		}
		pod, strategy, node := podField.FindStringSubmatch(line), strategyField.FindStringSubmatch(line), nodeField.FindStringSubmatch(line)
		if pod == nil || strategy == nil || node == nil {
			return nil, fmt.Errorf("an eviction line without pod, strategy or node: %q", line)
		}
		cur = append(cur, strategy[1]+" "+pod[1]+" "+node[1])
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading the log: %w", err)
	}
	return out, nil
}

// difference describes how b differs from a in at most max lines, or "".
func difference(a, b []string, max int) string {
	inA := map[string]bool{}
	for _, s := range a {
		inA[s] = true
	}
	inB := map[string]bool{}
	for _, s := range b {
		inB[s] = true
	}
	var out []string
	for _, s := range a {
		if !inB[s] {
			out = append(out, "- "+s)
		}
	}
	for _, s := range b {
		if !inA[s] {
			out = append(out, "+ "+s)
		}
	}
	if len(out) == 0 && len(a) != len(b) {
		out = append(out, fmt.Sprintf("same lines, %d against %d (repeats)", len(a), len(b)))
	}
	if len(out) > max {
		out = append(out[:max], fmt.Sprintf("... %d more", len(out)-max))
	}
	s := ""
	for _, l := range out {
		s += "    " + l + "\n"
	}
	return s
}
