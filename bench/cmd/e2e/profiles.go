package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// profileTop is how many functions of each child's CPU profile the result
// file gets, by cumulative time; of the first profileOwn, those of this
// repository's packages (kcache's own costs) are added.
const (
	profileTop = 30
	profileOwn = 400
	ownPackage = "github.com/kcache/cache"
)

// writeProfileSummaries writes the top of each variant's CPU profiles
// (-cpuprofile PREFIX: PREFIX.VARIANT.run, the child's run, and
// PREFIX.VARIANT.churn, its churn window), by cumulative time, as lines
// "cpu-profile VARIANT.KIND: ..." for the result file, so that a figure
// read from a profile has a file to come from. A profile not written is
// skipped.
func writeProfileSummaries(ctx context.Context, w io.Writer, prefix string, variants []variant) error {
	for _, v := range variants {
		for _, kind := range []string{"run", "churn"} {
			path := prefix + "." + v.Name() + "." + kind
			if _, err := os.Stat(path); err != nil {
				continue
			}
			cmd := exec.CommandContext(ctx, "go", "tool", "pprof", "-top", "-cum", "-nodecount="+strconv.Itoa(profileOwn), path)
			var out, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &stderr
			if err := cmd.Run(); err != nil {
				return fmt.Errorf("e2e: summarize %s: %w: %s", path, err, strings.TrimSpace(stderr.String()))
			}
			label := "cpu-profile " + v.Name() + "." + kind + ": "
			fmt.Fprintf(w, "\n%sgo tool pprof -top -cum -nodecount=%d %s: its header, the first %d functions, then those of %s\n",
				label, profileOwn, path, profileTop, ownPackage)
			prefixLines(w, label, topAndOwn(out.String(), profileTop, ownPackage))
		}
	}
	return nil
}

// prefixLines copies lines to w, each after prefix.
func prefixLines(w io.Writer, prefix string, lines []string) {
	for _, l := range lines {
		fmt.Fprintln(w, prefix+l)
	}
}

// topAndOwn keeps, of a pprof -top listing, its header (the lines before
// the column titles, and those), its first top functions, then the further
// functions of package own; empty lines go.
func topAndOwn(listing string, top int, own string) []string {
	var out []string
	header, functions := true, 0
	for _, l := range strings.Split(listing, "\n") {
		l = strings.TrimSpace(l)
		switch {
		case l == "":
		case header:
			out = append(out, l)
			header = !strings.HasPrefix(l, "flat ")
		case functions < top:
			out = append(out, l)
			functions++
		case strings.Contains(l, own):
			out = append(out, l)
		}
	}
	return out
}
