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
}

// run fills the server with opts.pods pods, then measures every variant in
// its own child process, one after the other.
func run(ctx context.Context, opts options, progress io.Writer) ([]result, error) {
	cfg, err := restConfig(opts.kubeconfig)
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("clientset: %w", err)
	}
	pods, err := e2e.Populate(ctx, cs, opts.layout, opts.pods, opts.workers, progress)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "kcache-e2e-")
	if err != nil {
		return nil, fmt.Errorf("temp dir: %w", err)
	}
	defer os.RemoveAll(dir)
	var out []result
	for _, v := range opts.variants {
		bin, err := childBinary(ctx, v, dir, progress)
		if err != nil {
			return nil, err
		}
		began := time.Now()
		res, err := spawnChild(ctx, opts, v, bin, pods, progress)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(progress, "e2e: %s: %d pods, synced in %.1f s, %.0f B/pod (child took %.0f s)\n",
			v.Name(), res.Pods, res.SyncSeconds, res.HeapPerPod(), time.Since(began).Seconds())
		out = append(out, result{Variant: v, E2EResult: res})
	}
	return out, nil
}
