package sharding

import (
	"context"
	"fmt"
	"reflect"
	"time"

	kcache "github.com/kcache/cache"
	"github.com/kcache/cache/clientgo"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
)

// NewInformer has the signature of controller-runtime's
// cache.Options.NewInformer (and of client-go's NewSharedIndexInformer):
//
//	cache.Options{NewInformer: sharder.NewInformer}
//
// An informer of a sharded kind (Options.Objects) lists and watches
// through a kcache ShardedListerWatcher around lw, held at the replica's
// range and moved with it; before the replica claims its first range its
// lists wait, so it syncs with its own part, never with everything. Its
// event handlers are never told of an object that moved to another
// replica (kcache's MovedOutOfShard): a move is not a deletion. Any other
// kind gets clientgo.NewSharedIndexInformer, unsharded. Every informer
// runs on kcache through the clientgo bridge.
func (s *Sharder) NewInformer(lw toolscache.ListerWatcher, exampleObject runtime.Object, defaultEventHandlerResyncPeriod time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
	kind := reflect.TypeOf(exampleObject)
	if !s.kinds[kind] {
		return clientgo.NewSharedIndexInformer(lw, exampleObject, defaultEventHandlerResyncPeriod, indexers)
	}
	inf := clientgo.NewSharedIndexInformer(s.shardedListerWatcher(lw), exampleObject, defaultEventHandlerResyncPeriod, indexers)
	s.mu.Lock()
	s.stores[kind] = append(s.stores[kind], inf.GetIndexer())
	s.mu.Unlock()
	return &shardedInformer{SharedIndexInformer: inf}
}

// wholeRange is the selector a sharded informer is built with before the
// replica claims its first range. Nothing is listed under it: its lists
// wait for the first range, which moves the informer before they go out.
var wholeRange = func() string {
	sel, _ := kcache.EvenShardSelector(0, 1)
	return sel
}()

// shardedListerWatcher returns lw restricted to the replica's range, and
// registers it to be moved with it. It is built under s.mu, so that a
// concurrent move either sees it or already gave it its selector.
func (s *Sharder) shardedListerWatcher(lw toolscache.ListerWatcher) *kcache.ShardedListerWatcher {
	s.mu.Lock()
	defer s.mu.Unlock()
	selector, inner := wholeRange, kcache.ListerWatcher(&claimGate{inner: kcache.ToListerWatcherWithContext(lw), parent: lw, claimed: s.claimed})
	if s.selector != nil {
		selector, inner = s.selector.String(), lw
	}
	sharded, err := kcache.NewShardedListerWatcher(inner, selector)
	if err != nil {
		// Unreachable: both selectors come from EvenShardSelector.
		panic(fmt.Sprintf("sharding: building the sharded ListerWatcher: %v", err))
	}
	s.lws = append(s.lws, sharded)
	return sharded
}

// claimGate holds lists and watches back until the replica claims its
// first range (claimed is closed), or their context ends.
type claimGate struct {
	inner   kcache.ListerWatcherWithContext
	parent  toolscache.ListerWatcher
	claimed <-chan struct{}
}

var _ kcache.ListerWatcherWithContext = (*claimGate)(nil)

func (g *claimGate) List(options metav1.ListOptions) (runtime.Object, error) {
	return g.ListWithContext(context.Background(), options)
}

func (g *claimGate) Watch(options metav1.ListOptions) (watch.Interface, error) {
	return g.WatchWithContext(context.Background(), options)
}

func (g *claimGate) ListWithContext(ctx context.Context, options metav1.ListOptions) (runtime.Object, error) {
	if err := g.wait(ctx); err != nil {
		return nil, err
	}
	return g.inner.ListWithContext(ctx, options)
}

func (g *claimGate) WatchWithContext(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
	if err := g.wait(ctx); err != nil {
		return nil, err
	}
	return g.inner.WatchWithContext(ctx, options)
}

// IsWatchListSemanticsUnSupported answers the streaming-list probe as the
// wrapped ListerWatcher does (false if it has no answer).
func (g *claimGate) IsWatchListSemanticsUnSupported() bool {
	p, ok := g.parent.(interface{ IsWatchListSemanticsUnSupported() bool })
	return ok && p.IsWatchListSemanticsUnSupported()
}

// wait returns once the replica claimed a range, or ctx's error.
func (g *claimGate) wait(ctx context.Context) error {
	select {
	case <-g.claimed:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for this replica's first shard range: %w", ctx.Err())
	}
}

// shardedInformer is the informer of a sharded kind: the bridge's
// informer, whose event handlers are wrapped so that a move out of the
// replica's range reaches none of them as a deletion. Its embedded field
// keeps client-go's method set of the build, and lets clientgo.Unwrap
// find the kcache informer.
type shardedInformer struct {
	toolscache.SharedIndexInformer
}

// AddEventHandler registers handler; see shardedInformer.
func (i *shardedInformer) AddEventHandler(handler toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	return i.SharedIndexInformer.AddEventHandler(skipMoves(handler))
}

// AddEventHandlerWithResyncPeriod registers handler; see shardedInformer.
func (i *shardedInformer) AddEventHandlerWithResyncPeriod(handler toolscache.ResourceEventHandler, resyncPeriod time.Duration) (toolscache.ResourceEventHandlerRegistration, error) {
	return i.SharedIndexInformer.AddEventHandlerWithResyncPeriod(skipMoves(handler), resyncPeriod)
}

// AddEventHandlerWithOptions registers handler; see shardedInformer.
func (i *shardedInformer) AddEventHandlerWithOptions(handler toolscache.ResourceEventHandler, options toolscache.HandlerOptions) (toolscache.ResourceEventHandlerRegistration, error) {
	return i.SharedIndexInformer.AddEventHandlerWithOptions(skipMoves(handler), options)
}

// skipMoves wraps h so that its OnDelete is not called for an object that
// moved to another replica. A nil handler stays nil, for the informer to
// treat as it would.
func skipMoves(h toolscache.ResourceEventHandler) toolscache.ResourceEventHandler {
	if h == nil {
		return nil
	}
	if v := reflect.ValueOf(h); v.Kind() == reflect.Pointer && v.IsNil() {
		return h
	}
	return moveSkipper{h: h}
}

// moveSkipper passes every notification to h but the MovedOutOfShard
// deletions.
type moveSkipper struct {
	h toolscache.ResourceEventHandler
}

func (m moveSkipper) OnAdd(obj interface{}, isInInitialList bool) { m.h.OnAdd(obj, isInInitialList) }
func (m moveSkipper) OnUpdate(oldObj, newObj interface{})         { m.h.OnUpdate(oldObj, newObj) }

func (m moveSkipper) OnDelete(obj interface{}) {
	if kcache.IsMovedOutOfShard(obj) {
		return
	}
	m.h.OnDelete(obj)
}
