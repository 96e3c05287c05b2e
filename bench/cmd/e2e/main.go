// Command e2e measures the memory of an informer on every pod of a real
// kube-apiserver (kas/), client-go against kcache, each in its own child
// process, then, in a churn phase, the CPU each spends per watch event
// while this process updates the pods, and prints a markdown table; its
// last line gives the ratios kcache / client-go. See bench/README.md
// ("End to end").
//
//	kas/run.sh start && . kas/.cache/run/env
//	cd bench && go run ./cmd/e2e [-n 20000 | -quick] [-churn 60s -churn-rate 50]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"k8s.io/klog/v2"

	"github.com/kcache/cache/bench/internal/e2e"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == childFlag {
		os.Exit(childMain(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(parentMain(os.Args[1:], os.Stdout, os.Stderr))
}

// options are the parent's flags.
type options struct {
	pods       int
	workers    int
	kubeconfig string
	controlURL string
	timeout    time.Duration
	heapProf   string
	cpuProf    string
	verbose    bool
	variants   []variant
	layout     e2e.Layout
	// list is how the children's informers list; relist whether they
	// measure a forced relist after the sync.
	list   listMode
	relist bool
	// relistMemoryLimit, above zero, runs each child's relist under a Go
	// memory limit of that many times its settled memory.
	relistMemoryLimit float64
	// attribute has each child report, after its sync, where the cached
	// pods' bytes go.
	attribute bool
	// jsonOut, when set, is a file the results are written to as JSON,
	// for a driver (cmd/scale) to read.
	jsonOut string
	// churn is the churn phase's update stream; a zero Duration skips
	// the phase.
	churn e2e.Churn
}

// The churn phase's defaults, and -quick's.
const (
	defaultChurnDuration = 60 * time.Second
	defaultChurnRate     = 50 // pod updates per second: 100 watch events per second
	quickChurnDuration   = 10 * time.Second
	quickChurnRate       = 20
)

func parseOptions(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("e2e", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.IntVar(&o.pods, "n", 20_000, "pods in the cluster")
	quick := fs.Bool("quick", false, "a small run for CI: 1,000 pods, the untagged variants only (no second build)")
	fs.IntVar(&o.workers, "workers", 8, "concurrent writers creating pods")
	fs.StringVar(&o.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the API server (kas)")
	fs.StringVar(&o.controlURL, "control", os.Getenv("KAS_CONTROL_URL"), "kas control API URL, to restart the API server")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Minute, "give up on a child after this long")
	fs.StringVar(&o.heapProf, "heapprofile", "", "write heap profiles of each child to PREFIX.VARIANT.{sync,relist,churn}")
	fs.StringVar(&o.cpuProf, "cpuprofile", "", "write a CPU profile of each child's run (sync, and relist unless -relist=false) to PREFIX.VARIANT.run, and of each churn child's window to PREFIX.VARIANT.churn")
	fs.BoolVar(&o.verbose, "v", false, "keep klog output")
	o.layout = e2e.DefaultLayout
	fs.BoolVar(&o.layout.ApplierOwnsToken, "applier-owns-token", false,
		"the harsher workload: the applier writes each pod's token volume, so its managedFields entry is the pod's own (default: ServiceAccount admission adds it, as in a cluster)")
	list := fs.String("list", string(listStream), "how the informers list: stream (a watch sending the initial objects, client-go's default) or paged")
	fs.BoolVar(&o.relist, "relist", true, "after each sync, force a relist (etcd compacted, API server restarted) and measure it")
	fs.Float64Var(&o.relistMemoryLimit, "relist-memory-limit", 0, "run each relist under a Go memory limit (as GOMEMLIMIT sets) of this many times the child's settled memory; 0: none")
	fs.BoolVar(&o.attribute, "attribution", false, "after each sync, report where the cached pods' bytes go, by field path (a walk of every cached object, after the sync's figures are taken)")
	fs.StringVar(&o.jsonOut, "json", "", "also write the results as JSON to this file")
	only := fs.String("only", "", "comma-separated variants to run (default all: "+variantNames()+")")
	fs.DurationVar(&o.churn.Duration, "churn", defaultChurnDuration,
		"how long the churn phase updates the pods while every variant watches (0: no churn phase; -quick: 10s)")
	fs.Float64Var(&o.churn.Rate, "churn-rate", defaultChurnRate,
		"pod updates per second in the churn phase, each two watch events: labels and annotations, then the Ready condition (-quick: 20)")
	fs.Uint64Var(&o.churn.Seed, "churn-seed", 1, "seed of the order in which the churn phase updates the pods")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if *quick {
		o.pods = 1_000
		if *only == "" {
			*only = "client-go,kcache,kcache-noshare"
		}
		if !set["churn"] {
			o.churn.Duration = quickChurnDuration
		}
		if !set["churn-rate"] {
			o.churn.Rate = quickChurnRate
		}
	}
	var err error
	if o.list, err = parseListMode(*list); err != nil {
		return o, err
	}
	if o.churn.Duration < 0 || (o.churn.Duration > 0 && o.churn.Updates() < 1) {
		return o, fmt.Errorf("e2e: -churn %s at -churn-rate %g makes no update", o.churn.Duration, o.churn.Rate)
	}
	o.churn.Layout, o.churn.Pods, o.churn.Workers = o.layout, o.pods, o.workers
	if o.kubeconfig == "" || o.controlURL == "" {
		return o, fmt.Errorf("e2e: KUBECONFIG and KAS_CONTROL_URL must be set (kas/run.sh start; . kas/.cache/run/env)")
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
	ctx := context.Background()
	results, churned, err := run(ctx, opts, stderr)
	if err == nil && opts.jsonOut != "" {
		err = writeJSON(opts.jsonOut, results)
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	fmt.Fprintf(stdout, "workload: %d pods asked for, their token volumes written by the %s (-applier-owns-token: the applier; default: ServiceAccount admission)\n",
		opts.pods, opts.layout.TokenOwner())
	if churned != nil {
		fmt.Fprintln(stdout, churnLine(*churned))
	}
	fmt.Fprintln(stdout)
	if opts.cpuProf != "" {
		// Before the report: its summary stays the last line.
		if err := writeProfileSummaries(ctx, stdout, opts.cpuProf, opts.variants); err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
	}
	if err := writeReport(stdout, results); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	return 0
}

// writeJSON writes the results to path for a driver to read.
func writeJSON(path string, results []result) error {
	data, err := json.MarshalIndent(results, "", "  ")
	if err != nil {
		return fmt.Errorf("e2e: results as JSON: %w", err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("e2e: write results: %w", err)
	}
	return nil
}

// quietKlog sends klog's output nowhere: client-go's reflector logs the
// relist's 410 and the restart's dropped connections.
func quietKlog() {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("logtostderr", "false")
	_ = fs.Set("stderrthreshold", "FATAL")
	klog.SetOutput(io.Discard)
}
