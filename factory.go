package cache

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
)

// InformerFactory hands every caller the same shared informer for the same
// resource, starts them together, waits for them to sync and shuts them
// down. It is the generic counterpart of the factories client-go generates
// per clientset: instead of generated code, each resource comes with a
// function that makes its ListerWatcher.
//
// It is safe for concurrent use. Informers asked for after Start are
// started by the next Start call.
type InformerFactory struct {
	defaultResync time.Duration

	// mu guards shard, sharded, informers, started, shuttingDown and ctx.
	mu sync.Mutex
	// shard restricts every informer to a shard; nil for none. SetShard
	// changes it (never from nil), and moves sharded, the ListerWatchers
	// of the informers made so far.
	shard        *ShardSelector
	sharded      []*ShardedListerWatcher
	informers    map[schema.GroupVersionResource]SharedIndexInformer
	started      map[schema.GroupVersionResource]bool
	shuttingDown bool
	ctx          context.Context
	cancel       context.CancelFunc

	// running counts the informer goroutines, for Shutdown to wait on.
	running sync.WaitGroup
}

// NewInformerFactory returns a factory whose informers resync handlers
// every defaultResync (zero: never).
func NewInformerFactory(defaultResync time.Duration) *InformerFactory {
	ctx, cancel := context.WithCancel(context.Background())
	return &InformerFactory{
		defaultResync: defaultResync,
		informers:     map[schema.GroupVersionResource]SharedIndexInformer{},
		started:       map[schema.GroupVersionResource]bool{},
		ctx:           ctx,
		cancel:        cancel,
	}
}

// NewShardedInformerFactory returns a factory like NewInformerFactory's
// whose informers all hold one shard of their resource: each ListerWatcher
// is wrapped with NewShardedListerWatcher and selector (see
// ParseShardSelector for its form). A selector that does not parse is an
// error wrapping ErrInvalidShardSelector.
func NewShardedInformerFactory(defaultResync time.Duration, selector string) (*InformerFactory, error) {
	sel, err := ParseShardSelector(selector)
	if err != nil {
		return nil, err
	}
	f := NewInformerFactory(defaultResync)
	f.shard = sel
	return f, nil
}

// InformerFor returns the informer of gvr, making it on first use from
// exampleObject and the ListerWatcher newListerWatcher returns. New
// informers have a namespace index. Later calls for the same gvr return the
// same informer and ignore their other arguments. In a factory from
// NewShardedInformerFactory the ListerWatcher is restricted to the
// factory's shard.
func (f *InformerFactory) InformerFor(gvr schema.GroupVersionResource, exampleObject runtime.Object, newListerWatcher func() ListerWatcher) SharedIndexInformer {
	f.mu.Lock()
	defer f.mu.Unlock()
	if inf, ok := f.informers[gvr]; ok {
		return inf
	}
	lw := newListerWatcher()
	if f.shard != nil {
		sharded := newShardedListerWatcher(lw, f.shard)
		f.sharded = append(f.sharded, sharded)
		lw = sharded
	}
	inf := NewSharedIndexInformerWithOptions(lw, exampleObject, SharedIndexInformerOptions{
		ResyncPeriod: f.defaultResync,
		Indexers:     Indexers{NamespaceIndex: MetaNamespaceIndexFunc},
	})
	f.informers[gvr] = inf
	return inf
}

// TypedInformerFor is InformerFor with the typed API, for objects of type
// T (a pointer to a Kubernetes object type, such as *v1.Pod).
func TypedInformerFor[T Object](f *InformerFactory, gvr schema.GroupVersionResource, newListerWatcher func() ListerWatcher) TypedSharedIndexInformer[T] {
	return NewTypedSharedIndexInformer[T](f.InformerFor(gvr, exampleOf[T](), newListerWatcher))
}

// exampleOf returns a new zero object of type T as a runtime.Object, or nil
// when T is not a pointer to one.
func exampleOf[T any]() runtime.Object {
	t := reflect.TypeFor[T]()
	if t.Kind() != reflect.Pointer {
		return nil
	}
	obj, _ := reflect.New(t.Elem()).Interface().(runtime.Object)
	return obj
}

// SetShard moves every informer of a factory from NewShardedInformerFactory
// to the shard selector names, as (*ShardedListerWatcher).SetShard moves
// one, and makes later informers hold that shard. A selector that does not
// parse is an error wrapping ErrInvalidShardSelector and changes nothing; a
// factory made without a shard is an error too (its informers list
// everything and cannot be moved).
func (f *InformerFactory) SetShard(selector string) error {
	sel, err := ParseShardSelector(selector)
	if err != nil {
		return err
	}
	f.mu.Lock()
	if f.shard == nil {
		f.mu.Unlock()
		return errors.New("SetShard: this InformerFactory was not made by NewShardedInformerFactory")
	}
	f.shard = sel
	moving := slices.Clone(f.sharded)
	f.mu.Unlock()
	var errs []error
	for _, lw := range moving {
		// The selector parsed above, so only its text can be refused.
		if err := lw.SetShard(selector); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Start runs every informer not yet started, until stopCh closes or
// Shutdown is called. After Shutdown it does nothing.
func (f *InformerFactory) Start(stopCh <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.shuttingDown {
		return
	}
	for gvr, inf := range f.informers {
		if f.started[gvr] {
			continue
		}
		f.started[gvr] = true
		f.running.Go(func() {
			ctx, cancel := context.WithCancel(f.ctx)
			defer cancel()
			stop := context.AfterFunc(wait.ContextForChannel(stopCh), cancel)
			defer stop()
			inf.RunWithContext(ctx)
		})
	}
}

// WaitForCacheSync waits until every started informer synced or stopCh
// closes, and reports which synced.
func (f *InformerFactory) WaitForCacheSync(stopCh <-chan struct{}) map[schema.GroupVersionResource]bool {
	f.mu.Lock()
	started := map[schema.GroupVersionResource]SharedIndexInformer{}
	for gvr, inf := range f.informers {
		if f.started[gvr] {
			started[gvr] = inf
		}
	}
	f.mu.Unlock()

	out := make(map[schema.GroupVersionResource]bool, len(started))
	for gvr, inf := range started {
		out[gvr] = WaitForCacheSync(stopCh, inf.HasSynced)
	}
	return out
}

// Shutdown stops every informer and waits until they all returned. The
// factory starts nothing afterwards.
func (f *InformerFactory) Shutdown() {
	f.mu.Lock()
	f.shuttingDown = true
	f.cancel()
	f.mu.Unlock()
	f.running.Wait()
}
