package libclientgo

import (
	"context"
	"fmt"
	"os"
	"runtime/pprof"
	"time"

	v1 "k8s.io/api/core/v1"
	cache "k8s.io/client-go/tools/cache"

	"github.com/kcache/cache/bench/internal/harness"
)

// samplePeriod is how often the heap is sampled for its peak.
const samplePeriod = time.Millisecond

// memory syncs an informer with cfg.Pods fresh pods (every list or stream
// decodes new objects, as with a real API server), measures the steady heap,
// then expires the watch so that the informer relists a snapshot in which
// one pod in cfg.ChangedEvery changed, sampling the heap peak in both
// phases. It should run alone in its process: every figure is the whole
// process heap above a baseline taken just before the informer starts.
func memory(ctx context.Context, cfg harness.MemConfig) (harness.MemResult, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	n, l := cfg.Pods, harness.ClusterLayout
	res := harness.MemResult{Pods: n, ObjectBytes: harness.ObjectBytes(n, l)}

	src := harness.NewFreshPodSource(n, l, cfg.WatchList)
	defer src.Shutdown()
	inf := cache.NewSharedIndexInformer(src, &v1.Pod{}, 0, indexers())
	h := harness.NewCountingHandler(n, n)
	if _, err := inf.AddEventHandler(h); err != nil {
		return res, fmt.Errorf("add event handler: %w", err)
	}

	base := harness.SettledHeap()
	sampler := harness.StartSampler(samplePeriod)
	start := time.Now()
	stop := runInformer(ctx, inf)
	defer stop()
	err := h.WaitAdds(ctx)
	res.SyncSeconds = time.Since(start).Seconds()
	peak := sampler.Stop()
	if err != nil {
		return res, fmt.Errorf("initial sync: %w", err)
	}
	res.SyncPeakInuse, res.SyncPeakLive = above(peak.Inuse, base.Inuse), above(peak.Live, base.Live)
	res.SteadyBytes = above(harness.SettledHeap().Inuse, base.Inuse)
	if err := writeHeapProfile(cfg.HeapProfile, ".sync"); err != nil {
		return res, err
	}

	every := max(cfg.ChangedEvery, 1)
	if err := src.WaitForWatches(ctx, 1); err != nil {
		return res, fmt.Errorf("wait for watch: %w", err)
	}
	sampler = harness.StartSampler(samplePeriod)
	start = time.Now()
	if err = harness.ExpireChanging(src, n, every); err == nil {
		err = h.WaitUpdates(ctx)
	}
	res.RelistSeconds = time.Since(start).Seconds()
	peak = sampler.Stop()
	if err != nil {
		return res, fmt.Errorf("relist: %w", err)
	}
	res.RelistPeakInuse, res.RelistPeakLive = above(peak.Inuse, base.Inuse), above(peak.Live, base.Live)
	res.AfterRelistBytes = above(harness.SettledHeap().Inuse, base.Inuse)
	if err := writeHeapProfile(cfg.HeapProfile, ".relist"); err != nil {
		return res, err
	}
	return res, nil
}

func above(v, base uint64) float64 { return float64(int64(v) - int64(base)) }

// writeHeapProfile writes the heap profile to prefix+suffix when prefix is
// set.
func writeHeapProfile(prefix, suffix string) error {
	if prefix == "" {
		return nil
	}
	f, err := os.Create(prefix + suffix)
	if err != nil {
		return fmt.Errorf("heap profile: %w", err)
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return fmt.Errorf("heap profile: %w", err)
	}
	return f.Close()
}
