package cache

import (
	"context"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/naming"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Timing defaults, the same as client-go's. Watch requests ask the server to end them
// after a random time in [min, 2*min) so that a fleet of clients does not
// reconnect all at once. Failures back off exponentially with full jitter
// from 800ms up to 30s; two minutes after the backoff last restarted it
// restarts from the beginning.
const (
	defaultMinWatchTimeout = 5 * time.Minute
	defaultBackoffInitial  = 800 * time.Millisecond
	defaultBackoffCap      = 30 * time.Second
	defaultBackoffReset    = 2 * time.Minute
	defaultBackoffFactor   = 2.0
	defaultBackoffJitter   = 1.0
	// internalErrorQuietPeriod refills the MaxInternalErrorRetryDuration
	// budget once the server has not reported an internal error for that
	// long.
	internalErrorQuietPeriod = time.Minute
	// unspecifiedTypeDescription describes the objects of a reflector built
	// without an expected type.
	unspecifiedTypeDescription = "<unspecified>"
)

// Bounds on the wait for a streaming list to complete: a Reflector gives up
// on a stream that has delivered no event for initialEventsTimeout without
// sending the initial-events-end bookmark, and falls back to a paginated
// list. Every initialEventsCheckEvery of silence it logs a warning. Both are
// copied into each Reflector when it is built (tests change the copies).
var (
	defaultInitialEventsTimeout    = 90 * time.Second
	defaultInitialEventsCheckEvery = 10 * time.Second
)

// Reflector keeps a store in step with one resource on a server: it lists the
// resource, replaces the store's content with the list, then applies each
// watch event, and starts over whenever the watch cannot continue. Only
// objects of the expected type reach the store.
//
// A Reflector is a state machine (see reflectorState): listing or
// watchListing fill the store, watching follows changes, backingOff waits
// after a failure, stopped ends the run. The exported fields must be set
// before Run and not changed while it runs.
//
// Its retry decisions are client-go v0.37.2's: which failure reopens the
// watch at once, which backs off first, which falls back to a paginated list
// and which ends the cycle, with the same log lines. Where client-go's
// Reflector could hang, this one does not: waiting for a streaming list to
// complete is bounded (see defaultInitialEventsTimeout), after which it
// falls back to a paginated list; and a streaming list answered by a test
// fake that cannot serve one (client-go's fake clientsets without their
// capability probe, see isBufferedFakeWatch) falls back at once. A request that fails because the context
// ended is not reported to the watch error handler.
type Reflector struct {
	// WatchListPageSize is the page size of lists. Zero lets the Reflector
	// choose: pages of 500 when listing from the watch cache ("0") or from
	// the newest state (""), and no paging when listing from a known
	// resource version, so that the watch cache can serve the list.
	WatchListPageSize int64
	// ShouldResync is asked at each resync period whether to call the
	// store's Resync; nil means always. It runs on a goroutine of its own.
	ShouldResync func() bool
	// MaxInternalErrorRetryDuration is how long a watch ending in internal
	// server errors is reopened at once, from the same resource version,
	// before the Reflector relists instead. Zero relists at the first
	// internal error.
	MaxInternalErrorRetryDuration time.Duration

	name            string
	typeDescription string
	// expectedType is the Go type of accepted objects; nil accepts any.
	expectedType reflect.Type
	// expectedGVK is the kind accepted objects must report; set only for an
	// unstructured expected type that names its kind.
	expectedGVK   *schema.GroupVersionKind
	store         ReflectorStore
	listerWatcher ListerWatcherWithContext
	// watchErrorHandler is told about errors that end a cycle of Run. The
	// informer replaces it before Run.
	watchErrorHandler WatchErrorHandlerWithContext
	clock             clock.Clock
	// delay returns the next backoff; it is only called by the goroutine
	// running the Reflector.
	delay                   wait.DelayFunc
	resyncPeriod            time.Duration
	minWatchTimeout         time.Duration
	maxWatchTimeout         time.Duration
	initialEventsTimeout    time.Duration
	initialEventsCheckEvery time.Duration
	// useWatchList makes each cycle start with a streaming list.
	useWatchList bool
	metrics      reflectorMetrics

	// paginatedResult records that the server paged a list from the watch
	// cache, so it will not serve unpaged lists from it either: later lists
	// are paged too. Only the goroutine running the Reflector touches it.
	paginatedResult bool
	// streamsRefused records that the client answered a streaming list with
	// a test fake's stream that cannot complete one (see
	// isBufferedFakeWatch): later cycles list page by page without asking
	// again. Only the goroutine running the Reflector touches it.
	streamsRefused bool

	// rvMu guards lastSyncResourceVersion and listOrigin, which the running
	// Reflector writes and LastSyncResourceVersion reads from anywhere.
	rvMu sync.RWMutex
	// lastSyncResourceVersion is the newest resource version the store has
	// been brought to: that of the last list, or of the last watch event
	// once the watch is past its synthetic events.
	lastSyncResourceVersion string
	// listOrigin is where the listing states start their next list.
	listOrigin listOrigin
}

// listOrigin is the parameter of the listing and watchListing states: where
// the next list starts.
type listOrigin uint8

const (
	// originLastSeen lists from lastSyncResourceVersion, or from the watch
	// cache ("0") when nothing was seen yet.
	originLastSeen listOrigin = iota
	// originNewest lists the newest state (""), because the server could not
	// serve the last resource version: it expired or is ahead of the server.
	originNewest
)

// ReflectorOptions configures NewReflectorWithOptions. Every field is
// optional.
type ReflectorOptions struct {
	// Logger names the reflector in construction-time messages; it defaults
	// to klog.Background(). At run time the context's logger is used.
	Logger *klog.Logger
	// Name names the reflector in logs and metrics. It defaults to the
	// file:line of the closest caller outside this package.
	Name string
	// TypeDescription describes the reflected objects in logs. It defaults to
	// the kind of an unstructured expected type that names one, else to the
	// Go type of the expected type, else to "<unspecified>".
	TypeDescription string
	// ResyncPeriod is how often to consider calling the store's Resync; zero
	// never does.
	ResyncPeriod time.Duration
	// MinWatchTimeout is the shortest server-side timeout asked for a watch;
	// values below the five-minute default are raised to it. Each watch asks
	// for a random timeout in [MinWatchTimeout, 2*MinWatchTimeout).
	MinWatchTimeout time.Duration
	// Clock measures every wait, timeout and period; it defaults to the real
	// clock.
	Clock clock.Clock
	// Backoff replaces the default backoff (800ms doubling to 30s, full
	// jitter). Whatever its parameters, it restarts two minutes after it
	// last did.
	Backoff *wait.Backoff
}

// NewReflector creates a Reflector named after its caller. See
// NewReflectorWithOptions.
func NewReflector(lw ListerWatcher, expectedType interface{}, store ReflectorStore, resyncPeriod time.Duration) *Reflector {
	return NewReflectorWithOptions(lw, expectedType, store, ReflectorOptions{ResyncPeriod: resyncPeriod})
}

// NewNamedReflector creates a Reflector with the given name. See
// NewReflectorWithOptions.
func NewNamedReflector(name string, lw ListerWatcher, expectedType interface{}, store ReflectorStore, resyncPeriod time.Duration) *Reflector {
	return NewReflectorWithOptions(lw, expectedType, store, ReflectorOptions{Name: name, ResyncPeriod: resyncPeriod})
}

// NewReflectorWithOptions creates a Reflector that keeps store in step with
// what lw lists and watches. Only objects whose Go type is that of
// expectedType are stored, unless expectedType is nil; for an unstructured
// expectedType that names a kind, the kind must match too. The Reflector
// starts each cycle with a streaming list when the WatchListClient feature is
// on and lw does not say it cannot serve one.
func NewReflectorWithOptions(lw ListerWatcher, expectedType interface{}, store ReflectorStore, options ReflectorOptions) *Reflector {
	c := options.Clock
	if c == nil {
		c = clock.RealClock{}
	}
	minWatch := max(options.MinWatchTimeout, defaultMinWatchTimeout)
	backoff := defaultBackoff()
	if options.Backoff != nil {
		backoff = *options.Backoff
	}
	r := &Reflector{
		name:                    options.Name,
		typeDescription:         options.TypeDescription,
		expectedType:            reflect.TypeOf(expectedType),
		expectedGVK:             expectedGVKOf(expectedType),
		store:                   store,
		listerWatcher:           ToListerWatcherWithContext(lw),
		watchErrorHandler:       DefaultWatchErrorHandler,
		clock:                   c,
		delay:                   backoff.DelayWithReset(c, defaultBackoffReset),
		resyncPeriod:            options.ResyncPeriod,
		minWatchTimeout:         minWatch,
		maxWatchTimeout:         2 * minWatch,
		initialEventsTimeout:    defaultInitialEventsTimeout,
		initialEventsCheckEvery: defaultInitialEventsCheckEvery,
	}
	if r.name == "" {
		r.name = naming.GetNameFromCallsite(callsiteSkipped...)
	}
	if r.typeDescription == "" {
		r.typeDescription = describeExpectedType(expectedType)
	}
	r.metrics = newReflectorMetrics(r.name)
	if s, ok := lw.(shardModeReporter); ok {
		s.reportModeTo(r.name, reflectorMetricsProvider())
	}
	logger := klog.Background()
	if options.Logger != nil {
		logger = *options.Logger
	}
	logger = klog.LoggerWithName(logger, r.name)
	r.useWatchList = featureEnabled(featureWatchListClient)
	if r.useWatchList && lacksWatchListSemantics(lw) {
		logger.V(2).Info("The client cannot serve streaming lists; this reflector will use paginated lists. Expected of test fakes, not of real clients.", "feature", featureWatchListClient)
		r.useWatchList = false
	}
	return r
}

// defaultBackoff is the reference's backoff: 800ms doubling up to 30s with
// full jitter, enough steps to reach the cap.
func defaultBackoff() wait.Backoff {
	return wait.Backoff{
		Duration: defaultBackoffInitial,
		Cap:      defaultBackoffCap,
		Steps:    int(math.Ceil(float64(defaultBackoffCap) / float64(defaultBackoffInitial))),
		Factor:   defaultBackoffFactor,
		Jitter:   defaultBackoffJitter,
	}
}

// thisPackageDir is the directory of this package's sources; callers from
// inside it are skipped when a reflector is named after its caller.
var thisPackageDir = func() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "kcache/cache/"
	}
	return filepath.Dir(file) + "/"
}()

// callsiteSkipped are the paths to skip when a reflector is named after
// its caller: this package's files, one by one, so that code in a folder
// below this one (an example or a test module in this repository) still
// names its reflectors (without the sources at hand, the whole directory);
// the clientgo bridge, which only passes client-go's calls on, whether it
// sits below this folder or in the module cache; and the standard
// library's sync package (sync.WaitGroup.Go starting an informer says
// nothing about who runs it). Its capacity is its length:
// GetNameFromCallsite appends to it, and reflectors are made concurrently.
var callsiteSkipped = func() []string {
	files := append(thisPackageFiles(), thisPackageDir+"clientgo/", "/kcache/cache/clientgo@", "/src/sync/")
	return files[:len(files):len(files)]
}()

// thisPackageFiles lists this package's source files.
func thisPackageFiles() []string {
	entries, err := os.ReadDir(thisPackageDir)
	if err != nil {
		return []string{thisPackageDir}
	}
	var files []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".go") {
			files = append(files, thisPackageDir+e.Name())
		}
	}
	if len(files) == 0 {
		return []string{thisPackageDir}
	}
	return files
}

// describeExpectedType is the default TypeDescription.
func describeExpectedType(expectedType interface{}) string {
	if expectedType == nil {
		return unspecifiedTypeDescription
	}
	if gvk := expectedGVKOf(expectedType); gvk != nil {
		return gvk.String()
	}
	return reflect.TypeOf(expectedType).String()
}

// expectedGVKOf returns the kind an unstructured expected type names, or nil.
func expectedGVKOf(expectedType interface{}) *schema.GroupVersionKind {
	u, ok := expectedType.(*unstructured.Unstructured)
	if !ok {
		return nil
	}
	gvk := u.GroupVersionKind()
	if gvk.Empty() {
		return nil
	}
	return &gvk
}

// Name returns the reflector's name, as used in logs and metrics.
func (r *Reflector) Name() string { return r.name }

// TypeDescription returns the description of the reflected objects used in
// logs.
func (r *Reflector) TypeDescription() string { return r.typeDescription }

// LastSyncResourceVersion returns the resource version the store was last
// brought to. It may run ahead of what a queue's consumer has processed.
func (r *Reflector) LastSyncResourceVersion() string {
	r.rvMu.RLock()
	defer r.rvMu.RUnlock()
	return r.lastSyncResourceVersion
}

// setLastSyncResourceVersion records rv as the store's resource version.
func (r *Reflector) setLastSyncResourceVersion(rv string) {
	r.rvMu.Lock()
	r.lastSyncResourceVersion = rv
	r.rvMu.Unlock()
	setRVGauge(r.metrics.lastResourceVersion, rv)
}

// publishResourceVersion records rv reached by the watch, and tells a store
// that follows resource versions.
func (r *Reflector) publishResourceVersion(rv string) {
	r.setLastSyncResourceVersion(rv)
	if u, ok := r.store.(ResourceVersionUpdater); ok {
		u.UpdateResourceVersion(rv)
	}
}

// setListOrigin sets where the next list starts.
func (r *Reflector) setListOrigin(o listOrigin) {
	r.rvMu.Lock()
	defer r.rvMu.Unlock()
	r.listOrigin = o
}

// relistResourceVersion is the resource version a list starts from: the
// newest state after the last one proved unavailable, the watch cache ("0")
// before anything was seen, else the last version seen, so that a relist
// never goes back in time.
func (r *Reflector) relistResourceVersion() string {
	r.rvMu.RLock()
	defer r.rvMu.RUnlock()
	switch {
	case r.listOrigin == originNewest:
		return ""
	case r.lastSyncResourceVersion == "":
		return "0"
	default:
		return r.lastSyncResourceVersion
	}
}

// rewatchResourceVersion is the resource version a streaming list starts
// from: "" (a consistent snapshot of the newest state) when nothing usable
// was seen, else the last version seen.
func (r *Reflector) rewatchResourceVersion() string {
	r.rvMu.RLock()
	defer r.rvMu.RUnlock()
	if r.listOrigin == originNewest {
		return ""
	}
	return r.lastSyncResourceVersion
}

// watchTimeoutSeconds picks a watch's server-side timeout at random in
// [minWatchTimeout, maxWatchTimeout).
func (r *Reflector) watchTimeoutSeconds() int64 {
	spread := (r.maxWatchTimeout - r.minWatchTimeout).Seconds()
	return int64(r.minWatchTimeout.Seconds() + rand.Float64()*spread)
}

// ResourceVersionUpdater is implemented by stores that want to follow the
// reflector's resource version as it moves with each watch event, bookmarks
// included. UpdateResourceVersion is called on the reflector's goroutine and
// should return quickly.
type ResourceVersionUpdater interface {
	// UpdateResourceVersion records that the reflector has seen
	// resourceVersion.
	UpdateResourceVersion(resourceVersion string)
}

// WatchErrorHandler is told about every error that ends a list-and-watch
// cycle of a running Reflector; the reflector then backs off and lists again.
// It runs on the reflector's goroutine, so it must return quickly.
type WatchErrorHandler func(r *Reflector, err error)

// WatchErrorHandlerWithContext is WatchErrorHandler with the context of the
// running reflector, which carries its logger.
type WatchErrorHandlerWithContext func(ctx context.Context, r *Reflector, err error)

// DefaultWatchErrorHandler is the handler a Reflector uses unless told
// otherwise. It only logs, at a level that fits the error: an expired
// resource version is routine (V(4)), a clean end of stream is not logged, a
// cut connection is logged at V(1), and anything else is reported through
// utilruntime.HandleErrorWithContext.
func DefaultWatchErrorHandler(ctx context.Context, r *Reflector, err error) {
	logger := klog.FromContext(ctx)
	switch {
	case isExpiredError(err):
		logger.V(4).Info("Watch closed", "reflector", r.name, "type", r.typeDescription, "err", err)
	case err == io.EOF: //nolint:errorlint // client-go compares, it does not unwrap
		// The server closed the stream cleanly: nothing to report.
	case err == io.ErrUnexpectedEOF: //nolint:errorlint // as above
		logger.V(1).Info("Watch closed with unexpected EOF", "reflector", r.name, "type", r.typeDescription, "err", err)
	default:
		utilruntime.HandleErrorWithContext(ctx, err, "Failed to watch", "reflector", r.name, "type", r.typeDescription)
	}
}

// isExpiredError reports a resource version the server no longer keeps
// (HTTP 410). Old servers say Gone, newer ones Expired; both mean the same.
func isExpiredError(err error) bool {
	return apierrors.IsResourceExpired(err) || apierrors.IsGone(err)
}

// listWatchCycle is what one list-and-watch cycle holds. It belongs to the
// goroutine running the Reflector.
type listWatchCycle struct {
	// stream is the watch a streaming list left open, for watching to go on
	// with; nil otherwise.
	stream watch.Interface
	// internalErrors bounds the retries after internal server errors
	// (MaxInternalErrorRetryDuration).
	internalErrors RetryWithDeadline
	// resyncErrs delivers the error of a failed resync to the watch.
	resyncErrs chan error
	// stopResync stops the resync loop and waits for it; nil while none
	// runs.
	stopResync func()
	// announced is set once the cycle's start was logged.
	announced bool
}

// newCycle starts a cycle.
func (r *Reflector) newCycle() *listWatchCycle {
	return &listWatchCycle{
		internalErrors: NewRetryWithDeadline(r.MaxInternalErrorRetryDuration, internalErrorQuietPeriod, apierrors.IsInternalError, r.clock),
		resyncErrs:     make(chan error, 1),
	}
}

// takeStream hands over the stream a streaming list left open, if any.
func (c *listWatchCycle) takeStream() watch.Interface {
	w := c.stream
	c.stream = nil
	return w
}

// finish releases what the cycle holds: an open stream and the resync loop.
func (c *listWatchCycle) finish() {
	if c.stream != nil {
		c.stream.Stop()
		c.stream = nil
	}
	if c.stopResync != nil {
		c.stopResync()
		c.stopResync = nil
	}
}

// stepOutcome is how the work of one state ended.
type stepOutcome uint8

const (
	// outcomeSynced: the store holds a full, fresh state; watch next.
	outcomeSynced stepOutcome = iota
	// outcomeFallBackToList: a streaming list is not possible now; list
	// instead.
	outcomeFallBackToList
	// outcomeRetryNow: do the same again at once, as client-go does after
	// a watch the server closed, a watch ending with an internal error
	// within MaxInternalErrorRetryDuration, a streaming list whose stream
	// closed before its end bookmark, and a streaming list from a resource
	// version the server no longer (or not yet) has.
	outcomeRetryNow
	// outcomeRetryLater: do the same again after a backoff.
	outcomeRetryLater
	// outcomeWaited: the backoff is over.
	outcomeWaited
	// outcomeCycleDone: the list-and-watch cycle is over, with or without
	// an error; the next one starts over from a list, after a backoff.
	outcomeCycleDone
	// outcomeCanceled: the context was canceled.
	outcomeCanceled
	// outcomeRelistNow: the cycle is over because its ShardedListerWatcher
	// moved to another shard; the next one starts at once, with no backoff.
	outcomeRelistNow
)

// stepResult is what a state's step reports.
type stepResult struct {
	outcome stepOutcome
	// err is the error that ended the cycle (outcomeCycleDone only).
	err error
	// reason says in a few words why, for the transition log.
	reason string
}

// reflectorMetrics are a Reflector's metrics, created from the installed
// MetricsProvider when the Reflector is built.
type reflectorMetrics struct {
	lists               CounterMetric
	listDuration        SummaryMetric
	itemsInList         SummaryMetric
	watches             CounterMetric
	shortWatches        CounterMetric
	watchDuration       SummaryMetric
	itemsInWatch        SummaryMetric
	lastResourceVersion GaugeMetric
}

// newReflectorMetrics creates the metrics of the reflector called name.
func newReflectorMetrics(name string) reflectorMetrics {
	p := reflectorMetricsProvider()
	return reflectorMetrics{
		lists:               p.NewListsMetric(name),
		listDuration:        p.NewListDurationMetric(name),
		itemsInList:         p.NewItemsInListMetric(name),
		watches:             p.NewWatchesMetric(name),
		shortWatches:        p.NewShortWatchesMetric(name),
		watchDuration:       p.NewWatchDurationMetric(name),
		itemsInWatch:        p.NewItemsInWatchMetric(name),
		lastResourceVersion: p.NewLastResourceVersionMetric(name),
	}
}
