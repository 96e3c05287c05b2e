package clientgo

import (
	"context"
	"fmt"
	"reflect"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	kcache "github.com/kcache/cache"
)

// NewSharedIndexInformer returns a kcache shared informer for the objects
// lw lists and watches, presented through client-go's SharedIndexInformer
// interface. Its signature is controller-runtime's cache.Options.NewInformer
// and client-go's NewSharedIndexInformer, so it can stand in for either:
//
//	cache.Options{NewInformer: clientgo.NewSharedIndexInformer}
//
// lw is used as it is: client-go's ListerWatcher and its context-aware
// forms have the same method sets as kcache's, and the watch-list
// capability probe (IsWatchListSemanticsUnSupported) that client-go's fake
// clients and ToListWatcherWithWatchListSemantics answer is read by kcache
// under the same name.
//
// On client-go v0.38 and later, the kcache informer lists and watches
// through a stand-in for lw that applies a selector set with
// SetShardSelector, as client-go's NewShardedListWatch does (shard.go);
// a kcache ShardedListerWatcher is passed as it is, for kcache to move its
// shard, and a selector set on top of it makes Run refuse to start.
func NewSharedIndexInformer(lw toolscache.ListerWatcher, exampleObject runtime.Object, defaultEventHandlerResyncPeriod time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
	kcLW, shardable := lw, (*shardableLW)(nil)
	if _, kcacheShard := lw.(*kcache.ShardedListerWatcher); clientGoHasShardSelector && lw != nil && !kcacheShard {
		shardable = newShardableLW(lw)
		kcLW = shardable
	}
	kc := kcache.NewSharedIndexInformer(kcLW, exampleObject, defaultEventHandlerResyncPeriod, toKcacheIndexers(indexers))
	return newInformer(kc, lw, exampleObject, shardable)
}

// Wrap presents a kcache informer through client-go's SharedIndexInformer
// interface. A client-go watch error handler set on the result receives a
// Reflector built without a ListerWatcher (see SetWatchErrorHandler). The
// bridge cannot restrict kc's lists and watches, so on client-go v0.38 and
// later a non-empty selector set with SetShardSelector makes Run log an
// error and return without starting kc; shard kc with kcache's
// NewShardedListerWatcher instead.
func Wrap(kc kcache.SharedIndexInformer) toolscache.SharedIndexInformer {
	return newInformer(kc, nil, nil, nil)
}

// Unwrap returns the kcache informer behind inf, if inf was made by this
// package, directly or behind client-go's typed informer adapter
// (NewTypedSharedIndexInformer, which generated informers use). It reports
// false for anything else, such as a client-go informer.
func Unwrap(inf toolscache.SharedInformer) (kcache.SharedIndexInformer, bool) {
	for range maxAdapterDepth {
		switch i := inf.(type) {
		case *informer:
			return i.kc, true
		case nil:
			return nil, false
		}
		inner, ok := embeddedInformer(inf)
		if !ok {
			return nil, false
		}
		inf = inner
	}
	return nil, false
}

// SetQuietRelist is kcache's SetQuietRelist for an informer of this
// package (NewSharedIndexInformer, Wrap, or a factory's informer, also
// behind client-go's typed adapter): before it runs, it chooses whether a
// relist hands its handlers nothing for the objects whose resource
// version did not change (kubernetes/kubernetes#119646). Without it, an
// informer follows KCACHE_QUIET_RELIST, off unless set to a true value. It
// fails for an informer that runs on client-go or has started.
func SetQuietRelist(inf toolscache.SharedInformer, quiet bool) error {
	kc, ok := Unwrap(inf)
	if !ok {
		return fmt.Errorf("quiet relist: %T does not run on kcache", inf)
	}
	return kcache.SetQuietRelist(kc, quiet)
}

// maxAdapterDepth bounds how many embedding adapters Unwrap and the factory
// look through.
const maxAdapterDepth = 8

// embeddedInformer returns the SharedIndexInformer a struct adapter embeds
// (client-go's typedSharedIndexInformer embeds it as an exported field).
func embeddedInformer(inf toolscache.SharedInformer) (toolscache.SharedInformer, bool) {
	v := reflect.ValueOf(inf)
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil, false
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return nil, false
	}
	f := v.FieldByName("SharedIndexInformer")
	if !f.IsValid() || f.Kind() != reflect.Interface || f.IsNil() || !f.CanInterface() {
		return nil, false
	}
	inner, ok := f.Interface().(toolscache.SharedInformer)
	return inner, ok
}

// informer is a kcache SharedIndexInformer presented as client-go's. It
// keeps no state besides its fixed views and its sync latches: every call
// goes to kc.
type informer struct {
	// syncedChecker gives the informer client-go's HasSyncedChecker where
	// client-go has it (v0.36 on), done when kc's is, while this informer
	// runs (see checker.go). GetController's Controller shares it.
	*syncedChecker
	// shardLatch gives the informer client-go's SetShardSelector where
	// client-go has it (v0.38 on), and applies the selector at Run (see
	// shard.go).
	*shardLatch
	kc      kcache.SharedIndexInformer
	indexer *indexer // GetStore and GetIndexer; built once over kc's indexer
	names   *reflectorNames
	// signals fires the latches of the informer and its registrations.
	signals *syncSignals
}

var _ toolscache.SharedIndexInformer = (*informer)(nil)

// newInformer presents kc, built over lw (nil if unknown) for objects like
// exampleObject; shardable is the stand-in kc lists and watches through,
// nil if none.
func newInformer(kc kcache.SharedIndexInformer, lw toolscache.ListerWatcher, exampleObject runtime.Object, shardable *shardableLW) *informer {
	i := &informer{
		syncedChecker: newSyncedChecker(kc.HasSyncedChecker().Name()),
		shardLatch:    newShardLatch(exampleObject, shardable),
		kc:            kc,
		indexer:       &indexer{kc: kc.GetIndexer()},
		names:         &reflectorNames{lw: lw, objType: exampleObject},
		signals:       &syncSignals{},
	}
	i.signals.add(kc.HasSyncedChecker(), i.syncedChecker)
	return i
}

// AddEventHandler registers handler with the default resync period.
func (i *informer) AddEventHandler(handler toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	return i.AddEventHandlerWithOptions(handler, toolscache.HandlerOptions{})
}

// AddEventHandlerWithResyncPeriod registers handler with its own resync
// period.
func (i *informer) AddEventHandlerWithResyncPeriod(handler toolscache.ResourceEventHandler, resyncPeriod time.Duration) (toolscache.ResourceEventHandlerRegistration, error) {
	return i.AddEventHandlerWithOptions(handler, toolscache.HandlerOptions{ResyncPeriod: &resyncPeriod})
}

// AddEventHandlerWithOptions registers handler with kcache; the handle it
// returns is client-go's ResourceEventHandlerRegistration, and
// RemoveEventHandler and client-go's ShutDownEventHandler accept it.
func (i *informer) AddEventHandlerWithOptions(handler toolscache.ResourceEventHandler, options toolscache.HandlerOptions) (toolscache.ResourceEventHandlerRegistration, error) {
	reg, err := i.kc.AddEventHandlerWithOptions(toKcacheHandler(handler), kcache.HandlerOptions{
		Logger:       options.Logger,
		ResyncPeriod: options.ResyncPeriod,
	})
	if err != nil {
		return nil, err
	}
	r, err := newRegistration(reg, i.kc.HasSyncedChecker().Name(), handler, i.signals)
	if err != nil {
		_ = i.kc.RemoveEventHandler(reg)
		return nil, err
	}
	return r, nil
}

// RemoveEventHandler stops delivering to the handler behind handle, which
// must be a handle this package returned. A handle of another informer, or
// one already removed, is not an error.
func (i *informer) RemoveEventHandler(handle toolscache.ResourceEventHandlerRegistration) error {
	r, ok := handle.(*registration)
	if !ok || r == nil {
		return fmt.Errorf("removing event handler: %T is not a registration of a kcache informer", handle)
	}
	return i.kc.RemoveEventHandler(r.inner)
}

// GetStore returns the cache, through client-go's Store interface.
func (i *informer) GetStore() toolscache.Store { return i.indexer }

// GetIndexer returns the cache, through client-go's Indexer interface.
func (i *informer) GetIndexer() toolscache.Indexer { return i.indexer }

// AddIndexers adds indexes to the cache, before or after Run.
func (i *informer) AddIndexers(indexers toolscache.Indexers) error {
	return i.kc.AddIndexers(toKcacheIndexers(indexers))
}

// GetController returns the informer as client-go's Controller.
func (i *informer) GetController() toolscache.Controller {
	return controller{syncedChecker: i.syncedChecker, kc: i.kc.GetController()}
}

// Run runs the informer until stopCh closes. From then on SetShardSelector
// (client-go v0.38 on) fails, as client-go's does once its informer started.
func (i *informer) Run(stopCh <-chan struct{}) {
	if !i.shardLatch.start(klog.Background()) {
		return
	}
	defer i.signals.run(wait.ContextForChannel(stopCh))()
	i.kc.Run(stopCh)
}

// RunWithContext runs the informer until ctx ends; see Run.
func (i *informer) RunWithContext(ctx context.Context) {
	if !i.shardLatch.start(klog.FromContext(ctx)) {
		return
	}
	defer i.signals.run(ctx)()
	i.kc.RunWithContext(ctx)
}

// HasSynced reports whether the cache holds the first complete list.
func (i *informer) HasSynced() bool { return i.kc.HasSynced() }

// LastSyncResourceVersion returns the resource version last observed.
func (i *informer) LastSyncResourceVersion() string { return i.kc.LastSyncResourceVersion() }

// SetWatchErrorHandler sets the list and watch error handler before Run.
// The handler receives a client-go *Reflector that has the kcache
// Reflector's Name and TypeDescription; it is never run, so its
// LastSyncResourceVersion is empty.
func (i *informer) SetWatchErrorHandler(handler toolscache.WatchErrorHandler) error {
	return i.kc.SetWatchErrorHandlerWithContext(i.names.plain(handler))
}

// SetWatchErrorHandlerWithContext is SetWatchErrorHandler for a
// context-aware handler.
func (i *informer) SetWatchErrorHandlerWithContext(handler toolscache.WatchErrorHandlerWithContext) error {
	return i.kc.SetWatchErrorHandlerWithContext(i.names.withContext(handler))
}

// SetTransform sets the transform applied to every object before it is
// cached, before Run. A nil transform clears it.
func (i *informer) SetTransform(handler toolscache.TransformFunc) error {
	return i.kc.SetTransform(kcache.TransformFunc(handler))
}

// IsStopped reports whether the informer has stopped.
func (i *informer) IsStopped() bool { return i.kc.IsStopped() }

// controller presents a kcache Controller as client-go's. Its
// HasSyncedChecker (client-go v0.36 on) is its informer's.
type controller struct {
	*syncedChecker
	kc kcache.Controller
}

var _ toolscache.Controller = controller{}

func (c controller) RunWithContext(ctx context.Context) { c.kc.RunWithContext(ctx) }
func (c controller) Run(stopCh <-chan struct{})         { c.kc.Run(stopCh) }
func (c controller) HasSynced() bool                    { return c.kc.HasSynced() }
func (c controller) LastSyncResourceVersion() string    { return c.kc.LastSyncResourceVersion() }
