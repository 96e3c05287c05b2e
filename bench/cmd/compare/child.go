package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/kcache/cache/bench/internal/harness"
)

// childFlag, as the first argument, makes the binary a memory child.
const childFlag = "-memchild"

// isChild reports whether args start a memory child.
func isChild(args []string) bool { return len(args) > 0 && strings.HasPrefix(args[0], childFlag+"=") }

// childMain runs the memory probe of one library and writes its result as
// JSON to stdout. It returns the exit code.
func childMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("memchild", flag.ContinueOnError)
	fs.SetOutput(stderr)
	lib := fs.String("memchild", "", "library to probe")
	pods := fs.Int("mempods", 100_000, "pods to sync")
	watchList := fs.Bool("watchlist", true, "stream lists")
	changedEvery := fs.Int("changedevery", 100, "one pod in this many changes before the relist")
	heapProfile := fs.String("heapprofile", "", "heap profile prefix")
	timeout := fs.Duration("timeout", 5*time.Minute, "give up after this long")
	verbose := fs.Bool("v", false, "keep klog output")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if !*verbose {
		quietKlog()
	}
	for _, l := range libraries() {
		if l.Name != *lib {
			continue
		}
		res, err := l.Memory(context.Background(), harness.MemConfig{
			Pods: *pods, WatchList: *watchList, ChangedEvery: *changedEvery,
			HeapProfile: *heapProfile, Timeout: *timeout,
		})
		if err != nil {
			fmt.Fprintf(stderr, "memory probe of %s: %v\n", *lib, err)
			return 1
		}
		if err := json.NewEncoder(stdout).Encode(res); err != nil {
			fmt.Fprintf(stderr, "memory probe of %s: %v\n", *lib, err)
			return 1
		}
		return 0
	}
	fmt.Fprintf(stderr, "memory probe: unknown library %q\n", *lib)
	return 2
}

// spawnChild runs the memory probe of lib in a fresh process.
func spawnChild(ctx context.Context, opts options, lib string) (harness.MemResult, error) {
	args := []string{
		childFlag + "=" + lib,
		"-mempods=" + strconv.Itoa(opts.mem.Pods),
		"-watchlist=" + strconv.FormatBool(opts.mem.WatchList),
		"-changedevery=" + strconv.Itoa(opts.mem.ChangedEvery),
		"-timeout=" + opts.mem.Timeout.String(),
		"-v=" + strconv.FormatBool(opts.verbose),
	}
	if opts.memProfile != "" {
		args = append(args, "-heapprofile="+opts.memProfile+"."+lib)
	}
	cmd := exec.CommandContext(ctx, opts.childBinary, args...)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = opts.progress
	if err := cmd.Run(); err != nil {
		return harness.MemResult{}, fmt.Errorf("memory child: %w", err)
	}
	var res harness.MemResult
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		return harness.MemResult{}, fmt.Errorf("memory child output %q: %w", stdout.String(), err)
	}
	return res, nil
}
