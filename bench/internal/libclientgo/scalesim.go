package libclientgo

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	cache "k8s.io/client-go/tools/cache"

	"github.com/kcache/cache/bench/internal/harness"
)

// scaleSim is the scale simulation's child: a shared informer on every
// ConfigMap of a simulated API server in another process, with the
// namespace index and one handler, the program shape of e2e on small
// objects. It measures the initial sync and the steady heap after it. It
// should run alone in its process.
func scaleSim(ctx context.Context, cfg harness.ScaleSimConfig) (harness.ScaleSimResult, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	res := harness.ScaleSimResult{Lib: LibName}
	lw := cache.NewListWatchFromClient(cfg.Client, "configmaps", v1.NamespaceAll, fields.Everything())
	inf := cache.NewSharedIndexInformer(lw, &v1.ConfigMap{}, 0,
		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	h := harness.NewCountingHandler(cfg.Objects, 0)
	if _, err := inf.AddEventHandler(h); err != nil {
		return res, fmt.Errorf("add event handler: %w", err)
	}

	base := harness.SettledHeap()
	if err := harness.ResetPeakRSS(); err != nil {
		return res, err
	}
	sampler := harness.StartSampler(samplePeriod)
	start, cpu0 := time.Now(), harness.ProcessCPU()
	stop := runInformer(ctx, inf)
	defer stop()
	err := h.WaitAdds(ctx)
	res.SyncSeconds = time.Since(start).Seconds()
	res.SyncCPUSeconds = (harness.ProcessCPU() - cpu0).Seconds()
	peak := sampler.Stop()
	res.PeakRSS = float64(harness.PeakRSS())
	if err != nil {
		return res, fmt.Errorf("initial sync: %w", err)
	}
	res.PeakHeap, res.PeakLive = above(peak.Inuse, base.Inuse), above(peak.Live, base.Live)
	res.SteadyHeap = above(harness.SettledHeap().Inuse, base.Inuse)
	res.Objects = len(inf.GetIndexer().ListKeys())
	return res, writeHeapProfile(cfg.HeapProfile, ".sync")
}
