package main

import (
	"bufio"
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
// file gets.
const profileTop = 30

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
			cmd := exec.CommandContext(ctx, "go", "tool", "pprof", "-top", "-cum", "-nodecount="+strconv.Itoa(profileTop), path)
			var out, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &stderr
			if err := cmd.Run(); err != nil {
				return fmt.Errorf("e2e: summarize %s: %w: %s", path, err, strings.TrimSpace(stderr.String()))
			}
			label := "cpu-profile " + v.Name() + "." + kind + ": "
			fmt.Fprintf(w, "\n%sgo tool pprof -top -cum -nodecount=%d %s\n", label, profileTop, path)
			prefixLines(w, label, &out)
		}
	}
	return nil
}

// prefixLines copies r's non-empty lines to w, each after prefix.
func prefixLines(w io.Writer, prefix string, r io.Reader) {
	s := bufio.NewScanner(r)
	for s.Scan() {
		if line := strings.TrimSpace(s.Text()); line != "" {
			fmt.Fprintln(w, prefix+line)
		}
	}
}
