package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kcache/cache/bench/internal/harness"
)

// result is one variant's measurement.
type result struct {
	Variant variant
	harness.ScaleSimResult
}

// run starts the server process, then measures every variant in its own
// child process, one after the other, against it.
func run(ctx context.Context, opts options, progress io.Writer) ([]result, error) {
	srv, err := startServer(opts, progress)
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	fmt.Fprintf(progress, "scale-sim: server holds %d ConfigMaps (loaded in %.1f s), at %s\n",
		opts.objects, srv.Loaded.Seconds(), srv.URL)
	var out []result
	for _, v := range opts.variants {
		began := time.Now()
		res, err := spawnChild(ctx, opts, v, srv.URL, progress)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(progress, "scale-sim: %s: %d objects, synced in %.1f s, %.0f B/object (child took %.0f s)\n",
			v.Name(), res.Objects, res.SyncSeconds, res.HeapPerObject(), time.Since(began).Seconds())
		out = append(out, result{Variant: v, ScaleSimResult: res})
	}
	return out, nil
}

// meanWireSize is the mean size of the layout's ConfigMaps as the server
// encodes them, over a sample spread across the first n.
func meanWireSize(l harness.ConfigMapLayout, n int) (float64, error) {
	const samples = 1000
	step := max(n/samples, 1)
	codec := wireCodec()
	total, count := 0, 0
	for i := 0; i < n; i += step {
		data, err := runtime.Encode(codec, l.ConfigMap(i, uint64(i+1)))
		if err != nil {
			return 0, fmt.Errorf("encode a ConfigMap: %w", err)
		}
		total, count = total+len(data), count+1
	}
	return float64(total) / float64(count), nil
}
