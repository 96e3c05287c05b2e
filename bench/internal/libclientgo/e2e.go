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

// e2e is the program shape the end-to-end benchmark measures, the same for
// both libraries: a shared informer on every pod of a real API server, one
// index (by namespace) and one handler. It syncs, measures the steady heap,
// then has the server expire the watch and measures the relist. It should
// run alone in its process.
func e2e(ctx context.Context, cfg harness.E2EConfig) (harness.E2EResult, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	res := harness.E2EResult{Lib: LibName, Pods: cfg.Pods}
	inf, h, err := e2eInformer(cfg.Client, cfg.Pods, 0)
	if err != nil {
		return res, err
	}

	base := harness.SettledHeap()
	if err := harness.ResetPeakRSS(); err != nil {
		return res, err
	}
	sampler := harness.StartSampler(samplePeriod)
	start, cpu0 := time.Now(), harness.ProcessCPU()
	stop := runInformer(ctx, inf)
	defer stop()
	err = h.WaitAdds(ctx)
	res.SyncSeconds = time.Since(start).Seconds()
	res.SyncCPUSeconds = (harness.ProcessCPU() - cpu0).Seconds()
	peak := sampler.Stop()
	res.SyncPeakRSS = float64(harness.PeakRSS())
	if err != nil {
		return res, fmt.Errorf("initial sync: %w", err)
	}
	res.SyncPeakHeap, res.SyncPeakLive = above(peak.Inuse, base.Inuse), above(peak.Live, base.Live)
	settled := harness.SettledHeap()
	res.SteadyHeap, res.SteadyLive = above(settled.Inuse, base.Inuse), above(settled.Live, base.Live)
	res.Pods = len(inf.GetIndexer().ListKeys())
	if err := writeHeapProfile(cfg.HeapProfile, ".sync"); err != nil {
		return res, err
	}
	if cfg.AfterSync != nil {
		if err := cfg.AfterSync(inf.GetIndexer()); err != nil {
			return res, err
		}
	}

	if cfg.Relist == nil {
		res.CPUSeconds = harness.ProcessCPU().Seconds()
		return res, nil
	}
	if err := e2eRelist(ctx, cfg, inf, h, base, &res); err != nil {
		return res, err
	}
	res.CPUSeconds = harness.ProcessCPU().Seconds()
	return res, writeHeapProfile(cfg.HeapProfile, ".relist")
}

// relistSettle is how long the handler must stay silent, once the relist's
// list is in the informer, for the relist to count as over.
const relistSettle = 3 * time.Second

// e2eRelist has the server force a relist of the synced informer and
// measures it into res: time, CPU, peaks, and the notifications it caused.
func e2eRelist(ctx context.Context, cfg harness.E2EConfig, inf cache.SharedIndexInformer, h *harness.CountingHandler,
	base harness.HeapFigures, res *harness.E2EResult) error {
	harness.SettledHeap()
	if cfg.RelistMemoryLimit > 0 {
		limit, from, lift := harness.LimitMemory(cfg.RelistMemoryLimit)
		defer lift()
		res.RelistMemoryLimit, res.RelistSteadyMemory = float64(limit), float64(from)
	}
	if err := harness.ResetPeakRSS(); err != nil {
		return err
	}
	before := h.Counts()
	sampler := harness.StartSampler(samplePeriod)
	start, cpu0 := time.Now(), harness.ProcessCPU()
	minRV, err := cfg.Relist(ctx)
	last := start
	if err == nil {
		last, err = harness.RelistWait{Handler: h, SyncedRV: inf.LastSyncResourceVersion, MinRV: minRV,
			Settle: relistSettle, Expect: cfg.RelistNotifications(), Stall: harness.RelistStall}.Wait(ctx)
	}
	res.RelistSeconds = last.Sub(start).Seconds()
	res.RelistCPUSeconds = (harness.ProcessCPU() - cpu0).Seconds()
	peak := sampler.Stop()
	res.RelistPeakRSS = float64(harness.PeakRSS())
	if err != nil {
		return fmt.Errorf("relist: %w", err)
	}
	got := h.Counts().Since(before)
	res.RelistAdds, res.RelistUpdates, res.RelistDeletes = got.Adds, got.Updates, got.Deletes
	res.RelistPeakHeap, res.RelistPeakLive = above(peak.Inuse, base.Inuse), above(peak.Live, base.Live)
	res.AfterRelistHeap = above(harness.SettledHeap().Inuse, base.Inuse)
	return nil
}

// e2eInformer is the informer every e2e child measures: all pods, the
// namespace index, and one counting handler expecting adds adds and
// updates updates.
func e2eInformer(client cache.Getter, adds, updates int) (cache.SharedIndexInformer, *harness.CountingHandler, error) {
	lw := cache.NewListWatchFromClient(client, "pods", v1.NamespaceAll, fields.Everything())
	inf := cache.NewSharedIndexInformer(lw, &v1.Pod{}, 0,
		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	h := harness.NewCountingHandler(adds, updates)
	if _, err := inf.AddEventHandler(h); err != nil {
		return nil, nil, fmt.Errorf("add event handler: %w", err)
	}
	return inf, h, nil
}

// e2eChurn is the churn phase's child: the same informer, synced, then
// measured by harness.MeasureChurn while another process updates the pods.
// It should run alone in its process.
func e2eChurn(ctx context.Context, cfg harness.ChurnConfig) (harness.ChurnResult, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	res := harness.ChurnResult{Lib: LibName}
	inf, h, err := e2eInformer(cfg.Client, cfg.Pods, 0)
	if err != nil {
		return res, err
	}
	peak := harness.NewHeapPeak()
	h.ObserveEach(peak.Observe)
	base := harness.SettledHeap()
	stop := runInformer(ctx, inf)
	defer stop()
	if err := h.WaitAdds(ctx); err != nil {
		return res, fmt.Errorf("initial sync: %w", err)
	}
	res, err = harness.MeasureChurn(ctx, cfg, harness.ChurnProbe{
		Pods: len(inf.GetIndexer().ListKeys()), Delivered: h.Delivered, Peak: peak, Base: base})
	res.Lib = LibName
	return res, err
}
