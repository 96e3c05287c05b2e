package harness

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"testing"

	framework "github.com/kcache/cache/testing"
)

// NewFanoutHandlers returns n counting handlers that expect one add per
// informer pod, one update per informer event, and each pod's final
// version.
func NewFanoutHandlers(fx *Fixture, n int) []*CountingHandler {
	finalRV, finals := fx.InformerFinalVersions()
	hs := make([]*CountingHandler, n)
	for i := range hs {
		hs[i] = NewCountingHandler(len(fx.InformerPods()), len(fx.InformerEvents()))
		hs[i].ExpectFinal(finalRV, finals)
	}
	return hs
}

// TimeFanout measures the fan-out workload on an informer that is already
// running over src (a NewPodSource of the fixture's informer pods), feeds
// hs and stops when stop is called: it waits for the initial sync and the
// informer's watch, then times the fixture's Modified events from the
// first pushed until every handler saw each pod's last version, reports
// events/s and the fewest notifications a handler received, and fails if
// any handler missed one. Every library's driver shares it, so all are
// timed and counted alike.
func TimeFanout(ctx context.Context, b *testing.B, fx *Fixture, src *framework.FakeControllerSource, hs []*CountingHandler, stop func()) (err error) {
	events := fx.InformerEvents()
	for _, h := range hs {
		if err := h.WaitAdds(ctx); err != nil {
			return fmt.Errorf("initial sync: %w", err)
		}
	}
	if err := src.WaitForWatches(ctx, 1); err != nil {
		return fmt.Errorf("wait for watch: %w", err)
	}
	runtime.GC()
	cpu := StartCPUTimer(b)
	fed := make(chan struct{})
	go func() {
		defer close(fed)
		for _, p := range events {
			// The source gives each its next resource version, which is
			// the one the fixture wrote in it.
			src.Modify(p)
		}
	}()
	defer func() {
		// Stopping the informer stops its watch, which unblocks a feeder
		// waiting on it.
		stop()
		<-fed
	}()
	for _, h := range hs {
		if err := h.WaitFinal(ctx); err != nil {
			return err
		}
	}
	cpu.StopTimer()
	b.ReportMetric(float64(len(events)), UnitEvents)
	cpu.Report(len(events))
	b.ReportMetric(float64(len(events))/b.Elapsed().Seconds(), "events/s")
	// Each pod's last version is its last notification, so nothing more
	// can come to any handler: count what each received.
	least := int64(math.MaxInt64)
	for i, h := range hs {
		if err := h.CheckDelivered(len(fx.InformerPods()), len(events)); err != nil {
			return fmt.Errorf("handler %d of %d: %w", i+1, len(hs), err)
		}
		least = min(least, h.Delivered())
	}
	b.ReportMetric(float64(least), "delivered")
	return nil
}
