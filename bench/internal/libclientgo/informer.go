package libclientgo

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	cache "k8s.io/client-go/tools/cache"

	"github.com/kcache/cache/bench/internal/harness"
	framework "github.com/kcache/cache/testing"
)

// newInformer returns a shared index informer over a simulated API server
// serving the fixture's informer pods, with the handlers registered. The
// caller shuts the server down.
func newInformer(fx *harness.Fixture, handlers ...*harness.CountingHandler) (cache.SharedIndexInformer, *framework.FakeControllerSource, error) {
	src := harness.NewPodSource(fx.InformerPods(), true)
	inf := cache.NewSharedIndexInformer(src, &v1.Pod{}, 0, indexers())
	for _, h := range handlers {
		if _, err := inf.AddEventHandler(h); err != nil {
			src.Shutdown()
			return nil, nil, fmt.Errorf("add event handler: %w", err)
		}
	}
	return inf, src, nil
}

// runInformer runs inf until the returned stop is called; stop waits for
// Run to return.
func runInformer(ctx context.Context, inf cache.SharedIndexInformer) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		inf.RunWithContext(ctx)
	}()
	return func() {
		cancel()
		<-done
	}
}

// informerEvents times Sizes.Events Modified events through an informer
// holding Sizes.InformerPods pods, from the first event pushed to the moment
// each of the handlers has seen the last version of every pod. Then every
// handler must have received every notification, one add per pod and one
// update per event: a library that merged or lost any fails the run. One
// op is one event.
func informerEvents(handlers int) func(*testing.B, *harness.Fixture) error {
	return func(b *testing.B, fx *harness.Fixture) error {
		ctx, cancel := context.WithTimeout(context.Background(), fx.Sizes.Timeout)
		defer cancel()
		hs := harness.NewFanoutHandlers(fx, handlers)
		inf, src, err := newInformer(fx, hs...)
		if err != nil {
			return err
		}
		defer src.Shutdown()
		stop := runInformer(ctx, inf)
		defer stop()
		return harness.TimeFanout(ctx, b, fx, src, hs, stop)
	}
}

// The write-rate feeder keeps at most inFlight events pushed but not yet
// seen by the handler, so that the queues cannot grow without bound. It
// waits for the handler's progress signal, sent every inFlight/4 updates,
// whenever more than half are in flight: waking per batch rather than per
// event keeps the feeder's own scheduling out of the measured rate.
const inFlight = 4096

// writeRate counts the Modified events an informer applies (as seen by one
// handler) during Sizes.Window while readers goroutines loop
// ListAllByNamespace with the tier=web selector over its namespace of
// Sizes.InformerPods pods. One op is one applied event.
func writeRate(readers int) func(*testing.B, *harness.Fixture) error {
	return func(b *testing.B, fx *harness.Fixture) (err error) {
		ctx, cancel := context.WithTimeout(context.Background(), fx.Sizes.Timeout)
		defer cancel()
		pods := fx.InformerPods()
		progress := make(chan struct{}, 1)
		h := harness.NewCountingHandler(len(pods), math.MaxInt)
		h.SignalProgress(progress, inFlight/4)
		inf, src, err := newInformer(fx, h)
		if err != nil {
			return err
		}
		defer src.Shutdown()
		stop := runInformer(ctx, inf)
		if err := h.WaitAdds(ctx); err != nil {
			stop()
			return fmt.Errorf("initial sync: %w", err)
		}
		if err := src.WaitForWatches(ctx, 1); err != nil {
			stop()
			return fmt.Errorf("wait for watch: %w", err)
		}

		var (
			wg       sync.WaitGroup
			quit     = make(chan struct{})
			lists    atomic.Int64
			errMu    sync.Mutex
			firstErr error
		)
		fail := func(e error) {
			errMu.Lock()
			firstErr = errors.Join(firstErr, e)
			errMu.Unlock()
		}
		sel := fx.Selector()
		for range readers {
			wg.Go(func() {
				c := newPodCollector(len(pods))
				idx := inf.GetIndexer()
				for {
					select {
					case <-quit:
						return
					default:
					}
					c.pods = c.pods[:0]
					if err := cache.ListAllByNamespace(idx, harness.BigNamespace, sel, c.add); err != nil {
						fail(fmt.Errorf("list all by namespace: %w", err))
						return
					}
					lists.Add(1)
				}
			})
		}
		wg.Go(func() {
			rv := uint64(len(pods) + 1)
			// A tick backs the progress signal up, in case the informer
			// ever merged updates and the handler fell short of a multiple.
			tick := time.NewTicker(10 * time.Millisecond)
			defer tick.Stop()
			for k := int64(0); ; k++ {
				for k-h.Updates() > inFlight/2 {
					select {
					case <-progress:
					case <-tick.C:
					case <-quit:
						return
					}
				}
				// The source gives the pod its next resource version,
				// which is rv.
				src.Modify(harness.Modified(pods[k%int64(len(pods))], rv, ""))
				rv++
			}
		})

		time.Sleep(fx.Sizes.Window / 4) // let the pipeline fill
		events0, lists0 := h.Updates(), lists.Load()
		cpu := harness.StartCPUTimer(b)
		time.Sleep(fx.Sizes.Window)
		cpu.StopTimer()
		events, listed := h.Updates()-events0, lists.Load()-lists0
		close(quit)
		stop()
		wg.Wait()
		if firstErr != nil {
			return firstErr
		}
		secs := b.Elapsed().Seconds()
		b.ReportMetric(float64(events), harness.UnitEvents)
		cpu.Report(int(events))
		b.ReportMetric(float64(events)/secs, "events/s")
		b.ReportMetric(float64(listed)/secs, "lists/s")
		return nil
	}
}
