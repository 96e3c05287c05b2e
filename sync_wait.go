package cache

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/klog/v2"
)

// DoneChecker watches an activity that finishes once, such as an initial
// sync.
type DoneChecker interface {
	// Name describes what is waited for; it may be computed, so keep it off
	// hot paths.
	Name() string
	// Done returns a channel that is closed when the activity finished.
	Done() <-chan struct{}
}

// IsDone reports, without blocking, whether checker's activity finished.
func IsDone(checker DoneChecker) bool {
	select {
	case <-checker.Done():
		return true
	default:
		return false
	}
}

// isClosed reports, without blocking, whether ch is closed (or has a value
// ready, which a Done channel never has).
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// InformerSynced reports whether a cache has been filled with its initial
// state. Once it returned true it keeps returning true. A shared informer's
// HasSynced, and a handler registration's, are InformerSynced functions.
type InformerSynced func() bool

// syncedPollPeriod is how often WaitForCacheSync asks its InformerSynced
// functions again.
const syncedPollPeriod = 100 * time.Millisecond

// WaitForCacheSync blocks until every cacheSyncs function reports true, and
// then returns true, or until stopCh is closed, and then returns false. The
// functions are asked at once and then every 100ms, in order, stopping at
// the first that is not synced yet; nil entries are skipped. If all are
// synced at the first try, the result is true even with stopCh closed.
//
// WaitForNamedCacheSync adds logging; WaitFor waits without polling.
func WaitForCacheSync(stopCh <-chan struct{}, cacheSyncs ...InformerSynced) bool {
	return pollUntilSynced(stopCh, syncedPollPeriod, cacheSyncs)
}

// WaitForNamedCacheSync is WaitForCacheSync that logs, with
// klog.Background(), that controllerName waits for its caches and how that
// ended; each line carries the key "controller" with controllerName, and so
// does the report of a failure to utilruntime's error handlers. As in
// client-go, the lines are attributed to this package's source, not to the
// caller (only WaitFor names its caller). Code with a context should use
// WaitForNamedCacheSyncWithContext.
func WaitForNamedCacheSync(controllerName string, stopCh <-chan struct{}, cacheSyncs ...InformerSynced) bool {
	// "controller" is client-go's log key, a word and no reference to the
	// controller layer above, which this file does not name.
	return waitForCacheSyncLogged(context.Background(), stopCh, cacheSyncs, "controller", controllerName)
}

// WaitForNamedCacheSyncWithContext is WaitForCacheSync, stopped by ctx, that
// logs at V(0) with klog.FromContext(ctx) that it waits and how that ended;
// the logger's name and values tell who waits. To log less, store a logger
// with a higher verbosity in ctx, e.g.
// klog.NewContext(ctx, klog.FromContext(ctx).V(4)).
func WaitForNamedCacheSyncWithContext(ctx context.Context, cacheSyncs ...InformerSynced) bool {
	return waitForCacheSyncLogged(ctx, ctx.Done(), cacheSyncs)
}

// waitForCacheSyncLogged is the logging wait shared by the named forms;
// ctx provides the logger, stopCh ends the wait, and keysAndValues go with
// every line.
func waitForCacheSyncLogged(ctx context.Context, stopCh <-chan struct{}, cacheSyncs []InformerSynced, keysAndValues ...interface{}) bool {
	logger := klog.FromContext(ctx)
	logger.Info("Waiting for caches to sync", keysAndValues...)
	if !pollUntilSynced(stopCh, syncedPollPeriod, cacheSyncs) {
		// Reported through apimachinery's error handlers, so that programs
		// which hook those see it like any other unhandled error.
		utilruntime.HandleErrorWithContext(ctx, nil, "Unable to sync caches", keysAndValues...)
		return false
	}
	logger.Info("Caches are synced", keysAndValues...)
	return true
}

// pollUntilSynced asks cacheSyncs at once and then every period until all
// are synced (true) or stopCh is closed (false). A tick that races with
// stopCh loses: no function is asked once stopCh is seen closed.
func pollUntilSynced(stopCh <-chan struct{}, period time.Duration, cacheSyncs []InformerSynced) bool {
	if allSynced(cacheSyncs) {
		return true
	}
	ticker := time.NewTicker(period)
	defer ticker.Stop()
	for {
		select {
		case <-stopCh:
			return false
		case <-ticker.C:
		}
		select {
		case <-stopCh:
			return false
		default:
		}
		if allSynced(cacheSyncs) {
			return true
		}
	}
}

// allSynced asks each non-nil function in order and stops at the first that
// is not synced. As client-go's poll does around its condition, it runs
// under utilruntime.HandleCrash: a panicking function is logged ("Observed a
// panic") and, with utilruntime.ReallyCrash (the default), panics on in the
// waiting goroutine; with ReallyCrash false that round counts as not
// synced.
func allSynced(cacheSyncs []InformerSynced) (synced bool) {
	defer utilruntime.HandleCrash()
	for _, synced := range cacheSyncs {
		if synced != nil && !synced() {
			return false
		}
	}
	return true
}

// WaitFor blocks until every checker is done, then returns true, or until
// ctx ends, then returns false unless every checker turned out to be done
// by then. It does not poll: it wakes up as each checker's Done channel
// closes, so under testing/synctest it finishes without moving the fake
// clock. Nil checkers count as done. WaitFor starts no goroutine.
//
// When what is not empty, WaitFor logs with klog.FromContext(ctx) at V(0),
// every line attributed to its caller: "Waiting" when it starts, "Done
// waiting" with the checker's Name as each finishes, and, if ctx ended
// first, "Timed out waiting" with context.Cause(ctx) and the sorted names of
// the checkers that were not done. To log less, store a logger with a higher
// verbosity in ctx.
func WaitFor(ctx context.Context, what string, checkers ...DoneChecker) bool {
	// Attribution: the logger skips one more frame (call-depth sinks) and
	// WaitFor marks itself as a helper (stack-helper sinks such as
	// ktesting's). Both name the caller only for calls made from WaitFor's
	// own body, so every log call below must stay here, not in a closure or
	// another function.
	logger := klog.FromContext(ctx)
	if what != "" {
		var markHelper func()
		markHelper, logger = logger.WithCallStackHelper()
		markHelper()
		logger.Info("Waiting", "for", what)
	}
	pending := newPendingCheckers(checkers)
	for {
		finished, ok := pending.next(ctx.Done())
		if !ok {
			break
		}
		if what != "" {
			logger.Info("Done waiting", "for", what, "instance", finished.Name())
		}
	}
	if pending.len() == 0 {
		return true
	}
	if what != "" {
		logger.Info("Timed out waiting", "for", what, "cause", context.Cause(ctx), "instances", pending.sortedNames())
	}
	return false
}

// pendingCheckers is the set of checkers WaitFor still waits for, with
// their Done channels fetched once. It is used by one goroutine.
type pendingCheckers struct {
	checkers []DoneChecker
	// dones[i] is checkers[i].Done().
	dones []<-chan struct{}
}

func newPendingCheckers(checkers []DoneChecker) *pendingCheckers {
	p := &pendingCheckers{
		checkers: make([]DoneChecker, 0, len(checkers)),
		dones:    make([]<-chan struct{}, 0, len(checkers)),
	}
	for _, checker := range checkers {
		if checker == nil {
			continue
		}
		p.checkers = append(p.checkers, checker)
		p.dones = append(p.dones, checker.Done())
	}
	return p
}

func (p *pendingCheckers) len() int {
	return len(p.checkers)
}

// next removes and returns a checker that is done. While stop is open it
// blocks until one is; once stop is closed it only looks, without
// blocking, so that checkers that finished at the same moment as stop
// still count as done. It returns false when nothing is pending or stop is
// closed and every pending checker is still running.
func (p *pendingCheckers) next(stop <-chan struct{}) (DoneChecker, bool) {
	if len(p.checkers) == 0 {
		return nil, false
	}
	if !isClosed(stop) {
		// The number of checkers is not known at compile time, hence
		// reflect.Select.
		cases := make([]reflect.SelectCase, 0, len(p.dones)+1)
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(stop)})
		for _, done := range p.dones {
			cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(done)})
		}
		if chosen, _, _ := reflect.Select(cases); chosen > 0 {
			return p.remove(chosen - 1), true
		}
	}
	// stop is closed. When stop and a Done channel were ready together,
	// Select chose at random: look at every checker once more.
	for i, done := range p.dones {
		if isClosed(done) {
			return p.remove(i), true
		}
	}
	return nil, false
}

// remove drops the i-th checker and returns it.
func (p *pendingCheckers) remove(i int) DoneChecker {
	checker := p.checkers[i]
	p.checkers = slices.Delete(p.checkers, i, i+1)
	p.dones = slices.Delete(p.dones, i, i+1)
	return checker
}

func (p *pendingCheckers) sortedNames() []string {
	names := make([]string, len(p.checkers))
	for i, checker := range p.checkers {
		names[i] = checker.Name()
	}
	slices.Sort(names)
	return names
}

// SyncResult summarizes how waiting for a set of informers' caches ended,
// as informer factories report it. Err is nil when every cache synced;
// otherwise it is why the wait stopped (the context's cause). Synced tells,
// per informer object type, whether that informer synced.
//
// An informer being synced says nothing about its event handlers: code that
// needs its handlers to have seen the initial state waits for each
// registration's HasSyncedChecker as well.
type SyncResult struct {
	Err error

	Synced map[reflect.Type]bool
}

// AsError returns nil when every cache synced. Otherwise it returns an error
// naming the unsynced types in sorted order and wrapping Err, so that
// errors.Is(err, context.DeadlineExceeded) and the like work.
func (c SyncResult) AsError() error {
	if c.Err == nil {
		return nil
	}
	return unsyncedError(c.Err, c.Synced, reflect.Type.String)
}

// unsyncedError is the error of a wait for informers that ended with
// cause: it names, sorted, the keys of synced whose informer did not sync
// and wraps cause. client-go v0.38's GVRSyncResult (in the overlay) uses it
// too.
func unsyncedError[K comparable](cause error, synced map[K]bool, name func(K) string) error {
	var unsynced []string
	for key, ok := range synced {
		if !ok {
			unsynced = append(unsynced, name(key))
		}
	}
	slices.Sort(unsynced)
	return fmt.Errorf("failed to sync all caches: %s: %w", strings.Join(unsynced, ", "), cause)
}
