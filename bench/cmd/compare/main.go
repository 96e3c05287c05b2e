// Command compare measures github.com/kcache/cache against
// k8s.io/client-go/tools/cache with the same workloads and prints a
// markdown report: medians over alternating rounds (client-go, kcache,
// client-go, kcache, ...) in one process, the ratio kcache/client-go of
// each figure, and whether the targets of the performance issue are met.
//
// Memory is measured in a child process per library and round (this binary
// re-executed with -memchild), so that each heap starts clean.
//
//	go run ./cmd/compare                      # full run, under 15 min on 2 cores
//	go run ./cmd/compare -quick               # smoke run, about a minute
//	go run ./cmd/compare -only 'Indexer/(Add|Update)$' -rounds 7
//	go run ./cmd/compare -only Informer/10 -lib kcache -cpuprofile cpu.out
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime"
	"runtime/pprof"
	"time"

	"k8s.io/klog/v2"

	"github.com/kcache/cache/bench/internal/harness"
	"github.com/kcache/cache/bench/internal/libclientgo"
	"github.com/kcache/cache/bench/internal/libkcache"
)

// options are the command-line settings of a comparison.
type options struct {
	rounds      int
	quick       bool
	only        *regexp.Regexp
	lib         string // empty for both
	sizes       harness.Sizes
	mem         harness.MemConfig
	memRounds   int
	cpuProfile  string
	memProfile  string
	verbose     bool
	progress    io.Writer
	out         io.Writer
	childBinary string // the executable the memory children run
}

// libraries lists the libraries in the order each round runs them.
func libraries() []harness.Library {
	return []harness.Library{libclientgo.Library(), libkcache.Library()}
}

func main() {
	if isChild(os.Args[1:]) {
		os.Exit(childMain(os.Args[1:], os.Stdout, os.Stderr))
	}
	opts, err := parseOptions(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "compare:", err)
		os.Exit(2)
	}
	if err := run(context.Background(), opts); err != nil {
		fmt.Fprintln(os.Stderr, "compare:", err)
		os.Exit(1)
	}
}

func parseOptions(args []string) (options, error) {
	fs := flag.NewFlagSet("compare", flag.ContinueOnError)
	rounds := fs.Int("rounds", 0, "rounds per library (default 5, 2 with -quick)")
	quick := fs.Bool("quick", false, "small sizes and short runs: a smoke test of the harness")
	only := fs.String("only", "", "run only workloads whose name matches this regexp (the memory probe is named Memory)")
	lib := fs.String("lib", "", "run only this library (client-go or kcache), for profiling")
	benchTime := fs.Duration("benchtime", 0, "how long each loop workload iterates per round")
	window := fs.Duration("window", 0, "how long each write-rate run counts events")
	memPods := fs.Int("mempods", 0, "pods of the memory probe (default 100000, 10000 with -quick)")
	memRounds := fs.Int("memrounds", 0, "memory probe rounds per library (default 2, 1 with -quick)")
	watchList := fs.Bool("watchlist", true, "memory probe: stream lists (the informer default) rather than list and page")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the in-process workloads to this file")
	memProfile := fs.String("memprofile", "", "write an allocation profile of the in-process workloads to this file, "+
		"and heap profiles of the memory children to this prefix plus .<lib>.sync and .<lib>.relist")
	verbose := fs.Bool("v", false, "keep the libraries' klog output")
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	if fs.NArg() > 0 {
		return options{}, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	o := options{
		quick: *quick, lib: *lib, cpuProfile: *cpuProfile, memProfile: *memProfile, verbose: *verbose,
		sizes: harness.FullSizes, rounds: 5, memRounds: 2,
		mem:      harness.MemConfig{Pods: 100_000, WatchList: *watchList, ChangedEvery: 100, Timeout: 5 * time.Minute},
		progress: os.Stderr, out: os.Stdout,
	}
	if o.quick {
		o.sizes, o.rounds, o.memRounds, o.mem.Pods = harness.QuickSizes, 2, 1, 10_000
	}
	if *rounds > 0 {
		o.rounds = *rounds
	}
	if *memRounds > 0 {
		o.memRounds = *memRounds
	}
	if *memPods > 0 {
		o.mem.Pods = *memPods
	}
	if *benchTime > 0 {
		o.sizes.BenchTime = *benchTime
	}
	if *window > 0 {
		o.sizes.Window = *window
	}
	re, err := regexp.Compile(*only)
	if err != nil {
		return options{}, fmt.Errorf("-only: %w", err)
	}
	o.only = re
	if o.lib != "" && o.lib != libclientgo.LibName && o.lib != libkcache.LibName {
		return options{}, fmt.Errorf("-lib: want %s or %s, got %q", libclientgo.LibName, libkcache.LibName, o.lib)
	}
	exe, err := os.Executable()
	if err != nil {
		return options{}, fmt.Errorf("find own executable: %w", err)
	}
	o.childBinary = exe
	return o, nil
}

// run measures what opts select and prints the report.
func run(ctx context.Context, opts options) error {
	if !opts.verbose {
		quietKlog()
	}
	if opts.cpuProfile != "" {
		f, err := os.Create(opts.cpuProfile)
		if err != nil {
			return fmt.Errorf("cpu profile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("cpu profile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	began := time.Now()
	libs := libraries()
	if opts.lib != "" {
		libs = filterLibs(libs, opts.lib)
	}
	rep := &report{
		rounds: opts.rounds, memRounds: opts.memRounds, sizes: opts.sizes, mem: opts.mem,
		libs: libNames(libs), started: began, loadStart: loadAverage(),
	}
	fx := harness.NewFixture(opts.sizes)
	rep.rows = runWorkloads(ctx, opts, libs, fx)
	if opts.only.MatchString("Memory") {
		rep.memory = runMemory(ctx, opts, libs)
	}
	if opts.memProfile != "" {
		if err := writeAllocProfile(opts.memProfile); err != nil {
			return err
		}
	}
	rep.elapsed, rep.loadEnd = time.Since(began), loadAverage()
	rep.write(opts.out)
	if n := rep.errorCount(); n > 0 {
		return fmt.Errorf("%d runs failed (see Errors in the report)", n)
	}
	return nil
}

func filterLibs(libs []harness.Library, name string) []harness.Library {
	var out []harness.Library
	for _, l := range libs {
		if l.Name == name {
			out = append(out, l)
		}
	}
	return out
}

func libNames(libs []harness.Library) []string {
	names := make([]string, len(libs))
	for i, l := range libs {
		names[i] = l.Name
	}
	return names
}

// quietKlog drops the libraries' log lines (reflector warnings about the
// expired watch and the like) so that the report stays readable.
func quietKlog() {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("logtostderr", "false")
	_ = fs.Set("alsologtostderr", "false")
	_ = fs.Set("stderrthreshold", "FATAL")
	klog.SetOutput(io.Discard)
}

func writeAllocProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("alloc profile: %w", err)
	}
	runtime.GC()
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		f.Close()
		return fmt.Errorf("alloc profile: %w", err)
	}
	return f.Close()
}
