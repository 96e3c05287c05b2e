package cache

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1beta1 "k8s.io/apimachinery/pkg/apis/meta/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// VeryShortWatchError reports a watch that the server closed less than a
// second after it opened, without sending a single event: usually a sign
// that something between the client and the server ends streams early.
type VeryShortWatchError struct {
	// Name is the name of the Reflector whose watch ended.
	Name string
}

// Error names the reflector and says what happened.
func (e *VeryShortWatchError) Error() string {
	return fmt.Sprintf("very short watch: %s: Unexpected watch close - watch lasted less than a second and no items received", e.Name)
}

// tooLargeRVText is how servers before the structured cause spelled a
// resource version from the future.
const tooLargeRVText = "Too large resource version"

// isTooLargeResourceVersionError reports a resource version newer than any
// the server has seen yet, as happens right after a server restarts.
func isTooLargeResourceVersionError(err error) bool {
	if apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge) {
		return true
	}
	if !apierrors.IsTimeout(err) {
		return false
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	s := status.Status()
	if s.Details != nil {
		for _, cause := range s.Details.Causes {
			if cause.Message == tooLargeRVText {
				return true
			}
		}
	}
	return strings.Contains(s.Message, tooLargeRVText)
}

// isRVUnavailableError reports an error that means "list again from the
// newest state": the resource version asked for is gone or not there yet.
func isRVUnavailableError(err error) bool {
	return isExpiredError(err) || isTooLargeResourceVersionError(err)
}

// isWatchErrorRetriable reports a failure to open a watch that is worth
// retrying, after a backoff, from the same resource version: the server
// refused the connection or asked us to slow down. Relisting would only add
// load.
func isWatchErrorRetriable(err error) bool {
	return utilnet.IsConnectionRefused(err) || apierrors.IsTooManyRequests(err)
}

// tableKinds are the server-side table renderings; a reflector cannot store
// them, so they are rejected rather than cached.
var tableKinds = map[schema.GroupVersionKind]bool{
	metav1.SchemeGroupVersion.WithKind("Table"):      true,
	metav1beta1.SchemeGroupVersion.WithKind("Table"): true,
}

// isUnsupportedTableObject reports an unstructured Table where an object
// was expected.
func isUnsupportedTableObject(obj runtime.Object) bool {
	u, ok := obj.(*unstructured.Unstructured)
	return ok && u.GetKind() == "Table" && tableKinds[u.GroupVersionKind()]
}

// isUnsupportedTableListObject reports an unstructured Table where a list was
// expected, and the kind that was received.
func isUnsupportedTableListObject(obj runtime.Object) (bool, schema.GroupVersionKind) {
	u, ok := obj.(*unstructured.UnstructuredList)
	if !ok {
		return false, schema.GroupVersionKind{}
	}
	gvk := u.GroupVersionKind()
	return tableKinds[gvk], gvk
}

// streamPhase says what a watch stream is being read for.
type streamPhase uint8

const (
	// phaseLive is an ordinary watch feeding the reflector's store.
	phaseLive streamPhase = iota
	// phaseInitialEvents is the opening of a streaming list: events fill a
	// temporary store until the bookmark that ends the initial state.
	phaseInitialEvents
)

// streamEnd says why reading a watch stream stopped.
type streamEnd uint8

const (
	// endClosed: the server closed the stream. The error is nil, or a
	// VeryShortWatchError when the stream delivered nothing.
	endClosed streamEnd = iota
	// endInitialEventsDone: the initial-events-end bookmark arrived. The
	// stream is still open and carries the live events that follow.
	endInitialEventsDone
	// endStopped: the reflector's context was canceled.
	endStopped
	// endFailed: an ERROR event or a failed resync ended the stream.
	endFailed
	// endNoEndBookmark: a streaming list went quiet for too long without
	// completing.
	endNoEndBookmark
	// endFakeCannotStream: a streaming list was answered by a test fake's
	// stream (see isBufferedFakeWatch) that had no initial-events-end
	// bookmark among the events it held when it was returned.
	endFakeCannotStream
)

// streamReader reads one watch stream into a store. It is used by one
// goroutine and never stops the stream: its caller owns it.
type streamReader struct {
	r     *Reflector
	ctx   context.Context
	w     watch.Interface
	sink  ReflectorStore
	phase streamPhase
	// publishRV says every event's resource version may be published at
	// once, because the watch resumed from a known version and so carries no
	// synthetic ADDED events in arbitrary order.
	publishRV bool
	// abort delivers a failed resync, which ends a live watch; nil while
	// streaming a list.
	abort <-chan error
	// relist delivers a request of the store to list again (a shared value
	// changed in the cache, internal/dedup/guard.go), which ends a live watch.
	relist <-chan struct{}
	start  time.Time
	// bufferedOnly says the stream is a test fake's that held every event
	// of the streaming list when it was returned (isBufferedFakeWatch):
	// events are read without waiting, and running out of them before the
	// initial-events-end bookmark ends the read with endFakeCannotStream.
	// Set only in phaseInitialEvents.
	bufferedOnly bool

	// pastSynthetic turns true at the first event that is not ADDED: from
	// then on the events follow resource-version order.
	pastSynthetic bool
	// lastRV is, in phaseInitialEvents, the resource version of the newest
	// event once pastSynthetic.
	lastRV string
	// events counts the events applied to the sink.
	events int
}

// run reads events until the stream ends and says why it ended. While
// streaming a list it also watches for silence: a stream that delivers no
// event for initialEventsTimeout without completing is given up.
func (s *streamReader) run() (end streamEnd, err error) {
	defer func() { s.observe(end, err) }()
	var idle clock.Timer
	var idleC <-chan time.Time
	if s.phase == phaseInitialEvents {
		idle = s.r.clock.NewTimer(s.r.initialEventsCheckEvery)
		defer idle.Stop()
		idleC = idle.C()
	}
	lastActivity := s.start
	for {
		var activity bool
		end, activity, err = s.next(idleC)
		if activity {
			if idle != nil {
				lastActivity = s.r.clock.Now()
			}
			continue
		}
		if end != endNoEndBookmark {
			return end, err
		}
		quiet := s.r.clock.Since(lastActivity)
		if quiet >= s.r.initialEventsTimeout {
			return endNoEndBookmark, fmt.Errorf("streaming list of %s: no initial-events-end bookmark and no event for %v", s.r.typeDescription, quiet)
		}
		if quiet >= s.r.initialEventsCheckEvery {
			klog.FromContext(s.ctx).Info("Warning: streaming list has not completed yet", "reflector", s.r.name, "quietFor", quiet, "sinceStart", s.r.clock.Since(s.start), "events", s.events)
		}
		idle.Reset(s.r.initialEventsCheckEvery)
	}
}

// next waits for one thing to happen on the stream. activity is true when an
// event was handled and the stream goes on; otherwise end and err say how it
// ended, endNoEndBookmark meaning only that the idle timer fired.
func (s *streamReader) next(idle <-chan time.Time) (end streamEnd, activity bool, err error) {
	if s.bufferedOnly {
		return s.nextBuffered()
	}
	select {
	case <-s.ctx.Done():
		return endStopped, false, nil
	case err := <-s.abort:
		return endFailed, false, err
	case <-s.relist:
		return endFailed, false, errRelistRequested
	case <-idle:
		return endNoEndBookmark, false, nil
	case ev, ok := <-s.w.ResultChan():
		return s.received(ev, ok)
	}
}

// nextBuffered is next for a stream that holds all it will send of a
// streaming list (bufferedOnly): it takes the next event if there is one,
// and otherwise reports endFakeCannotStream, for the initial-events-end
// bookmark can no longer come.
func (s *streamReader) nextBuffered() (end streamEnd, activity bool, err error) {
	if s.ctx.Err() != nil {
		return endStopped, false, nil
	}
	select {
	case ev, ok := <-s.w.ResultChan():
		return s.received(ev, ok)
	default:
		return endFakeCannotStream, false, nil
	}
}

// received handles what a receive from the stream gave: an event, or
// (ok false) the stream's end.
func (s *streamReader) received(ev watch.Event, ok bool) (end streamEnd, activity bool, err error) {
	if !ok {
		return endClosed, false, s.closedError()
	}
	done, err := s.handle(ev)
	switch {
	case err != nil:
		return endFailed, false, err
	case done:
		return endInitialEventsDone, false, nil
	}
	return 0, true, nil
}

// errRelistRequested ends a live watch whose store asked for a relist.
var errRelistRequested = errors.New("the store asked for a relist")

// closedError is the error of a stream the server closed.
func (s *streamReader) closedError() error {
	if s.events == 0 && s.r.clock.Since(s.start) < time.Second {
		s.r.metrics.shortWatches.Inc()
		return &VeryShortWatchError{Name: s.r.name}
	}
	return nil
}

// observe records the stream's metrics and logs its end as client-go does:
// the end of a streaming list's initial events, or a stream the server
// closed after delivering something (or lasting a second); a stream that
// failed or was stopped is not logged here.
func (s *streamReader) observe(end streamEnd, err error) {
	d := s.r.clock.Since(s.start)
	s.r.metrics.watchDuration.Observe(d.Seconds())
	s.r.metrics.itemsInWatch.Observe(float64(s.events))
	logger := klog.FromContext(s.ctx).V(4)
	switch {
	case end == endInitialEventsDone:
		logger.Info("Exiting watch because received the bookmark that marks the end of initial events stream", "reflector", s.r.name, "totalItems", s.events, "duration", d)
	case end == endClosed && err == nil:
		logger.Info("Watch close", "reflector", s.r.name, "type", s.r.typeDescription, "totalItems", s.events)
	}
}

// handle applies one event. done reports the initial-events-end bookmark of
// a streaming list; err reports an ERROR event. Events of the wrong type, or
// without object metadata, are reported and skipped. A nil pointer of the
// expected type panics when its resource version is read, as in client-go;
// the panic reaches the cycle's utilruntime.HandleCrashWithContext.
func (s *streamReader) handle(ev watch.Event) (done bool, err error) {
	if ev.Type == watch.Error {
		// As in client-go: an ERROR event without a Status is an
		// UnexpectedObjectError, and a nil *metav1.Status panics.
		return false, apierrors.FromObject(ev.Object)
	}
	if !s.r.admits(s.ctx, ev.Object) {
		return false, nil
	}
	m, err := meta.Accessor(ev.Object)
	if err != nil {
		utilruntime.HandleErrorWithContext(s.ctx, err, "Unable to understand watch event", "reflector", s.r.name, "event", ev)
		return false, nil
	}
	rv := m.GetResourceVersion()
	switch ev.Type {
	case watch.Added:
	case watch.Modified, watch.Deleted:
		s.pastSynthetic = true
	case watch.Bookmark:
		s.pastSynthetic = true
		done = s.phase == phaseInitialEvents && m.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true"
	default:
		utilruntime.HandleErrorWithContext(s.ctx, nil, "Unknown watch event", "reflector", s.r.name, "event", ev)
	}
	if err := applyEvent(s.sink, ev.Type, ev.Object, rv); err != nil {
		utilruntime.HandleErrorWithContext(s.ctx, err, applyFailureMessage(ev.Type), "reflector", s.r.name, "object", ev.Object)
	}
	s.noteResourceVersion(rv)
	s.events++
	return done, nil
}

// noteResourceVersion moves the resource version forward after an event.
func (s *streamReader) noteResourceVersion(rv string) {
	if s.phase == phaseInitialEvents {
		if s.pastSynthetic {
			s.lastRV = rv
		}
		return
	}
	if s.publishRV || s.pastSynthetic {
		s.r.publishResourceVersion(rv)
	}
}

// applyEvent hands one event to the store. A panicking store (a transform
// or key function, say) is not recovered, as in client-go.
func applyEvent(sink ReflectorStore, t watch.EventType, obj runtime.Object, rv string) (err error) {
	switch t {
	case watch.Added:
		return sink.Add(obj)
	case watch.Modified:
		return sink.Update(obj)
	case watch.Deleted:
		return sink.Delete(obj)
	case watch.Bookmark:
		if b, ok := sink.(ReflectorBookmarkStore); ok {
			return b.Bookmark(rv)
		}
	}
	return nil
}

// applyFailureMessage is client-go's log message for a store that refused
// an event of type t.
func applyFailureMessage(t watch.EventType) string {
	switch t {
	case watch.Added:
		return "Unable to add watch event object to store"
	case watch.Modified:
		return "Unable to update watch event object to store"
	case watch.Deleted:
		return "Unable to delete watch event object from store"
	default:
		return "Unable to send bookmark event to store"
	}
}

// admits reports whether obj is of the type the reflector was built for;
// anything else is reported and must be skipped.
func (r *Reflector) admits(ctx context.Context, obj runtime.Object) bool {
	if r.expectedType != nil {
		if got := reflect.TypeOf(obj); got != r.expectedType {
			utilruntime.HandleErrorWithContext(ctx, nil, "Unexpected watch event object type", "reflector", r.name, "expectedType", r.expectedType, "actualType", got)
			return false
		}
	}
	if r.expectedGVK != nil {
		if got := obj.GetObjectKind().GroupVersionKind(); got != *r.expectedGVK {
			utilruntime.HandleErrorWithContext(ctx, nil, "Unexpected watch event object gvk", "reflector", r.name, "expectedGVK", *r.expectedGVK, "actualGVK", got)
			return false
		}
	}
	if isUnsupportedTableObject(obj) {
		utilruntime.HandleErrorWithContext(ctx, nil, "Unsupported watch event object gvk", "reflector", r.name, "actualGVK", obj.GetObjectKind().GroupVersionKind())
		return false
	}
	return true
}

// watchOptions are the options of a live watch resuming at rv.
func (r *Reflector) watchOptions(rv string) metav1.ListOptions {
	timeout := r.watchTimeoutSeconds()
	return metav1.ListOptions{
		ResourceVersion:     rv,
		TimeoutSeconds:      &timeout,
		AllowWatchBookmarks: true,
	}
}

// openWatch starts a watch. A panicking ListerWatcher is not recovered, as
// in client-go.
func (r *Reflector) openWatch(ctx context.Context, opts metav1.ListOptions) (w watch.Interface, err error) {
	r.metrics.watches.Inc()
	w, err = r.listerWatcher.WatchWithContext(ctx, opts)
	if err == nil && w == nil {
		err = fmt.Errorf("watch of %s returned neither a stream nor an error", r.typeDescription)
	}
	return w, err
}

// stepWatch is the watching state: watch from the last resource version (or
// go on with the stream a streaming list left open) until the stream ends,
// then decide, as the reference does, between watching again, backing off
// and ending the cycle so that the next one relists.
func (r *Reflector) stepWatch(ctx context.Context, c *listWatchCycle) stepResult {
	logger := klog.FromContext(ctx)
	start := r.clock.Now()
	w := c.takeStream()
	publishRV := true
	if w == nil {
		opts := r.watchOptions(r.LastSyncResourceVersion())
		// Watching from "" or "0" starts with synthetic ADDED events in no
		// particular order: their versions are not a resume point.
		publishRV = opts.ResourceVersion != "" && opts.ResourceVersion != "0"
		var err error
		if w, err = r.openWatch(ctx, opts); err != nil {
			if isShardMoved(err) {
				return stepResult{outcome: outcomeRelistNow, reason: "shard moved since the list"}
			}
			if isWatchErrorRetriable(err) {
				logger.V(4).Info("Watch failed - backing off", "reflector", r.name, "type", r.typeDescription, "err", err)
				return stepResult{outcome: outcomeRetryLater, reason: "watch refused"}
			}
			return stepResult{outcome: outcomeCycleDone, err: err, reason: "watch failed to start"}
		}
	}
	defer w.Stop()
	reader := streamReader{r: r, ctx: ctx, w: w, sink: r.store, phase: phaseLive, publishRV: publishRV, abort: c.resyncErrs, start: start}
	if rr, ok := r.store.(relistRequester); ok {
		reader.relist = rr.relistRequests()
	}
	end, err := reader.run()
	c.internalErrors.After(err)
	switch {
	case end == endStopped:
		return stepResult{outcome: outcomeCanceled}
	case err == nil:
		return stepResult{outcome: outcomeRetryNow, reason: "watch closed"}
	case isShardMoved(err):
		logger.V(4).Info("Watch closed: the shard moved", "reflector", r.name, "type", r.typeDescription)
		return stepResult{outcome: outcomeRelistNow, reason: "shard moved"}
	case errors.Is(err, errRelistRequested):
		logger.V(2).Info("Watch closed to list again: a shared value changed in the cache", "reflector", r.name, "type", r.typeDescription)
		return stepResult{outcome: outcomeRelistNow, reason: "shared value changed"}
	case isExpiredError(err):
		logger.V(4).Info("Watch closed", "reflector", r.name, "type", r.typeDescription, "err", err)
		return stepResult{outcome: outcomeCycleDone, reason: "resource version expired"}
	case apierrors.IsTooManyRequests(err):
		logger.V(2).Info("Watch returned 429 - backing off", "reflector", r.name, "type", r.typeDescription)
		return stepResult{outcome: outcomeRetryLater, reason: "throttled"}
	case apierrors.IsInternalError(err) && c.internalErrors.ShouldRetry():
		// As client-go: reopened at once while the budget lasts.
		logger.V(2).Info("Retrying watch after internal error", "reflector", r.name, "type", r.typeDescription, "err", err)
		return stepResult{outcome: outcomeRetryNow, reason: "internal error"}
	default:
		logger.Info("Warning: watch ended with error", "reflector", r.name, "type", r.typeDescription, "err", err)
		return stepResult{outcome: outcomeCycleDone, reason: "watch error"}
	}
}

// ensureResyncLoop starts the cycle's resync loop if the Reflector has a
// resync period and none runs yet. The loop lives until the cycle finishes.
func (r *Reflector) ensureResyncLoop(ctx context.Context, c *listWatchCycle) {
	if r.resyncPeriod == 0 || c.stopResync != nil {
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.resyncLoop(ctx, c.resyncErrs)
	}()
	c.stopResync = func() {
		cancel()
		<-done
	}
}

// resyncLoop calls the store's Resync every resync period that ShouldResync
// agrees to, until ctx is canceled or a resync fails; the failure goes to
// errs, which ends the watch.
func (r *Reflector) resyncLoop(ctx context.Context, errs chan<- error) {
	logger := klog.FromContext(ctx)
	t := r.clock.NewTimer(r.resyncPeriod)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		if err := r.resyncIfWanted(logger); err != nil {
			errs <- err
			return
		}
		t.Reset(r.resyncPeriod)
	}
}

// resyncIfWanted asks ShouldResync and resyncs the store. A panic in either
// is not recovered: it ends the process, as client-go's resync goroutine
// does, whatever utilruntime.ReallyCrash says.
func (r *Reflector) resyncIfWanted(logger klog.Logger) error {
	if r.ShouldResync != nil && !r.ShouldResync() {
		return nil
	}
	logger.V(4).Info("Forcing resync", "reflector", r.name)
	if err := r.store.Resync(); err != nil {
		return err
	}
	return nil
}
