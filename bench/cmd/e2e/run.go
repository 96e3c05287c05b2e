package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/kcache/cache/bench/internal/e2e"
	"github.com/kcache/cache/bench/internal/harness"
)

// result is one variant's measurement.
type result struct {
	Variant variant
	harness.E2EResult
	// Churn is the variant's churn phase, nil when it did not run.
	Churn *harness.ChurnResult
}

// churnRun is the churn phase's update stream and what it did.
type churnRun struct {
	Churn e2e.Churn
	Stats e2e.ChurnStats
}

// run fills the server with opts.pods pods, then measures every variant in
// its own child process, one after the other; then, unless opts.churn has
// no duration, runs the churn phase (runChurn). The returned churnRun is
// nil when the churn phase did not run.
func run(ctx context.Context, opts options, progress io.Writer) ([]result, *churnRun, error) {
	cfg, err := restConfig(opts.kubeconfig)
	if err != nil {
		return nil, nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("clientset: %w", err)
	}
	pods, err := e2e.Populate(ctx, cs, opts.layout, opts.pods, opts.workers, progress)
	if err != nil {
		return nil, nil, err
	}
	dir, err := os.MkdirTemp("", "kcache-e2e-")
	if err != nil {
		return nil, nil, fmt.Errorf("temp dir: %w", err)
	}
	defer os.RemoveAll(dir)
	var out []result
	var bins []string
	for _, v := range opts.variants {
		bin, err := childBinary(ctx, v, dir, progress)
		if err != nil {
			return nil, nil, err
		}
		bins = append(bins, bin)
		began := time.Now()
		res, err := spawnChild(ctx, opts, v, bin, pods, progress)
		if err != nil {
			return nil, nil, err
		}
		fmt.Fprintf(progress, "e2e: %s: %d pods, synced in %.1f s, %.0f B/pod (child took %.0f s)\n",
			v.Name(), res.Pods, res.SyncSeconds, res.HeapPerPod(), time.Since(began).Seconds())
		out = append(out, result{Variant: v, E2EResult: res})
	}
	if opts.churn.Duration <= 0 {
		return out, nil, nil
	}
	churned, stats, err := runChurn(ctx, opts, cs, bins, pods, progress)
	if err != nil {
		return nil, nil, fmt.Errorf("churn phase: %w", err)
	}
	for k := range out {
		out[k].Churn = &churned[k]
		fmt.Fprintf(progress, "e2e: churn: %s: %d events, %.1f µs CPU each, %.0f B/pod after\n", out[k].Variant.Name(),
			churned[k].Events, churned[k].CPUPerEvent()*1e6, churned[k].HeapPerPodAfter())
	}
	return out, &churnRun{Churn: opts.churn, Stats: stats}, nil
}
