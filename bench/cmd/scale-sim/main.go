// Command scale-sim measures informers past what this machine's real API
// server holds: a million small objects (ConfigMaps of about 1 KB) served
// over HTTP by the module's simulated API server (kcache's testing
// package) from a process of its own, whose memory is not counted, and,
// one after the other, a child process per variant (client-go, kcache,
// kcache-noshare) syncing an informer on all of them. It prints a markdown
// table, one line per variant and a ratio line. See bench/README.md
// ("Scale simulation").
//
//	cd bench && go run ./cmd/scale-sim [-objects 1000000 | -quick] [-watchlist=false [-one-page]]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"k8s.io/klog/v2"
)

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case childFlag:
			os.Exit(childMain(os.Args[2:], os.Stdout, os.Stderr))
		case serverFlag:
			os.Exit(serverMain(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
		}
	}
	os.Exit(parentMain(os.Args[1:], os.Stdout, os.Stderr))
}

// options are the parent's flags.
type options struct {
	objects   int
	watchList bool
	onePage   bool
	timeout   time.Duration
	heapProf  string
	verbose   bool
	variants  []variant
}

// The default size, and -quick's.
const (
	defaultObjects = 1_000_000
	quickObjects   = 2_000
)

func parseOptions(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("scale-sim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.IntVar(&o.objects, "objects", defaultObjects, "ConfigMaps the simulated API server holds")
	quick := fs.Bool("quick", false, fmt.Sprintf("a small run for tests: %d objects", quickObjects))
	fs.BoolVar(&o.watchList, "watchlist", true, "let informers stream the initial list (their default); false: the server refuses, so they list in pages")
	fs.BoolVar(&o.onePage, "one-page", false, "the server answers a list in one response whatever its limit, as kube-apiserver does at resourceVersion 0 (with -watchlist=false)")
	fs.DurationVar(&o.timeout, "timeout", 30*time.Minute, "give up on a child after this long")
	fs.StringVar(&o.heapProf, "heapprofile", "", "write a heap profile of each child after its sync to PREFIX.VARIANT.sync")
	fs.BoolVar(&o.verbose, "v", false, "keep klog output")
	only := fs.String("only", "", "comma-separated variants to run (default all: "+variantNames()+")")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("scale-sim: unexpected arguments %q", fs.Args())
	}
	if *quick {
		o.objects = quickObjects
	}
	if o.objects < 1 {
		return o, fmt.Errorf("scale-sim: -objects %d: want at least 1", o.objects)
	}
	if o.timeout <= 0 {
		return o, fmt.Errorf("scale-sim: -timeout %s: want a positive duration", o.timeout)
	}
	vs, err := selectVariants(*only)
	if err != nil {
		return o, err
	}
	o.variants = vs
	return o, nil
}

func parentMain(args []string, stdout, stderr io.Writer) int {
	opts, err := parseOptions(args, stderr)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	if !opts.verbose {
		quietKlog()
	}
	results, err := run(context.Background(), opts, stderr)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	if err := writeReport(stdout, opts, results); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	return 0
}

// quietKlog sends klog's output nowhere: client-go's reflector logs when
// the informer stops.
func quietKlog() {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("logtostderr", "false")
	_ = fs.Set("stderrthreshold", "FATAL")
	klog.SetOutput(io.Discard)
}
