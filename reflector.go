package cache

import (
	"context"
	"fmt"
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

// ReflectorBookmarkStore is implemented by stores that want to hear about
// watch bookmarks: the resource version moved without any object changing.
type ReflectorBookmarkStore interface {
	// Bookmark records that the watch reached resourceVersion.
	Bookmark(resourceVersion string) error
}

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
// Where client-go's Reflector could spin or hang, this one does not, with
// the same API:
//   - waiting for a streaming list to complete is bounded (see
//     defaultInitialEventsTimeout); it then falls back to a paginated list;
//   - reopening a watch after an internal server error, and restarting a
//     streaming list whose stream closed before completing, wait for the
//     backoff instead of retrying at once;
//   - a panic in the ListerWatcher, the store, ShouldResync or the watch
//     error handler becomes an error of the cycle, not a crash;
//   - a request that fails because the context ended is not reported to
//     the watch error handler.
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
	// server errors is reopened, after a backoff, before the Reflector relists
	// instead. Zero relists at the first internal error.
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

// Run lists and watches until stopCh is closed, backing off after each cycle
// that ends. Prefer RunWithContext.
func (r *Reflector) Run(stopCh <-chan struct{}) {
	r.RunWithContext(wait.ContextForChannel(stopCh))
}

// RunWithContext lists and watches until ctx is canceled. Each error that
// ends a cycle goes to the watch error handler; each new cycle waits for the
// backoff first. It returns once every goroutine it started has ended, save
// a list call that ignores its context: that one is left to return on its
// own, and its result is dropped.
func (r *Reflector) RunWithContext(ctx context.Context) {
	logger := klog.FromContext(ctx)
	logger.V(3).Info("Starting reflector", "type", r.typeDescription, "resyncPeriod", r.resyncPeriod, "reflector", r.name)
	_ = r.drive(ctx, false)
	logger.V(3).Info("Stopping reflector", "type", r.typeDescription, "resyncPeriod", r.resyncPeriod, "reflector", r.name)
}

// ListAndWatch runs one cycle until stopCh is closed. Prefer
// ListAndWatchWithContext.
func (r *Reflector) ListAndWatch(stopCh <-chan struct{}) error {
	return r.ListAndWatchWithContext(wait.ContextForChannel(stopCh))
}

// ListAndWatchWithContext runs one cycle: list (or stream the list), replace
// the store's content, then watch, reopening the watch while that makes
// sense. It returns the error that kept it from listing or from starting a
// watch, and nil when ctx is canceled or when the watch ended in a way that
// calls for a relist.
func (r *Reflector) ListAndWatchWithContext(ctx context.Context) error {
	return r.drive(ctx, true)
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

// drive runs the state machine from the start of a cycle until it stops:
// when ctx is canceled or, with singleCycle, when the cycle ends. It returns
// the error that ended a single cycle.
func (r *Reflector) drive(ctx context.Context, singleCycle bool) error {
	logger := klog.FromContext(ctx)
	m := newReflectorMachine(r.useWatchList, singleCycle)
	c := r.newCycle()
	defer func() { c.finish() }()
	for m.state != reflectorStopped {
		var res stepResult
		if singleCycle {
			res = r.step(ctx, m.state, c)
		} else {
			res = r.guardedStep(ctx, m.state, c)
		}
		if ctx.Err() != nil {
			// Whatever failed as the context ended failed because of it.
			res = stepResult{outcome: outcomeCanceled}
		}
		prev := m.state
		m = m.next(res.outcome)
		logger.V(5).Info("Reflector changed state", "reflector", r.name, "from", prev, "to", m.state, "reason", res.reason)
		cycleDone := res.outcome == outcomeCycleDone || res.outcome == outcomeRelistNow
		if m.state == reflectorStopped && res.outcome != outcomeCanceled && !cycleDone {
			logger.Error(nil, "Reflector stopped: its state cannot produce this outcome", "reflector", r.name, "state", prev, "outcome", res.outcome)
		}
		if !cycleDone {
			continue
		}
		c.finish()
		if singleCycle {
			return res.err
		}
		if res.err != nil {
			r.guardedReportError(ctx, res.err)
		}
		c = r.newCycle()
	}
	return nil
}

// step does the work of one state and says how it went.
func (r *Reflector) step(ctx context.Context, s reflectorState, c *listWatchCycle) stepResult {
	if ctx.Err() != nil {
		return stepResult{outcome: outcomeCanceled}
	}
	if (s == reflectorListing || s == reflectorWatchListing) && !c.announced {
		c.announced = true
		klog.FromContext(ctx).V(3).Info("Listing and watching", "type", r.typeDescription, "reflector", r.name)
	}
	switch s {
	case reflectorListing:
		return r.stepList(ctx)
	case reflectorWatchListing:
		return r.stepWatchList(ctx, c)
	case reflectorWatching:
		r.ensureResyncLoop(ctx, c)
		return r.stepWatch(ctx, c)
	case reflectorBackingOff:
		return r.stepBackOff(ctx)
	default:
		return stepResult{outcome: outcomeCanceled}
	}
}

// reportError hands err to the watch error handler.
func (r *Reflector) reportError(ctx context.Context, err error) {
	r.watchErrorHandler(ctx, r, err)
}

// guardedStep is step for Run: as client-go's wait.BackoffUntil does
// around each list-and-watch cycle, it runs under
// utilruntime.HandleCrashWithContext, which logs "Observed a panic", runs
// utilruntime.PanicHandlers and, with utilruntime.ReallyCrash (the
// default), panics again. With ReallyCrash false a panic ends the cycle
// without an error, and the next one starts after the backoff.
func (r *Reflector) guardedStep(ctx context.Context, s reflectorState, c *listWatchCycle) (res stepResult) {
	crashed := true
	defer func() {
		if crashed {
			res = stepResult{outcome: outcomeCycleDone, reason: "panic"}
		}
	}()
	defer utilruntime.HandleCrashWithContext(ctx)
	res = r.step(ctx, s, c)
	crashed = false
	return res
}

// guardedReportError is reportError for Run, under
// utilruntime.HandleCrashWithContext like the rest of a cycle.
func (r *Reflector) guardedReportError(ctx context.Context, err error) {
	defer utilruntime.HandleCrashWithContext(ctx)
	r.reportError(ctx, err)
}

// stepBackOff is the backingOff state: wait for the next backoff delay.
func (r *Reflector) stepBackOff(ctx context.Context) stepResult {
	d := r.delay()
	klog.FromContext(ctx).V(4).Info("Reflector backing off", "reflector", r.name, "delay", d)
	t := r.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return stepResult{outcome: outcomeCanceled}
	case <-t.C():
		return stepResult{outcome: outcomeWaited}
	}
}

// reflectorState names what a Reflector is doing.
type reflectorState uint8

const (
	// reflectorListing: a (paginated) LIST fills the store.
	reflectorListing reflectorState = iota
	// reflectorWatchListing: a streaming list fills the store, and its
	// stream is kept for watching.
	reflectorWatchListing
	// reflectorWatching: watch events are applied to the store.
	reflectorWatching
	// reflectorBackingOff: waiting before trying again.
	reflectorBackingOff
	// reflectorStopped: the run is over.
	reflectorStopped
)

// String returns the state's name, as logged.
func (s reflectorState) String() string {
	switch s {
	case reflectorListing:
		return "listing"
	case reflectorWatchListing:
		return "watchListing"
	case reflectorWatching:
		return "watching"
	case reflectorBackingOff:
		return "backingOff"
	case reflectorStopped:
		return "stopped"
	}
	return fmt.Sprintf("reflectorState(%d)", uint8(s))
}

// stepOutcome is how the work of one state ended.
type stepOutcome uint8

const (
	// outcomeSynced: the store holds a full, fresh state; watch next.
	outcomeSynced stepOutcome = iota
	// outcomeFallBackToList: a streaming list is not possible now; list
	// instead.
	outcomeFallBackToList
	// outcomeRetryNow: do the same again at once; the step made progress
	// or changed what it will ask for (a watch closed normally, a streaming
	// list switched to the newest state).
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

// reflectorMachine is the Reflector's position in its state machine.
type reflectorMachine struct {
	state reflectorState
	// resume is, while backingOff, the state to go back to.
	resume reflectorState
	// entry is the state a cycle starts in: watchListing when streaming
	// lists are used, else listing.
	entry reflectorState
	// singleCycle stops the machine at the end of the first cycle
	// (ListAndWatch) instead of backing off into the next (Run).
	singleCycle bool
}

// newReflectorMachine returns a machine at the start of a cycle.
func newReflectorMachine(useWatchList, singleCycle bool) reflectorMachine {
	entry := reflectorListing
	if useWatchList {
		entry = reflectorWatchListing
	}
	return reflectorMachine{state: entry, entry: entry, singleCycle: singleCycle}
}

// next is the transition function: the machine after the current state's
// work ended with o. It is total: an outcome a state cannot produce stops
// the machine.
func (m reflectorMachine) next(o stepOutcome) reflectorMachine {
	to := func(s reflectorState) reflectorMachine {
		m.state, m.resume = s, 0
		return m
	}
	backOffThen := func(s reflectorState) reflectorMachine {
		m.state, m.resume = reflectorBackingOff, s
		return m
	}
	if o == outcomeCanceled || m.state == reflectorStopped {
		return to(reflectorStopped)
	}
	if o == outcomeCycleDone || o == outcomeRelistNow {
		switch {
		case m.singleCycle:
			return to(reflectorStopped)
		case o == outcomeRelistNow:
			return to(m.entry)
		}
		return backOffThen(m.entry)
	}
	switch m.state {
	case reflectorListing, reflectorWatchListing, reflectorWatching:
		switch {
		case o == outcomeSynced && m.state != reflectorWatching:
			return to(reflectorWatching)
		case o == outcomeFallBackToList && m.state == reflectorWatchListing:
			return to(reflectorListing)
		case o == outcomeRetryNow:
			return to(m.state)
		case o == outcomeRetryLater:
			return backOffThen(m.state)
		}
	case reflectorBackingOff:
		if o == outcomeWaited {
			return to(m.resume)
		}
	}
	return to(reflectorStopped)
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
