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

// Config is what New needs: a queue, a ListerWatcher to fill it, and a
// function to process what is popped.
type Config struct {
	// Queue receives what the reflector lists and watches.
	Queue

	// ListerWatcher lists and watches the resource.
	ListerWatcher

	// Process handles one popped item.
	Process ProcessFunc

	// ProcessBatch, if set, handles batches when the queue supports them
	// (and the InOrderInformersBatchProcess gate is on).
	ProcessBatch ProcessBatchFunc

	// ObjectType is an example of the watched objects.
	ObjectType runtime.Object

	// ObjectDescription names the watched type in logs.
	ObjectDescription string

	// FullResyncPeriod is how often ShouldResync is asked; zero disables.
	FullResyncPeriod time.Duration

	// MinWatchTimeout is the lower bound of a watch's server-side timeout.
	MinWatchTimeout time.Duration

	// ShouldResync says whether a due resync should happen; nil means yes.
	ShouldResync ShouldResyncFunc

	// WatchErrorHandler is told about list and watch errors.
	WatchErrorHandler WatchErrorHandler

	// WatchErrorHandlerWithContext is the context-aware form; used when
	// WatchErrorHandler is nil.
	WatchErrorHandlerWithContext WatchErrorHandlerWithContext

	// WatchListPageSize is the reflector's list page size; zero lets the
	// reflector choose.
	WatchListPageSize int64
}

// ShouldResyncFunc says whether a due resync should happen.
type ShouldResyncFunc func() bool

// ProcessFunc handles one popped item.
type ProcessFunc func(obj interface{}, isInInitialList bool) error

// Controller runs a reflector into a queue and pops the queue into a
// process function.
type Controller interface {
	// RunWithContext runs until ctx ends.
	RunWithContext(ctx context.Context)

	// Run runs until stopCh closes.
	Run(stopCh <-chan struct{})

	// HasSynced reports whether the queue delivered its first full list.
	HasSynced() bool

	// HasSyncedChecker returns a DoneChecker for HasSynced.
	HasSyncedChecker() DoneChecker

	// LastSyncResourceVersion returns the reflector's last observed
	// resource version, or "" before Run.
	LastSyncResourceVersion() string
}

// New returns a Controller for c. The config is copied.
func New(c *Config) Controller {
	return newController(c, clock.RealClock{})
}

func newController(c *Config, clk clock.Clock) *controller {
	return &controller{
		config:   *c,
		clock:    clk,
		batching: featureEnabled(featureInOrderInformersBatchProcess),
	}
}

// controller is the Controller.
type controller struct {
	config Config
	clock  clock.Clock
	// batching follows the InOrderInformersBatchProcess gate, read at
	// construction.
	batching bool

	// mu guards reflector.
	mu        sync.RWMutex
	reflector *Reflector
}

// Run runs until stopCh closes.
func (c *controller) Run(stopCh <-chan struct{}) {
	c.RunWithContext(wait.ContextForChannel(stopCh))
}

// RunWithContext starts the reflector and pops the queue until ctx ends;
// then it closes the queue and returns once both stopped.
//
// Panics are handled as in client-go: the pop loop runs under
// wait.UntilWithContext, whose utilruntime.HandleCrashWithContext logs
// "Observed a panic", runs utilruntime.PanicHandlers and, with
// utilruntime.ReallyCrash (the default), panics again; RunWithContext's own
// HandleCrashWithContext does the same on the way out. With ReallyCrash
// false the popped item is dropped and popping resumes after a second.
func (c *controller) RunWithContext(ctx context.Context) {
	defer utilruntime.HandleCrashWithContext(ctx)
	logger := klog.FromContext(ctx)
	r := NewReflectorWithOptions(c.config.ListerWatcher, c.config.ObjectType, c.config.Queue, ReflectorOptions{
		Logger:          &logger,
		ResyncPeriod:    c.config.FullResyncPeriod,
		MinWatchTimeout: c.config.MinWatchTimeout,
		TypeDescription: c.config.ObjectDescription,
		Clock:           c.clock,
	})
	r.ShouldResync = c.config.ShouldResync
	r.WatchListPageSize = c.config.WatchListPageSize
	switch {
	case c.config.WatchErrorHandler != nil:
		h := c.config.WatchErrorHandler
		r.watchErrorHandler = func(_ context.Context, r *Reflector, err error) { h(r, err) }
	case c.config.WatchErrorHandlerWithContext != nil:
		r.watchErrorHandler = c.config.WatchErrorHandlerWithContext
	}
	c.mu.Lock()
	c.reflector = r
	c.mu.Unlock()

	var wg sync.WaitGroup
	wg.Go(func() {
		<-ctx.Done()
		c.config.Queue.Close()
	})
	wg.Go(func() { r.RunWithContext(ctx) })
	if g, ok := c.config.Queue.(dedupGuardRunner); ok {
		wg.Go(func() { g.runDedupGuard(ctx) })
	}
	wait.UntilWithContext(ctx, c.processLoop, time.Second)
	wg.Wait()
}

// HasSynced reports whether the queue delivered its first full list.
func (c *controller) HasSynced() bool { return c.config.Queue.HasSynced() }

// HasSyncedChecker returns the queue's DoneChecker.
func (c *controller) HasSyncedChecker() DoneChecker { return c.config.Queue.HasSyncedChecker() }

// LastSyncResourceVersion returns the reflector's last observed version.
func (c *controller) LastSyncResourceVersion() string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.reflector == nil {
		return ""
	}
	return c.reflector.LastSyncResourceVersion()
}

// processLoop pops until the queue closes or ctx ends. A process error is
// dropped, as in client-go, and logged only at V(4); the item is not
// retried (the queue moved on).
func (c *controller) processLoop(ctx context.Context) {
	logger := klog.FromContext(ctx)
	batchQueue, canBatch := c.config.Queue.(QueueWithBatch)
	canBatch = canBatch && c.batching && c.config.ProcessBatch != nil
	for ctx.Err() == nil {
		var err error
		if canBatch {
			err = batchQueue.PopBatch(c.config.ProcessBatch, PopProcessFunc(c.config.Process))
		} else {
			_, err = c.config.Queue.Pop(PopProcessFunc(c.config.Process))
		}
		if errors.Is(err, ErrFIFOClosed) {
			return
		}
		if err != nil {
			logger.V(4).Info("Processing a queued change failed", "type", c.config.ObjectDescription, "err", err)
		}
	}
}

// processDeltas applies the deltas of one object to clientState and tells
// sink, in order. As in client-go, the first failure ends it: the
// remaining deltas are neither stored nor told. A SyncAll delta ends it
// too, once every cached object was told as an update.
func processDeltas(logger klog.Logger, sink changeSink, clientState Store, deltas Deltas, isInInitialList bool, keyFunc KeyFunc) error {
	for _, d := range deltas {
		obj := d.Object
		switch d.Type {
		case ReplacedAll:
			info, ok := obj.(ReplacedAllInfo)
			if !ok {
				return fmt.Errorf("ReplacedAll did not contain ReplacedAllInfo: %T", obj)
			}
			if err := processReplacedAll(logger, sink, info, clientState, isInInitialList, keyFunc); err != nil {
				return err
			}
		case SyncAll:
			if _, ok := obj.(SyncAllInfo); !ok {
				return fmt.Errorf("SyncAll did not contain SyncAllInfo: %T", obj)
			}
			for _, cached := range clientState.List() {
				sink.notify(updateNotification(cached, cached))
			}
			return nil
		case Sync, Replaced, Added, Updated:
			if old, exists, err := clientState.Get(obj); err == nil && exists {
				if err := clientState.Update(obj); err != nil {
					return err
				}
				sink.notify(relistedUpdate(d.Type, old, obj))
				continue
			}
			if err := clientState.Add(obj); err != nil {
				return err
			}
			sink.notify(addNotification(obj, isInInitialList))
		case Deleted:
			if err := clientState.Delete(obj); err != nil {
				return err
			}
			sink.notify(deleteNotification(obj))
		case Bookmark:
			info, ok := obj.(BookmarkInfo)
			if !ok {
				return fmt.Errorf("bookmark delta did not contain BookmarkInfo: %T", obj)
			}
			clientState.Bookmark(info.ResourceVersion)
		}
		// Other delta types are skipped, as client-go skips them.
	}
	return nil
}

// relistedUpdate is the notification of an update of a cached object by a
// change of type t: marked as made by a relist when t is Replaced.
func relistedUpdate(t DeltaType, old, obj interface{}) notification {
	n := updateNotification(old, obj)
	if t == Replaced {
		n.relist = relistedOne
	}
	return n
}

// quietRelistSink stands before the sink of an informer with quiet relists
// (relist_quiet.go): it drops the update of an object a relist found again
// at the version the cache held, and hands every other notification on.
// Resyncs are not relists: their updates pass.
type quietRelistSink struct{ next changeSink }

func (q quietRelistSink) notify(n notification) {
	if n.kind == notifyUpdate && n.relist != notRelisted && sameListedVersion(n.oldObj, n.newObj) {
		return
	}
	q.next.notify(n)
}

// replaced hands the end of a replacement on to next, if it wants it.
func (q quietRelistSink) replaced() {
	if o, ok := q.next.(replaceObserver); ok {
		o.replaced()
	}
}

// quietRelists returns sink behind a quietRelistSink when quiet is set,
// and sink itself otherwise.
func quietRelists(sink changeSink, quiet bool) changeSink {
	if !quiet {
		return sink
	}
	return quietRelistSink{next: sink}
}

// processReplacedAll replaces the store's content with a full list and
// tells sink: a delete (as a DeletedFinalStateUnknown) for every cached
// object missing from the list, then an update or add for every listed one.
//
// As in the reference, a listed object without a key (or whose key function
// panics) refuses the whole replacement: the store and the handlers are
// left as they were, and the error says which object.
//
// An empty store (the initial sync) has nothing to compare with, so no set
// of listed keys and no previous objects are built for it: every listed
// object is an add.
func processReplacedAll(logger klog.Logger, sink changeSink, info ReplacedAllInfo, clientState Store, isInInitialList bool, keyFunc KeyFunc) error {
	known := clientState.ListKeys()
	var previous []keyedObject
	var tombstones []DeletedFinalStateUnknown
	if len(known) == 0 {
		if err := keyEach(info.Objects, keyFunc, nil); err != nil {
			return err
		}
	} else {
		items, err := keyAll(info.Objects, keyFunc)
		if err != nil {
			return err
		}
		tombstones = relist(relistRun{
			items: items,
			held: func(key string) (interface{}, bool) {
				old, exists, err := clientState.GetByKey(key)
				return old, err == nil && exists
			},
			// info.Objects holds the listed objects: each item keeps the
			// object held before it instead, for the notifications.
			each:   func(i int, _ relistKind, old interface{}) { items[i].obj = old },
			known:  keysListedOnce{KeyGetter: clientState, keys: known},
			logger: logger,
		})
		previous = items
	}
	if err := clientState.Replace(info.Objects, info.ResourceVersion); err != nil {
		return err
	}
	for _, t := range tombstones {
		sink.notify(deleteNotification(t))
	}
	for i, obj := range info.Objects {
		if previous != nil && previous[i].obj != nil {
			n := updateNotification(previous[i].obj, obj)
			n.relist = relistedAll
			sink.notify(n)
		} else {
			sink.notify(addNotification(obj, isInInitialList))
		}
	}
	if o, ok := sink.(replaceObserver); ok {
		o.replaced()
	}
	return nil
}

// keysListedOnce is a KeyListerGetter whose keys were listed beforehand,
// so that a store is not listed twice.
type keysListedOnce struct {
	KeyGetter
	keys []string
}

// ListKeys returns the keys listed beforehand.
func (k keysListedOnce) ListKeys() []string { return k.keys }

// processDeltasInBatch applies a batch of single-object deltas in one store
// transaction, then tells sink about each applied change, in order.
func processDeltasInBatch(logger klog.Logger, sink changeSink, clientState Store, deltas []Delta, isInInitialList bool, keyFunc KeyFunc) error {
	txStore, ok := clientState.(TransactionStore)
	if !ok {
		var errs []error
		for _, d := range deltas {
			if err := processDeltas(logger, sink, clientState, Deltas{d}, isInInitialList, keyFunc); err != nil {
				errs = append(errs, err)
			}
		}
		if len(errs) > 0 {
			return fmt.Errorf("unexpected error when handling deltas: %v", errs)
		}
		return nil
	}
	txns := make([]Transaction, 0, len(deltas))
	notify := make([]notification, 0, len(deltas))
	for _, d := range deltas {
		obj := d.Object
		switch d.Type {
		case Sync, Replaced, Added, Updated:
			if old, exists, err := clientState.Get(obj); err == nil && exists {
				txns = append(txns, Transaction{Type: TransactionTypeUpdate, Object: obj})
				notify = append(notify, relistedUpdate(d.Type, old, obj))
			} else {
				txns = append(txns, Transaction{Type: TransactionTypeAdd, Object: obj})
				notify = append(notify, addNotification(obj, isInInitialList))
			}
		case Deleted:
			txns = append(txns, Transaction{Type: TransactionTypeDelete, Object: obj})
			notify = append(notify, deleteNotification(obj))
		default:
			return fmt.Errorf("Delta type %s is not supported in batch processing", d.Type)
		}
	}
	applied := make([]int, len(txns))
	for i := range applied {
		applied[i] = i
	}
	var err error
	if terr := txStore.Transaction(txns...); terr != nil {
		// client-go formats the error into its text (%s), so it does not
		// wrap the *TransactionError.
		applied, err = terr.SuccessfulIndices, fmt.Errorf("not all items in the batch successfully processed: %s", terr.Error())
	}
	for _, i := range applied {
		sink.notify(notify[i])
	}
	return err
}

// InformerOptions configures NewInformerWithOptions.
type InformerOptions struct {
	// Logger, if set, is used instead of klog.Background().
	Logger *klog.Logger

	// ListerWatcher lists and watches the resource. Required.
	ListerWatcher ListerWatcher

	// ObjectType is an example of the watched objects. Required.
	ObjectType runtime.Object

	// Handler is told about every change. Required.
	Handler ResourceEventHandler

	// ResyncPeriod, if not zero, is how often every cached object is
	// handed to Handler again as an update.
	ResyncPeriod time.Duration

	// MinWatchTimeout is the lower bound of a watch's server-side timeout.
	MinWatchTimeout time.Duration

	// Indexers, if not nil, makes the returned Store an Indexer with them.
	Indexers Indexers

	// Transform is applied once to every object before it is stored.
	Transform TransformFunc

	// Identifier names the informer for its metrics.
	Identifier InformerNameAndResource

	// InformerMetricsProvider, if set, replaces the process-wide provider.
	InformerMetricsProvider InformerMetricsProvider
}

// NewInformerWithOptions returns a store kept in sync with the server and
// the controller that keeps it, calling options.Handler on every change.
func NewInformerWithOptions(options InformerOptions) (Store, Controller) {
	storeOpts := []StoreOption{WithStoreMetrics(options.Identifier, options.InformerMetricsProvider)}
	var clientState Store
	if options.Indexers == nil {
		clientState = NewStore(DeletionHandlingMetaNamespaceKeyFunc, storeOpts...)
	} else {
		clientState = NewIndexer(DeletionHandlingMetaNamespaceKeyFunc, options.Indexers, storeOpts...)
	}
	return clientState, newInformer(clientState, options)
}

// NewInformer is NewInformerWithOptions with a plain Store.
//
// Deprecated: call NewInformerWithOptions, which takes the same settings as
// named fields.
func NewInformer(
	lw ListerWatcher,
	objType runtime.Object,
	resyncPeriod time.Duration,
	h ResourceEventHandler,
) (Store, Controller) {
	clientState := NewStore(DeletionHandlingMetaNamespaceKeyFunc)
	return clientState, newInformer(clientState, InformerOptions{
		ListerWatcher: lw, ObjectType: objType, Handler: h, ResyncPeriod: resyncPeriod,
	})
}

// NewIndexerInformer is NewInformerWithOptions with an Indexer.
//
// Deprecated: call NewInformerWithOptions, which takes the same settings as
// named fields.
func NewIndexerInformer(
	lw ListerWatcher,
	objType runtime.Object,
	resyncPeriod time.Duration,
	h ResourceEventHandler,
	indexers Indexers,
) (Indexer, Controller) {
	clientState := NewIndexer(DeletionHandlingMetaNamespaceKeyFunc, indexers)
	return clientState, newInformer(clientState, InformerOptions{
		ListerWatcher: lw, ObjectType: objType, Handler: h, ResyncPeriod: resyncPeriod, Indexers: indexers,
	})
}

// NewTransformingInformer is NewInformer with a transform.
//
// Deprecated: call NewInformerWithOptions, which takes the same settings as
// named fields.
func NewTransformingInformer(
	lw ListerWatcher,
	objType runtime.Object,
	resyncPeriod time.Duration,
	h ResourceEventHandler,
	transformer TransformFunc,
) (Store, Controller) {
	clientState := NewStore(DeletionHandlingMetaNamespaceKeyFunc)
	return clientState, newInformer(clientState, InformerOptions{
		ListerWatcher: lw, ObjectType: objType, Handler: h, ResyncPeriod: resyncPeriod, Transform: transformer,
	})
}

// NewTransformingIndexerInformer is NewIndexerInformer with a transform.
//
// Deprecated: call NewInformerWithOptions, which takes the same settings as
// named fields.
func NewTransformingIndexerInformer(
	lw ListerWatcher,
	objType runtime.Object,
	resyncPeriod time.Duration,
	h ResourceEventHandler,
	indexers Indexers,
	transformer TransformFunc,
) (Indexer, Controller) {
	clientState := NewIndexer(DeletionHandlingMetaNamespaceKeyFunc, indexers)
	return clientState, newInformer(clientState, InformerOptions{
		ListerWatcher: lw, ObjectType: objType, Handler: h, ResyncPeriod: resyncPeriod,
		Indexers: indexers, Transform: transformer,
	})
}

// NewNamespaceKeyedIndexerAndReflector returns an Indexer with a namespace
// index and the Reflector that fills it directly, without a queue.
func NewNamespaceKeyedIndexerAndReflector(lw ListerWatcher, expectedType interface{}, resyncPeriod time.Duration) (indexer Indexer, reflector *Reflector) {
	indexer = NewIndexer(MetaNamespaceKeyFunc, Indexers{NamespaceIndex: MetaNamespaceIndexFunc})
	return indexer, NewReflector(lw, expectedType, indexer, resyncPeriod)
}

// newInformer is the one place the NewInformer family builds a controller.
func newInformer(clientState Store, options InformerOptions) Controller {
	logger := klog.Background()
	if options.Logger != nil {
		logger = *options.Logger
	}
	handler := quietRelists(newShardMoveSink(handlerSink{handler: options.Handler}, options.ListerWatcher), quietRelistEnabled())
	queue := newInformerQueue(logger, options.ObjectType, clientState, options.Transform, options.Identifier, options.InformerMetricsProvider, true)
	return New(&Config{
		Queue:            queue,
		ListerWatcher:    options.ListerWatcher,
		ObjectType:       options.ObjectType,
		FullResyncPeriod: options.ResyncPeriod,
		MinWatchTimeout:  options.MinWatchTimeout,
		Process: func(obj interface{}, isInInitialList bool) error {
			deltas, ok := obj.(Deltas)
			if !ok {
				return fmt.Errorf("processing: popped %T, want Deltas", obj)
			}
			return processDeltas(logger, handler, clientState, deltas, isInInitialList, DeletionHandlingMetaNamespaceKeyFunc)
		},
		ProcessBatch: func(deltas []Delta, isInInitialList bool) error {
			return processDeltasInBatch(logger, handler, clientState, deltas, isInInitialList, DeletionHandlingMetaNamespaceKeyFunc)
		},
	})
}

// newInformerQueue picks the queue of an informer as the reference does
// for the same gates: a RealFIFO (InOrderInformers is locked on); with
// AtomicFIFO, replacements arrive whole and are reconciled with the store
// by the controller, otherwise the queue reads the store as its known
// objects. dedup says whether the informer shares equal parts of
// its objects (dedup_switch.go), unless the process turned that off.
func newInformerQueue(logger klog.Logger, objectType any, clientState Store, transform TransformFunc, id InformerNameAndResource, metrics InformerMetricsProvider, dedup bool) Queue {
	return newDedupInformerQueue(logger, objectType, clientState, transform, id, metrics, informerSharing(dedup))
}

// newDedupInformerQueue is newInformerQueue with the value sharing to use
// (nil: none), which it attaches to clientState.
func newDedupInformerQueue(logger klog.Logger, objectType any, clientState Store, transform TransformFunc, id InformerNameAndResource, metrics InformerMetricsProvider, sharing *valueSharing) Queue {
	sharing.attach(clientState, objectType, id, metrics)
	opts := RealFIFOOptions{
		Logger:          &logger,
		Name:            fmt.Sprintf("RealFIFO %T", objectType),
		KeyFunction:     MetaNamespaceKeyFunc,
		Transformer:     sharing.transform(transform, clientState),
		Identifier:      id,
		MetricsProvider: metrics,
	}
	atomicEvents := featureEnabled(featureAtomicFIFO)
	if atomicEvents {
		opts.AtomicEvents = true
		opts.UnlockWhileProcessing = featureEnabled(featureUnlockWhileProcessingFIFO)
		opts.EmitDeltaTypeBookmark = true
	} else {
		opts.KnownObjects = clientState
	}
	q := NewRealFIFOWithOptions(opts)
	if atomicEvents {
		// Not KnownObjects, which AtomicEvents rules out: only lists read
		// it, to reuse the cached copy of every object that did not change.
		q.consumerCache = clientState
	}
	if sharing != nil {
		q.ownerTransform, q.dedup, q.sharing = transform, true, sharing
		if !atomicEvents {
			// Sharing prepares listed objects as they arrive; without
			// AtomicFIFO a relist still hands on fresh ones, as client-go's.
			q.consumerCache = nil
		}
	}
	return q
}
