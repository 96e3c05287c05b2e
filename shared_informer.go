package cache

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// SharedInformer keeps a cache of one resource, filled by one list-and-watch,
// and tells any number of handlers about every change. Each handler gets the
// changes in order on its own goroutine; a slow handler delays only itself.
// Objects handed to handlers and returned by the store are shared: treat
// them as read-only.
type SharedInformer interface {
	// AddEventHandler registers handler with the default resync period.
	// Added to a running informer, the handler first receives OnAdd, with
	// isInInitialList true, for every object already cached, then every
	// later change, with neither gap nor duplicate.
	AddEventHandler(handler ResourceEventHandler) (ResourceEventHandlerRegistration, error)
	// AddEventHandlerWithResyncPeriod registers handler with its own
	// resync period (see AddEventHandlerWithOptions for the rules).
	AddEventHandlerWithResyncPeriod(handler ResourceEventHandler, resyncPeriod time.Duration) (ResourceEventHandlerRegistration, error)
	// AddEventHandlerWithOptions registers handler. A resync period below
	// one second is raised to one second; below the informer's resync check
	// period it lowers that period before Run, and is raised to it after.
	AddEventHandlerWithOptions(handler ResourceEventHandler, options HandlerOptions) (ResourceEventHandlerRegistration, error)
	// RemoveEventHandler stops delivering to the handler behind handle.
	RemoveEventHandler(handle ResourceEventHandlerRegistration) error
	// GetStore returns the cache.
	GetStore() Store
	// GetController returns a view of the informer as a Controller; its Run
	// methods do nothing.
	GetController() Controller
	// Run runs the informer until stopCh closes.
	Run(stopCh <-chan struct{})
	// RunWithContext runs the informer until ctx ends. Only the first call
	// runs; later ones return at once.
	RunWithContext(ctx context.Context)
	// HasSynced reports whether the cache holds the first complete list.
	// It says nothing about handlers: see the registration's HasSynced.
	HasSynced() bool
	// HasSyncedChecker returns a DoneChecker for HasSynced.
	HasSyncedChecker() DoneChecker
	// LastSyncResourceVersion returns the resource version last observed.
	LastSyncResourceVersion() string

	// SetWatchErrorHandler sets the handler told about list and watch
	// errors. It fails once the informer started.
	SetWatchErrorHandler(handler WatchErrorHandler) error

	// SetWatchErrorHandlerWithContext is SetWatchErrorHandler with a
	// context-aware handler.
	SetWatchErrorHandlerWithContext(handler WatchErrorHandlerWithContext) error

	// SetTransform sets the transform applied once to every object before
	// it is cached and handed to handlers. It fails once the informer
	// started.
	SetTransform(handler TransformFunc) error

	// IsStopped reports whether the informer has stopped.
	IsStopped() bool
}

// HandlerOptions tunes one handler registration.
type HandlerOptions struct {
	// Logger, if set, is used for this handler's messages.
	Logger *klog.Logger

	// ResyncPeriod, if set, overrides the informer's default resync period
	// for this handler; zero means no resync.
	ResyncPeriod *time.Duration
}

// SharedIndexInformer is a SharedInformer whose cache is an Indexer.
type SharedIndexInformer interface {
	SharedInformer
	// AddIndexers adds indexes; allowed before and after Run, not after
	// the informer stopped.
	AddIndexers(indexers Indexers) error
	// GetIndexer returns the cache.
	GetIndexer() Indexer
}

// SharedIndexInformerOptions configures NewSharedIndexInformerWithOptions.
type SharedIndexInformerOptions struct {
	// ResyncPeriod is the default resync period of handlers.
	ResyncPeriod time.Duration

	// Indexers are the cache's initial indexes.
	Indexers Indexers

	// ObjectDescription names the watched type in logs; by default it is
	// derived from the example object.
	ObjectDescription string

	// Identifier names the informer for its metrics.
	Identifier InformerNameAndResource

	// InformerMetricsProvider, if set, replaces the process-wide provider.
	InformerMetricsProvider InformerMetricsProvider
}

// minimumResyncPeriod is the smallest resync period a handler can get.
const minimumResyncPeriod = time.Second

// NewSharedInformer returns an informer for the objects lw lists, of the
// type of exampleObject.
func NewSharedInformer(lw ListerWatcher, exampleObject runtime.Object, defaultEventHandlerResyncPeriod time.Duration) SharedInformer {
	return NewSharedIndexInformer(lw, exampleObject, defaultEventHandlerResyncPeriod, Indexers{})
}

// NewSharedIndexInformer returns an informer with the given indexes.
func NewSharedIndexInformer(lw ListerWatcher, exampleObject runtime.Object, defaultEventHandlerResyncPeriod time.Duration, indexers Indexers) SharedIndexInformer {
	return NewSharedIndexInformerWithOptions(lw, exampleObject, SharedIndexInformerOptions{
		ResyncPeriod: defaultEventHandlerResyncPeriod,
		Indexers:     indexers,
	})
}

// NewSharedIndexInformerWithOptions returns an informer configured by
// options. It is the one constructor the others call.
func NewSharedIndexInformerWithOptions(lw ListerWatcher, exampleObject runtime.Object, options SharedIndexInformerOptions) SharedIndexInformer {
	return newSharedIndexInformer(lw, exampleObject, options, clock.RealClock{})
}

func newSharedIndexInformer(lw ListerWatcher, exampleObject runtime.Object, options SharedIndexInformerOptions, clk clock.WithTicker) *sharedIndexInformer {
	description := options.ObjectDescription
	if description == "" {
		description = fmt.Sprintf("%T", exampleObject)
	}
	synced := make(chan struct{})
	s := &sharedIndexInformer{
		indexer: NewIndexer(DeletionHandlingMetaNamespaceKeyFunc, options.Indexers,
			WithStoreMetrics(options.Identifier, options.InformerMetricsProvider)),
		listerWatcher:     lw,
		objectType:        exampleObject,
		objectDescription: description,
		defaultResync:     options.ResyncPeriod,
		resyncCheckPeriod: options.ResyncPeriod,
		identifier:        options.Identifier,
		metricsProvider:   options.InformerMetricsProvider,
		mutationDetector:  NewCacheMutationDetector(description),
		clock:             clk,
		synced:            synced,
		quietRelist:       quietRelistEnabled(),
	}
	s.processor = newSharedProcessor(clk, synced)
	if applyReleaseOptions != nil {
		applyReleaseOptions(s, options)
	}
	return s
}

// applyReleaseOptions is nil in kcache. The overlay of a client-go release
// whose SharedIndexInformerOptions has fields kcache's lacks (v0.38's
// ShardSelector) sets it, in its adapter file, to apply them to a new
// informer.
var applyReleaseOptions func(s *sharedIndexInformer, options SharedIndexInformerOptions)

// setListerWatcherWrapper sets, before Run, the function put around the
// informer's ListerWatcher when it starts (nil for none); it is the engine
// of client-go v0.38's SetShardSelector in the overlay. After the start it
// fails with client-go's error.
func (s *sharedIndexInformer) setListerWatcherWrapper(wrap func(ListerWatcher) ListerWatcher) error {
	return s.setBeforeStart(func() { s.wrapListerWatcher = wrap })
}

// sharedIndexInformer is the SharedIndexInformer.
//
// Lock order: mu, then deliverMu, then the processor's locks. No lock is
// held while a handler runs: handlers run on listener goroutines.
type sharedIndexInformer struct {
	// mu guards started, stopped, controller, transform, noDedup,
	// quietRelist, watchErrorHandler, resyncCheckPeriod and
	// wrapListerWatcher.
	mu         sync.Mutex
	started    bool
	stopped    bool
	controller Controller
	transform  TransformFunc
	noDedup    bool
	// quietRelist says whether relists leave out the objects that did not
	// change (relist_quiet.go): KCACHE_QUIET_RELIST's value at
	// construction, until SetQuietRelist chooses.
	quietRelist       bool
	watchErrorHandler WatchErrorHandlerWithContext
	resyncCheckPeriod time.Duration
	// wrapListerWatcher, if set, is put around listerWatcher when the
	// informer starts: client-go v0.38's shard selector, in the overlay
	// (see setListerWatcherWrapper).
	wrapListerWatcher func(ListerWatcher) ListerWatcher

	// deliverMu is held while a batch of deltas updates the cache and is
	// handed to the listeners, and while a handler joins or leaves, so a
	// joining handler sees the cache and then exactly the later changes.
	deliverMu sync.Mutex

	indexer           Indexer
	processor         *sharedProcessor
	listerWatcher     ListerWatcher
	objectType        runtime.Object
	objectDescription string
	defaultResync     time.Duration
	identifier        InformerNameAndResource
	metricsProvider   InformerMetricsProvider
	mutationDetector  MutationDetector
	clock             clock.WithTicker
	// synced is closed once the cache holds the first complete list.
	synced chan struct{}
}

var _ SharedIndexInformer = (*sharedIndexInformer)(nil)

// SetWatchErrorHandler sets the list/watch error handler before Run.
func (s *sharedIndexInformer) SetWatchErrorHandler(handler WatchErrorHandler) error {
	if handler == nil {
		return s.SetWatchErrorHandlerWithContext(nil)
	}
	return s.SetWatchErrorHandlerWithContext(func(_ context.Context, r *Reflector, err error) {
		handler(r, err)
	})
}

// SetWatchErrorHandlerWithContext sets the list/watch error handler before
// Run.
func (s *sharedIndexInformer) SetWatchErrorHandlerWithContext(handler WatchErrorHandlerWithContext) error {
	return s.setBeforeStart(func() { s.watchErrorHandler = handler })
}

// SetTransform sets the transform before Run.
func (s *sharedIndexInformer) SetTransform(handler TransformFunc) error {
	return s.setBeforeStart(func() { s.transform = handler })
}

// setBeforeStart runs set under s.mu, unless the informer has started:
// then it fails as client-go's setters do and set does not run.
func (s *sharedIndexInformer) setBeforeStart(set func()) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return errors.New("informer has already started")
	}
	set()
	return nil
}

// SetValueSharing chooses, before the informer runs, whether it shares
// equal parts of the objects it caches (internal/dedup); informers do by
// default. Turning it off gives that informer client-go's layout, each
// cached object the very one its source returned. It cannot turn sharing
// on where KCACHE_SHARE_VALUES turned it off for the process. It fails for
// an informer that has started or was not made by this package.
func SetValueSharing(informer SharedInformer, enabled bool) error {
	setter, ok := informer.(valueSharingSetter)
	if !ok {
		return fmt.Errorf("value sharing: %T is not an informer of this package", informer)
	}
	return setter.setValueSharing(enabled)
}

// valueSharingSetter is an informer whose value sharing can be chosen.
type valueSharingSetter interface {
	setValueSharing(enabled bool) error
}

// setValueSharing is SetValueSharing's choice for this informer.
func (s *sharedIndexInformer) setValueSharing(enabled bool) error {
	return s.setBeforeStart(func() { s.noDedup = !enabled })
}

// SetQuietRelist chooses, before the informer runs, whether its relists
// are quiet: when a relist (a full list that replaces the cache, as after
// an API server restart) finds a cached object at the resource version
// the cache holds, its handlers get nothing for it, where client-go hands
// every handler an update for it (kubernetes/kubernetes#119646). Objects
// whose resource version changed still get an update, new ones an add and
// vanished ones a delete, as before, and the cache still ends equal to the
// list. The initial list, HasSynced and periodic resyncs are unchanged; an
// empty resource version counts as changed. Informers follow
// KCACHE_QUIET_RELIST (off unless set to a true value) until this chooses,
// either way. It fails for an informer that has started or was not made by
// this package.
func SetQuietRelist(informer SharedInformer, quiet bool) error {
	setter, ok := informer.(quietRelistSetter)
	if !ok {
		return fmt.Errorf("quiet relist: %T is not an informer of this package", informer)
	}
	return setter.setQuietRelist(quiet)
}

// quietRelistSetter is an informer whose relists can be made quiet.
type quietRelistSetter interface {
	setQuietRelist(quiet bool) error
}

// setQuietRelist is SetQuietRelist's choice for this informer.
func (s *sharedIndexInformer) setQuietRelist(quiet bool) error {
	return s.setBeforeStart(func() { s.quietRelist = quiet })
}

// Run runs the informer until stopCh closes.
func (s *sharedIndexInformer) Run(stopCh <-chan struct{}) {
	s.RunWithContext(wait.ContextForChannel(stopCh))
}

// RunWithContext lists and watches, keeps the cache, and feeds the
// handlers until ctx ends; it returns once every handler returned from its
// last call. Only the first call runs. A panic on its goroutine goes
// through utilruntime.HandleCrashWithContext, as in client-go.
func (s *sharedIndexInformer) RunWithContext(ctx context.Context) {
	defer utilruntime.HandleCrashWithContext(ctx)
	logger := klog.FromContext(ctx)
	ctrl := s.start(logger)
	if ctrl == nil {
		logger.Info("Warning: the sharedIndexInformer has started, run more than once is not allowed")
		return
	}

	procCtx, stopProcessor := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Go(func() { s.mutationDetector.Run(procCtx.Done()) })
	wg.Go(func() { s.processor.run(procCtx) })
	wg.Go(func() {
		select {
		case <-ctrl.HasSyncedChecker().Done():
			close(s.synced)
		case <-procCtx.Done():
		}
	})

	ctrl.RunWithContext(ctx)

	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
	stopProcessor()
	wg.Wait()
}

// start builds the controller, once. It returns nil if the informer was
// already started.
func (s *sharedIndexInformer) start(logger klog.Logger) Controller {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return nil
	}
	queue := newInformerQueue(logger, s.objectType, s.indexer, s.transform, s.identifier, s.metricsProvider, !s.noDedup)
	lw := s.listerWatcher
	if s.wrapListerWatcher != nil {
		lw = s.wrapListerWatcher(lw)
	}
	sink := quietRelists(newShardMoveSink(s, lw), s.quietRelist)
	cfg := &Config{
		Queue:             queue,
		ListerWatcher:     lw,
		ObjectType:        s.objectType,
		ObjectDescription: s.objectDescription,
		FullResyncPeriod:  s.resyncCheckPeriod,
		ShouldResync:      s.processor.shouldResync,
		Process: func(obj interface{}, isInInitialList bool) error {
			return s.handleDeltas(logger, sink, obj, isInInitialList)
		},
		ProcessBatch: func(deltas []Delta, isInInitialList bool) error {
			s.deliverMu.Lock()
			defer s.deliverMu.Unlock()
			return processDeltasInBatch(logger, sink, s.indexer, deltas, isInInitialList, DeletionHandlingMetaNamespaceKeyFunc)
		},
		WatchErrorHandlerWithContext: s.watchErrorHandler,
	}
	s.controller = newController(cfg, s.clock)
	s.started = true
	return s.controller
}

// handleDeltas applies one popped item to the cache and tells sink (the
// informer itself, or a shardMoveSink before it).
func (s *sharedIndexInformer) handleDeltas(logger klog.Logger, sink changeSink, obj interface{}, isInInitialList bool) error {
	deltas, ok := obj.(Deltas)
	if !ok {
		return errors.New("object given as Process argument is not Deltas")
	}
	s.deliverMu.Lock()
	defer s.deliverMu.Unlock()
	return processDeltas(logger, sink, s.indexer, deltas, isInInitialList, DeletionHandlingMetaNamespaceKeyFunc)
}

// notify is how the controller hands the informer each change it applied
// to the indexer: the object is registered with the mutation detector and
// the notification goes to the listeners. An update that keeps the resource
// version is a resync and only reaches the listeners whose resync period is
// due.
func (s *sharedIndexInformer) notify(n notification) {
	isSync := false
	switch n.kind {
	case notifyAdd:
		s.mutationDetector.AddObject(n.newObj)
	case notifyUpdate:
		isSync = sameResourceVersion(n.oldObj, n.newObj)
		s.mutationDetector.AddObject(n.newObj)
	}
	s.processor.distribute(n, isSync)
}

// OnAdd, OnUpdate and OnDelete make the informer a ResourceEventHandler,
// as client-go's informer is one: each hands its change to notify. The
// informer's own controller calls notify directly.

// OnAdd hands a new object to the listeners.
func (s *sharedIndexInformer) OnAdd(obj interface{}, isInInitialList bool) {
	s.notify(addNotification(obj, isInInitialList))
}

// OnUpdate hands a changed object to the listeners.
func (s *sharedIndexInformer) OnUpdate(oldObj, newObj interface{}) {
	s.notify(updateNotification(oldObj, newObj))
}

// OnDelete hands a deleted object to the listeners.
func (s *sharedIndexInformer) OnDelete(obj interface{}) {
	s.notify(deleteNotification(obj))
}

// HasSynced reports whether the cache holds the first complete list.
func (s *sharedIndexInformer) HasSynced() bool { return isClosed(s.synced) }

// HasSyncedChecker returns a DoneChecker for HasSynced.
func (s *sharedIndexInformer) HasSyncedChecker() DoneChecker {
	return informerSyncedChecker{s: s}
}

// informerSyncedChecker is the informer's DoneChecker.
type informerSyncedChecker struct{ s *sharedIndexInformer }

func (c informerSyncedChecker) Name() string {
	return "SharedIndexInformer " + c.s.objectDescription
}

func (c informerSyncedChecker) Done() <-chan struct{} { return c.s.synced }

// LastSyncResourceVersion returns the resource version last observed, or
// "" before Run.
func (s *sharedIndexInformer) LastSyncResourceVersion() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.controller == nil {
		return ""
	}
	return s.controller.LastSyncResourceVersion()
}

// GetStore returns the cache.
func (s *sharedIndexInformer) GetStore() Store { return s.indexer }

// GetIndexer returns the cache.
func (s *sharedIndexInformer) GetIndexer() Indexer { return s.indexer }

// AddIndexers adds indexes to the cache, before or after Run.
func (s *sharedIndexInformer) AddIndexers(indexers Indexers) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return errors.New("indexer was not added because it has stopped already")
	}
	return s.indexer.AddIndexers(indexers)
}

// GetController returns a Controller view of the informer.
func (s *sharedIndexInformer) GetController() Controller { return informerAsController{s: s} }

// informerAsController lets an informer be passed where a Controller is
// expected; running it is the informer's business, so Run does nothing.
type informerAsController struct{ s *sharedIndexInformer }

func (c informerAsController) RunWithContext(context.Context) {}
func (c informerAsController) Run(<-chan struct{})            {}
func (c informerAsController) HasSynced() bool                { return c.s.HasSynced() }
func (c informerAsController) HasSyncedChecker() DoneChecker  { return c.s.HasSyncedChecker() }
func (c informerAsController) LastSyncResourceVersion() string {
	return c.s.LastSyncResourceVersion()
}

// AddEventHandler registers handler with the default resync period.
func (s *sharedIndexInformer) AddEventHandler(handler ResourceEventHandler) (ResourceEventHandlerRegistration, error) {
	return s.AddEventHandlerWithOptions(handler, HandlerOptions{})
}

// AddEventHandlerWithResyncPeriod registers handler with its own period.
func (s *sharedIndexInformer) AddEventHandlerWithResyncPeriod(handler ResourceEventHandler, resyncPeriod time.Duration) (ResourceEventHandlerRegistration, error) {
	return s.AddEventHandlerWithOptions(handler, HandlerOptions{ResyncPeriod: &resyncPeriod})
}

// AddEventHandlerWithOptions registers handler; see SharedInformer.
func (s *sharedIndexInformer) AddEventHandlerWithOptions(handler ResourceEventHandler, options HandlerOptions) (ResourceEventHandlerRegistration, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return nil, fmt.Errorf("handler %v was not added to shared informer because it has stopped already", handler)
	}
	logger := klog.Background()
	if options.Logger != nil {
		logger = *options.Logger
	}
	requested := s.resyncPeriodLocked(logger, options.ResyncPeriod)
	l := newProcessorListener(listenerConfig{
		logger:          logger,
		handler:         handler,
		requestedResync: requested,
		resyncPeriod:    determineResyncPeriod(logger, requested, s.resyncCheckPeriod),
		now:             s.clock.Now(),
		upstreamName:    s.HasSyncedChecker().Name(),
		id:              s.identifier,
		metrics:         s.metricsProvider,
		clock:           s.clock,
	})
	if !s.started {
		s.processor.addListener(l, nil)
		return l, nil
	}
	// Running: hand the handler the cache, then the changes after it,
	// with deltas held off in between.
	s.deliverMu.Lock()
	defer s.deliverMu.Unlock()
	s.processor.addListener(l, s.indexer.List())
	return l, nil
}

// resyncPeriodLocked applies the resync rules to a handler's request and
// returns the period it gets. The caller holds s.mu.
func (s *sharedIndexInformer) resyncPeriodLocked(logger klog.Logger, requested *time.Duration) time.Duration {
	period := s.defaultResync
	if requested != nil {
		period = *requested
	}
	if period <= 0 {
		return 0
	}
	if period < minimumResyncPeriod {
		logger.Info("Warning: resync period is too small. Changing it to the minimum allowed value", "resyncPeriod", period, "minimumResyncPeriod", minimumResyncPeriod)
		period = minimumResyncPeriod
	}
	if period < s.resyncCheckPeriod {
		if s.started {
			logger.Info("Warning: resync period is smaller than resync check period and the informer has already started. Changing it to the resync check period", "resyncPeriod", period, "resyncCheckPeriod", s.resyncCheckPeriod)
			return s.resyncCheckPeriod
		}
		s.resyncCheckPeriod = period
		s.processor.resyncCheckPeriodChanged(logger, period)
	}
	return period
}

// IsStopped reports whether the informer has stopped.
func (s *sharedIndexInformer) IsStopped() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopped
}

// RemoveEventHandler stops delivering to the handler behind handle. An
// unknown handle is not an error.
func (s *sharedIndexInformer) RemoveEventHandler(handle ResourceEventHandlerRegistration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deliverMu.Lock()
	defer s.deliverMu.Unlock()
	return s.processor.removeListener(handle)
}

// ShutDownEventHandler removes the handler behind handle and waits until it
// returned from its last call.
func ShutDownEventHandler(informer SharedInformer, handle ResourceEventHandlerRegistration) error {
	if err := informer.RemoveEventHandler(handle); err != nil {
		return err
	}
	waiter, ok := handle.(interface{ ShutdownChan() <-chan struct{} })
	if !ok {
		return errors.New("handle does not support ShutdownChan()")
	}
	<-waiter.ShutdownChan()
	return nil
}

// TypedSharedIndexInformer is a SharedIndexInformer whose objects are all
// of type T, with typed handlers and indexes.
type TypedSharedIndexInformer[T Object] interface {
	SharedIndexInformer

	// AddTypedEventHandler registers a typed handler; at most one options
	// value may be given.
	AddTypedEventHandler(handler TypedResourceEventHandler[T], options ...HandlerOptions) (ResourceEventHandlerRegistration, error)
	// AddTypedIndexers adds typed index functions.
	AddTypedIndexers(indexers TypedIndexers[T]) error
	// GetTypedIndexer returns the cache with typed lookups.
	GetTypedIndexer() TypedIndexer[T]
}

// NewTypedSharedIndexInformer wraps informer, whose objects must be of type
// T, in the typed API.
func NewTypedSharedIndexInformer[T Object](informer SharedIndexInformer) TypedSharedIndexInformer[T] {
	return typedSharedIndexInformer[T]{SharedIndexInformer: informer}
}

// typedSharedIndexInformer adapts a SharedIndexInformer to T.
type typedSharedIndexInformer[T Object] struct {
	SharedIndexInformer
}

// AddTypedEventHandler registers handler through the typed adapter; an
// object that is not a T panics its delivery, as in client-go.
func (s typedSharedIndexInformer[T]) AddTypedEventHandler(handler TypedResourceEventHandler[T], options ...HandlerOptions) (ResourceEventHandlerRegistration, error) {
	var opts HandlerOptions
	switch len(options) {
	case 0:
	case 1:
		opts = options[0]
	default:
		return nil, fmt.Errorf("at most one HandlerOptions may be passed, got %d", len(options))
	}
	return s.AddEventHandlerWithOptions(newTypedHandlerAdapter[T](handler), opts)
}

// AddTypedIndexers adds typed index functions.
func (s typedSharedIndexInformer[T]) AddTypedIndexers(indexers TypedIndexers[T]) error {
	return s.AddIndexers(TypedIndexersToIndexers(indexers))
}

// GetTypedIndexer returns the cache with typed lookups.
func (s typedSharedIndexInformer[T]) GetTypedIndexer() TypedIndexer[T] {
	return typedIndexer[T]{Indexer: s.GetIndexer()}
}

// setValueSharing lets SetValueSharing reach the wrapped informer.
func (s typedSharedIndexInformer[T]) setValueSharing(enabled bool) error {
	return SetValueSharing(s.SharedIndexInformer, enabled)
}

// setQuietRelist lets SetQuietRelist reach the wrapped informer.
func (s typedSharedIndexInformer[T]) setQuietRelist(quiet bool) error {
	return SetQuietRelist(s.SharedIndexInformer, quiet)
}

// typedIndexer adds typed lookups to an Indexer of T.
type typedIndexer[T any] struct {
	Indexer
}

// TypedIndex is Index with typed objects. As in client-go, a cached
// object that is not a T makes it panic (the type assertion fails).
func (i typedIndexer[T]) TypedIndex(indexName string, obj T) ([]T, error) {
	objs, err := i.Index(indexName, obj)
	if err != nil {
		return nil, err
	}
	return mustBeTyped[T](objs), nil
}

// ByTypedIndex is ByIndex with typed objects; like TypedIndex, it panics
// on a cached object that is not a T.
func (i typedIndexer[T]) ByTypedIndex(indexName, indexedValue string) ([]T, error) {
	objs, err := i.ByIndex(indexName, indexedValue)
	if err != nil {
		return nil, err
	}
	return mustBeTyped[T](objs), nil
}

// AddTypedIndexers adds typed index functions.
func (i typedIndexer[T]) AddTypedIndexers(newIndexers TypedIndexers[T]) error {
	return i.AddIndexers(TypedIndexersToIndexers(newIndexers))
}

// mustBeTyped asserts every cached object to T; the assertion panics with
// Go's own message on the first one that is not.
func mustBeTyped[T any](objs []interface{}) []T {
	out := make([]T, len(objs))
	for i, obj := range objs {
		out[i] = obj.(T)
	}
	return out
}
