// Package cache is kcache: a drop-in replacement for client-go's
// k8s.io/client-go/tools/cache, the informer cache Kubernetes controllers
// run on. Change the import path and a controller compiles and behaves the
// same; the exported API is client-go v0.37.2's, name for name.
//
// # Layers
//
// The files form layers along the data flow; a file names only what its
// own layer and the layers above it in this list declare (methods of one
// type may be spread over files of one layer). doc_test.go holds this map
// to the files: each file is listed once, and no file uses a name declared
// in a layer below its own.
//
//	foundations   doc.go, tuning.go (every tuning constant), features.go
//	              (feature gates), metrics.go (metric seams), identity.go
//	              (informer and handler names), retry_with_deadline.go,
//	              sync_wait.go (DoneChecker, WaitFor*), synctrack.go
//	              (per-handler sync)
//	keys, index   keys.go (keys, tombstones, KeyGetter and KeyLister),
//	              index.go (index functions, the values they give, the
//	              index engine and the slot table)
//	stores        store.go (Store, Indexer, ReflectorStore, TransformFunc;
//	              UndeltaStore, FakeCustomStore), store_relist.go (the
//	              relist rule: what a Replace adds, updates, keeps and
//	              reports deleted), relist_quiet.go (quiet relists'
//	              switch and rule), transaction.go (the changes of a
//	              Transaction), thread_safe_store.go, dedup_switch.go
//	              (value sharing's switch, and an informer's table, guard
//	              and compactor tied to its queue and store),
//	              expiration_cache.go, mutation_cache.go,
//	              mutation_detector.go, listers.go (ListAll*, label matching)
//	queues        deltas.go (DeltaType, Delta, Deltas: the change records),
//	              fifo.go (Queue, what every queue shares: ring, lifecycle,
//	              staging, list preparation; and FIFO), delta_fifo.go,
//	              real_fifo.go, heap.go
//	reflector     listwatch.go, getter.go, reflector.go (the type, its
//	              options and state), reflector_list.go (paginated and
//	              streaming lists, and the intake that reuses cached
//	              objects), consistency_detector.go, reflector_watch.go,
//	              reflector_run.go (the state machine that drives the
//	              steps), shard_selector.go (the parser, a parsed
//	              selector, its ranges and hash, one selector held),
//	              shard_listwatch.go (the sharded ListerWatcher: the API
//	              fields found by name, who filters, its watches and its
//	              moves)
//	controller    shard_moved.go (a shard move told from a deletion),
//	              event_handlers.go (the handler interfaces and the
//	              notifications handed to them), controller.go
//	processor     listener_backlog.go (a listener's pending notifications,
//	              their merging and the stall rule), processor.go
//	informer      shared_informer.go (with the typed informer)
//	factory       factory.go
//
// Value sharing (SetValueSharing, KCACHE_SHARE_VALUES) is an engine of its
// own, the package internal/dedup: its table, walk, comparison, guard and
// compactor, and every unsafe operation of the module. It works on values
// and types and imports nothing of this package; dedup_switch.go is the
// one file here that imports it. "dedup" is that engine's word in file,
// type and identifier names.
//
// The client side of client-go v0.38's sharded ListerWatcher contract
// (sending the selector, checking a list's ShardInfo, filtering lists and
// watch events) is the package internal/shardfilter, which the strict mode
// of shard_listwatch.go and the clientgo bridge share.
//
// # Data flow
//
//	  API server
//	      │  list (paginated, or one streaming watch) + watch
//	      ▼
//	ListerWatcher ──▶ Reflector ──▶ queue (RealFIFO; DeltaFIFO, FIFO on request)
//	                                  │ Pop / PopBatch
//	                                  ▼
//	                             controller ──▶ Indexer (the cache: a map under a
//	                                  │          RWMutex plus secondary indexes)
//	                                  ▼
//	                         shared processor ──▶ one listener per handler
//	                                                 └─▶ OnAdd / OnUpdate / OnDelete
//
// A Reflector lists and watches one resource and writes every change to a
// queue. The controller pops the queue, updates the Indexer, and hands each
// change to the shared informer's processor, which queues it for every
// registered handler. Each handler runs on its own goroutine and sees the
// changes of each object in order.
//
// # Lock order
//
// Locks are only ever taken in these orders, never the reverse (a chain
// may skip a lock):
//
//	sharedIndexInformer.mu → sharedIndexInformer.deliverMu → sharedProcessor.mu
//	  → processorListener's locks
//	queue lock → sharedIndexInformer.deliverMu → store lock
//	sharedIndexInformer.deliverMu → the mutation detector's locks
//
// The queue lock is held there when the queue runs its process function
// under it (see below); the store is the informer's indexer, a queue's
// known objects.
//
// Handlers added to a shared informer run on their listeners' goroutines
// with no lock of this package held. User code does run under a lock of
// this package in these places:
//
//   - The process function of DeltaFIFO.Pop, and of RealFIFO.Pop and
//     PopBatch without UnlockWhileProcessing, runs under the queue lock; with
//     UnlockWhileProcessing, RealFIFO still keeps the lock while processing
//     once two full batches are waiting (backpressure). The handlers of
//     NewInformer, NewIndexerInformer and the other NewInformer* functions
//     are called by that process function, so they run under the queue lock
//     whenever the queue holds it while processing.
//   - AddIndexers runs the new index functions under the store's write lock,
//     and a shared informer holds its deliverMu while the index functions
//     run on each delivered change.
//   - DeltaFIFO.Resync and RealFIFO.Resync compute keys (the KeyFunc) under
//     the queue lock.
//   - Metrics created by a user's InformerMetricsProvider are updated under
//     RealFIFO's lock: the queued-items gauge always, the processing-latency
//     summary whenever the process function ran under that lock. The
//     resource-version gauge of a store made with WithStoreMetrics or
//     WithThreadSafeStoreMetrics is set under the store's write lock, so it
//     never goes back to an older version.
//   - The shard-mode gauges of a ShardModeMetricsProvider are set under the
//     ShardedListerWatcher's reportMu, which only reporting takes.
//
// Elsewhere, transforms run before any lock is taken, and index functions
// before the store's write lock, save the two races named under "Store
// layout".
//
// # Store layout
//
// The store behind every Indexer (thread_safe_store.go) is built for the
// reads controllers make most and for writes that rarely change an
// object's index values:
//
//   - Objects and their keys sit in two dense parallel arrays; a map turns
//     a key into a slot number. List and ListKeys copy an array in one go;
//     removing an object moves the last slot into its place.
//   - Each index (index.go's indexSet) files slot numbers, not keys, in buckets by
//     value, and records per slot where it is filed. ByIndex and Index copy
//     objects straight out of the slot array, with no map lookup per
//     object, so readers hold the read lock only for that copy.
//   - Because each slot's filings are recorded, an update compares the new
//     values with the filed ones and touches no bucket when they are equal
//     (the common case), and neither an update nor a delete ever runs the
//     index functions on the old object. The namespace index, when it is
//     MetaNamespaceIndexFunc itself, is computed without allocating.
//   - On Add, Update, Replace and Transaction, index values are computed
//     before the write lock is taken, into a buffer on the writer's stack.
//     AddIndexers is the exception: it runs the new functions under the
//     write lock. Two races also compute values under it: a write whose
//     values were computed before an AddIndexers that got the lock first
//     computes them again with the new functions, and a Replace item found
//     unchanged under the read lock but overwritten before the write lock
//     has its values computed then.
//   - IndexKeys keeps each bucket's sorted key list until the bucket's
//     membership changes, and returns a copy of it.
//   - Replace diffs: an item whose key already holds the very same object
//     (as after a relist that reused the cached objects) is left alone
//     without running its index functions; other items are updated or
//     added and keys missing from the list are deleted, all under one
//     write lock.
//   - A read that copied many objects (tuning.go's storeBulkRead) yields
//     the processor after releasing the lock, so goroutines looping over
//     big listings cannot keep the informer's writers waiting for a whole
//     scheduling slice.
//
// # Listers
//
// ListAll and ListAllByNamespace compile the label selector once per call
// into plain map lookups (=, ==, single-value in, exists, !exists); other
// operators are asked of the requirement itself and other selector types
// of their own Matches (listers.go). Labels are read 32 objects at a
// time before any is tested, so the memory misses of a large cache
// overlap. ListAll copies this package's stores into a pooled buffer
// (cleared before reuse) instead of a new slice per call, and
// ListAllByNamespace reads the namespace bucket directly when the index
// function is MetaNamespaceIndexFunc. Listings yield the processor once
// per stretch of objects (tuning.go): several goroutines looping over big
// listings then share the cores with the informer instead of starving it.
//
// # Relists reuse unchanged objects
//
// While a list arrives (the pages of a LIST, or the initial events of a
// streaming list), the reflector hands each object to its queue, which
// transforms it and looks up the object the informer caches under the same
// key (reflector_list.go hands the objects over, store_relist.go's
// reuseCached compares them). When both have the same UID and the same
// non-empty resourceVersion, the cached object is kept and the freshly
// decoded copy is dropped at once: a relist holds a second copy only of
// the objects that changed, not of the whole resource, and the store's
// diffing Replace then skips the kept objects. Handlers see them as
// OnUpdate(old, new) with old == new, a resync-style update. This relies
// on cached objects never being modified and on transforms being
// deterministic; a plain Store fed by a Reflector, or a queue without
// known objects, gets every listed object as decoded.
//
// Quiet relists (SetQuietRelist, KCACHE_QUIET_RELIST; off by default)
// go one step further: such a kept object, and any listed object whose
// resource version, not empty, is the cached one's, reaches no handler at
// all, where client-go hands every handler an update for it
// (relist_quiet.go). The informer's controller drops those updates as it
// turns the relist into notifications, for every queue an informer uses;
// a DeltaFIFO with KnownObjects, whose consumer is the caller's code, does
// not queue them under the variable.
//
// A streaming list with a transform transforms its objects twice, as
// client-go does: each as it arrives, then each result again once the list
// is complete. The first results are held until then (they are the second
// calls' arguments), and the lookup follows the second transform.
//
// # Environment switches
//
// The same variables as client-go, read once per process:
//
//	KUBE_FEATURE_AtomicFIFO                   default true   replacements and resyncs reach the informer whole
//	KUBE_FEATURE_InOrderInformers             locked true    informers use a RealFIFO
//	KUBE_FEATURE_InOrderInformersBatchProcess default true   the controller pops in batches
//	KUBE_FEATURE_InformerResourceVersion      default true
//	KUBE_FEATURE_UnlockWhileProcessingFIFO    default true   the queue is unlocked while an item is processed
//	KUBE_FEATURE_WatchListClient              default true   streaming lists (sendInitialEvents)
//	KUBE_CACHE_MUTATION_DETECTOR              default false  detect handlers that modify cached objects
//	KUBE_WATCHLIST_INCONSISTENCY_DETECTOR     default false  compare streamed lists with a plain list
//
// and two of kcache's own:
//
//	KCACHE_SHARE_VALUES                       default true   equal parts of one informer's cached objects, at one field path, are one in memory (internal/dedup); an unknown value turns it off
//	KCACHE_QUIET_RELIST                       default false  a relist tells handlers nothing of an object whose resource version did not change (SetQuietRelist; a DeltaFIFO with KnownObjects does not queue it); an unknown value leaves it off
//
// # Differences from client-go
//
// Getter: client-go's Getter is interface{ Get() *rest.Request }, which
// names client-go's rest package; this package must not import client-go.
// Here Getter is an empty interface, and NewListWatchFromClient checks by
// reflection that the value has a Get method returning a request builder
// with client-go's methods. Every caller that compiled against client-go
// (clientset.CoreV1().RESTClient(), a *rest.RESTClient, rest.Interface)
// compiles and works unchanged; a value of another shape makes the
// ListWatch's List and Watch fail with an error naming what is missing.
// Inside a client-go overlay written by overlay/cmd/kcache-overlay, this
// package is k8s.io/client-go/tools/cache, Getter is client-go's own
// interface and gates come from k8s.io/client-go/features.
//
// Panics: as in client-go, listener delivery, the controller's process
// loop, the shared informer's Run, each reflector cycle and the functions
// WaitForCacheSync polls run under apimachinery's utilruntime.HandleCrash*
// functions. A panic (in a handler, an index, key or transform function,
// a ListerWatcher or a store) is logged as "Observed a panic", the
// utilruntime.PanicHandlers run, and with utilruntime.ReallyCrash (true by
// default) the process dies. Setting utilruntime.ReallyCrash = false is the
// opt-in to keep serving: the panicking notification or change is dropped
// and the informer goes on. Unlike client-go, a handler that panicked on an
// initial-list add still lets its registration sync
// (kubernetes/kubernetes#129024). An index function that fails or panics
// makes the write panic with client-go's message, after the object is
// stored: it is filed in every index but the failing one, which keeps its
// old entries after Add, Update and Transaction and drops them after
// Replace (docs/differences.md).
//
// Delivery to handlers: as in client-go, every handler receives every
// notification, in order, however far it falls behind; its listener
// buffers them without limit while the handler makes progress. Only a
// handler that has stalled gets bounded memory: when its backlog has held
// at least DefaultListenerBacklogLimit (10,000) notifications for
// ListenerStallTimeout (10 s) and none of its calls returned in that time,
// the listener logs "Event handler stalled" and merges the pending
// notifications per object: the oldest old object and the newest new
// object are kept, an add followed by a delete vanishes, a delete is
// always delivered. Its backlog then holds about one entry per object, so
// its memory is bounded by the number of objects, not of events, and once
// released the handler still sees each object's changes in order and ends
// in the same state. Merging stops as soon as one of its calls returns.
// Before the stall is found the backlog holds up to the limit plus what
// arrives during the timeout; BenchmarkListener_StalledHandlerHeap
// measures the live heap that costs against an unbounded buffer.
// SetListenerBacklogLimit(n) with n > 0 opts in to merging as soon as n
// notifications are pending, whether or not the handler makes progress;
// SetListenerBacklogLimit(0) never merges, even for a stalled handler.
//
// Errors and logs: error texts, wrapping and the log lines client-go also
// writes (message, verbosity, keys) are client-go's. kcache's own features
// (the streaming-list fallback, feature gate parsing, the consistency and
// mutation detectors) log lines of their own; its own debug lines (process
// errors, reflector state changes) are at V(4) and above.
//
// Bounded waits: a streaming list whose end bookmark does not come falls
// back to a paginated list instead of waiting forever
// (kubernetes/kubernetes#135895); one answered by a test fake's buffered
// watch (apimachinery's RaceFreeFakeWatcher, what client-go's fake
// clientsets return) without the bookmark falls back at once.
//
// Where kcache still differs from client-go by default,
// docs/differences.md says so and why.
package cache
