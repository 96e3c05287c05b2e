// Package libbridge measures what github.com/kcache/cache/clientgo costs:
// the same informer workloads on a native kcache informer and on the
// kcache informer presented through client-go's interfaces (what
// controller-runtime's NewInformer option and the wrapped generated
// factory hand out). cmd/bridge runs the two alternately and prints the
// ratio wrapper / native.
package libbridge

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"

	kcache "github.com/kcache/cache"
	"github.com/kcache/cache/bench/internal/harness"
	"github.com/kcache/cache/clientgo"
	framework "github.com/kcache/cache/testing"
)

// Names of the two libraries in reports.
const (
	NativeName = "kcache"
	BridgeName = "kcache-via-clientgo"
)

// informer is what the workloads need of either informer.
type informer interface {
	RunWithContext(ctx context.Context)
	list() []interface{}
}

// builder makes an informer over lw with handlers registered.
type builder func(lw *framework.FakeControllerSource, handlers []*harness.CountingHandler) (informer, error)

type nativeInformer struct{ kcache.SharedIndexInformer }

func (n nativeInformer) list() []interface{} { return n.GetIndexer().List() }

type bridgeInformer struct{ toolscache.SharedIndexInformer }

func (b bridgeInformer) list() []interface{} { return b.GetIndexer().List() }

func buildNative(lw *framework.FakeControllerSource, handlers []*harness.CountingHandler) (informer, error) {
	inf := kcache.NewSharedIndexInformer(lw, &v1.Pod{}, 0, kcache.Indexers{kcache.NamespaceIndex: kcache.MetaNamespaceIndexFunc})
	for _, h := range handlers {
		if _, err := inf.AddEventHandler(h); err != nil {
			return nil, fmt.Errorf("add event handler: %w", err)
		}
	}
	return nativeInformer{inf}, nil
}

func buildBridge(lw *framework.FakeControllerSource, handlers []*harness.CountingHandler) (informer, error) {
	inf := clientgo.NewSharedIndexInformer(lw, &v1.Pod{}, 0, toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc})
	for _, h := range handlers {
		if _, err := inf.AddEventHandler(h); err != nil {
			return nil, fmt.Errorf("add event handler: %w", err)
		}
	}
	return bridgeInformer{inf}, nil
}

// Native returns the workloads on a native kcache informer.
func Native() harness.Library { return library(NativeName, buildNative) }

// Bridge returns the same workloads through the clientgo wrapper.
func Bridge() harness.Library { return library(BridgeName, buildBridge) }

func library(name string, build builder) harness.Library {
	return harness.Library{
		Name: name,
		Workloads: []harness.Workload{
			{Name: "Fanout/1handler", Group: harness.GroupInformer, Run: fanout(build, 1)},
			{Name: "Fanout/10handlers", Group: harness.GroupInformer, Run: fanout(build, 10)},
			{Name: "Informer/List", Group: harness.GroupLister, Run: list(build)},
		},
	}
}

// sourceFor returns a simulated API server serving the fixture's informer
// pods; the caller shuts it down.
func sourceFor(fx *harness.Fixture) *framework.FakeControllerSource {
	return harness.NewPodSource(fx.InformerPods(), true)
}

// start runs inf until the returned stop is called; stop waits for it.
func start(ctx context.Context, inf informer) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		inf.RunWithContext(ctx)
	}()
	return func() { cancel(); <-done }
}

// fanout times Sizes.Events Modified events from the first pushed until
// each of n handlers saw the last version of every pod. One op is one
// event; events/s is reported.
func fanout(build builder, n int) func(*testing.B, *harness.Fixture) error {
	return func(b *testing.B, fx *harness.Fixture) error {
		ctx, cancel := context.WithTimeout(context.Background(), fx.Sizes.Timeout)
		defer cancel()
		hs := harness.NewFanoutHandlers(fx, n)
		src := sourceFor(fx)
		defer src.Shutdown()
		inf, err := build(src, hs)
		if err != nil {
			return err
		}
		stop := start(ctx, inf)
		defer stop()
		return harness.TimeFanout(ctx, b, fx, src, hs, stop)
	}
}

// sink keeps List results alive so the loop is not optimised away.
//
//lint:ignore U1000 a benchmark sink is only ever written
var sink int

// list times List of a synced informer's cache of Sizes.InformerPods pods,
// through GetIndexer.
func list(build builder) func(*testing.B, *harness.Fixture) error {
	return func(b *testing.B, fx *harness.Fixture) error {
		ctx, cancel := context.WithTimeout(context.Background(), fx.Sizes.Timeout)
		defer cancel()
		h := harness.NewCountingHandler(len(fx.InformerPods()), 0)
		src := sourceFor(fx)
		defer src.Shutdown()
		inf, err := build(src, []*harness.CountingHandler{h})
		if err != nil {
			return err
		}
		stop := start(ctx, inf)
		defer stop()
		if err := h.WaitAdds(ctx); err != nil {
			return fmt.Errorf("initial sync: %w", err)
		}
		cpu := harness.StartLoop(b)
		for b.Loop() {
			sink += len(inf.list())
		}
		cpu.Report(b.N)
		return nil
	}
}
