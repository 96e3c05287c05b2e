package framework

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/clock"
)

// ListerWatcher has the method set of cache.ListerWatcher. It is declared
// here because this package must not import the cache package, whose own
// tests use this one.
type ListerWatcher interface {
	List(options metav1.ListOptions) (runtime.Object, error)
	Watch(options metav1.ListOptions) (watch.Interface, error)
}

// ListerWatcherWithContext has the method set of
// cache.ListerWatcherWithContext; see ListerWatcher for why it is declared
// here.
type ListerWatcherWithContext interface {
	ListWithContext(ctx context.Context, options metav1.ListOptions) (runtime.Object, error)
	WatchWithContext(ctx context.Context, options metav1.ListOptions) (watch.Interface, error)
}

// FaultyListerWatcher wraps a ListerWatcher and injects the failures a real
// API server and the network between produce, at random, with the
// probabilities of its FaultConfig: expired resource versions (410) on
// list, continue and watch, internal errors (500), timeouts, watch streams
// that close at once or break mid-stream, ERROR events carrying a
// metav1.Status, extra bookmarks and delayed events.
//
// It never tells a lie a server would not: events that do get through are
// the wrapped source's, each once and in order; an event is only ever lost
// together with the rest of its stream, which the consumer must then
// reopen from the last resource version it saw. Injected bookmarks carry
// the resource version of the event just delivered and are only sent once
// a stream is past its synthetic ADDED events, on watches that asked for
// bookmarks.
//
// Every injected fault is counted (Stats). It is safe for concurrent use;
// the random source is shared, so with concurrent callers a seed fixes the
// mix of faults but not which call gets which.
type FaultyListerWatcher struct {
	// randMu guards rng, which is not safe for concurrent use.
	randMu sync.Mutex
	rng    *rand.Rand

	// The fields below are set at construction and never change.

	cfg   FaultConfig
	list  func(ctx context.Context, options metav1.ListOptions) (runtime.Object, error)
	watch func(ctx context.Context, options metav1.ListOptions) (watch.Interface, error)
	// probe is the wrapped value, asked whether it serves streaming lists.
	probe any

	// The fields below are atomic.

	// disabled turns injection off; see SetEnabled.
	disabled               atomic.Bool
	lists, watches, events atomic.Int64
	injected               [NumFaultKinds]atomic.Int64
}

// NewFaultyListerWatcher wraps lw. When lw also implements
// ListerWatcherWithContext, its context-aware methods are used. It panics if
// cfg is invalid (see FaultConfig.Validate).
func NewFaultyListerWatcher(lw ListerWatcher, cfg FaultConfig) *FaultyListerWatcher {
	if lwc, ok := lw.(ListerWatcherWithContext); ok {
		return newFaulty(lwc.ListWithContext, lwc.WatchWithContext, lw, cfg)
	}
	list := func(_ context.Context, o metav1.ListOptions) (runtime.Object, error) { return lw.List(o) }
	watch := func(_ context.Context, o metav1.ListOptions) (watch.Interface, error) { return lw.Watch(o) }
	return newFaulty(list, watch, lw, cfg)
}

// NewFaultyListerWatcherWithContext wraps lw, a context-aware
// ListerWatcher. It panics if cfg is invalid (see FaultConfig.Validate).
func NewFaultyListerWatcherWithContext(lw ListerWatcherWithContext, cfg FaultConfig) *FaultyListerWatcher {
	return newFaulty(lw.ListWithContext, lw.WatchWithContext, lw, cfg)
}

func newFaulty(
	list func(context.Context, metav1.ListOptions) (runtime.Object, error),
	watch func(context.Context, metav1.ListOptions) (watch.Interface, error),
	probe any, cfg FaultConfig,
) *FaultyListerWatcher {
	if err := cfg.Validate(); err != nil {
		panic(fmt.Sprintf("framework.NewFaultyListerWatcher: %v", err))
	}
	rng := cfg.Rand
	if rng == nil {
		rng = rand.New(rand.NewPCG(1, 1))
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return &FaultyListerWatcher{cfg: cfg, list: list, watch: watch, probe: probe, rng: rng}
}

// SetEnabled turns fault injection on (the initial state) or off. While it
// is off, calls and open streams pass everything through untouched; a test
// turns it off to let its consumers settle before comparing.
func (f *FaultyListerWatcher) SetEnabled(enabled bool) { f.disabled.Store(!enabled) }

// Stats returns how many calls and events went through and how many faults
// of each kind were injected so far.
func (f *FaultyListerWatcher) Stats() FaultStats {
	s := FaultStats{Lists: f.lists.Load(), Watches: f.watches.Load(), Events: f.events.Load()}
	for k := range s.Injected {
		s.Injected[k] = f.injected[k].Load()
	}
	return s
}

// IsWatchListSemanticsUnSupported passes on the wrapped source's answer to
// the cache package's streaming-list capability probe; a source that does
// not answer is taken to support streaming lists.
func (f *FaultyListerWatcher) IsWatchListSemanticsUnSupported() bool {
	p, ok := f.probe.(interface{ IsWatchListSemanticsUnSupported() bool })
	return ok && p.IsWatchListSemanticsUnSupported()
}

// List is ListWithContext without a context.
func (f *FaultyListerWatcher) List(options metav1.ListOptions) (runtime.Object, error) {
	return f.ListWithContext(context.Background(), options)
}

// Watch is WatchWithContext without a context.
func (f *FaultyListerWatcher) Watch(options metav1.ListOptions) (watch.Interface, error) {
	return f.WatchWithContext(context.Background(), options)
}

// ListWithContext lists through the wrapped source unless a fault is
// injected instead: a 410 (on a first page, or on a page asked for with a
// continue token), a 500 or a timeout. A list that gets through takes
// FaultConfig.ListDelay.
func (f *FaultyListerWatcher) ListWithContext(ctx context.Context, options metav1.ListOptions) (runtime.Object, error) {
	f.lists.Add(1)
	gone := FaultListGone
	if options.Continue != "" {
		gone = FaultContinueGone
	}
	if err := f.callFault(gone, FaultListInternalError, FaultListTimeout, "list"); err != nil {
		return nil, err
	}
	list, err := f.list(ctx, options)
	if err != nil {
		return nil, err
	}
	if err := f.listDelay(ctx); err != nil {
		return nil, err
	}
	return list, nil
}

// listDelay waits FaultConfig.ListDelay on the clock while injection is
// enabled, or until ctx ends.
func (f *FaultyListerWatcher) listDelay(ctx context.Context) error {
	if f.cfg.ListDelay <= 0 || f.disabled.Load() {
		return nil
	}
	t := f.cfg.Clock.NewTimer(f.cfg.ListDelay)
	defer t.Stop()
	select {
	case <-t.C():
		return nil
	case <-ctx.Done():
		return fmt.Errorf("list delayed by the fault injector: %w", ctx.Err())
	}
}

// WatchWithContext opens a watch on the wrapped source unless a fault is
// injected instead (a 410, a 500 or a timeout), and returns a stream that
// may itself close early, break, carry an ERROR event, extra bookmarks or
// delayed events.
func (f *FaultyListerWatcher) WatchWithContext(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
	f.watches.Add(1)
	if err := f.callFault(FaultWatchGone, FaultWatchInternalError, FaultWatchTimeout, "watch"); err != nil {
		return nil, err
	}
	w, err := f.watch(ctx, options)
	if err != nil || w == nil {
		return w, err
	}
	return newFaultyWatch(f, w, options), nil
}

// callFault decides whether a call fails, and how.
func (f *FaultyListerWatcher) callFault(gone, internal, timeout FaultKind, verb string) error {
	switch {
	case f.inject(gone):
		return faultError(gone, verb)
	case f.inject(internal):
		return faultError(internal, verb)
	case f.inject(timeout):
		if f.chance(0.5) {
			return fmt.Errorf("injected fault: %s timed out: %w", verb, context.DeadlineExceeded)
		}
		return faultError(timeout, verb)
	}
	return nil
}

// inject draws whether a fault of kind k happens now, and counts it if so.
func (f *FaultyListerWatcher) inject(k FaultKind) bool {
	if f.disabled.Load() || !f.chance(f.cfg.probability(k)) {
		return false
	}
	f.injected[k].Add(1)
	return true
}

// chance returns true with probability p.
func (f *FaultyListerWatcher) chance(p float64) bool {
	if p <= 0 {
		return false
	}
	f.randMu.Lock()
	defer f.randMu.Unlock()
	return f.rng.Float64() < p
}

// intN returns a random number in [0, n).
func (f *FaultyListerWatcher) intN(n int64) int64 {
	f.randMu.Lock()
	defer f.randMu.Unlock()
	return f.rng.Int64N(n)
}

// FaultKind names one kind of fault a FaultyListerWatcher injects.
type FaultKind int

// The kinds of fault, with what the consumer sees.
const (
	// FaultListGone: a List without a continue token fails with 410
	// (apierrors.NewResourceExpired).
	FaultListGone FaultKind = iota
	// FaultContinueGone: a List with a continue token fails with 410, as
	// when the snapshot behind the token was compacted.
	FaultContinueGone
	// FaultListInternalError: a List fails with 500
	// (apierrors.NewInternalError).
	FaultListInternalError
	// FaultListTimeout: a List fails with apierrors.NewTimeoutError or with
	// an error wrapping context.DeadlineExceeded, at random.
	FaultListTimeout
	// FaultWatchGone: a Watch fails with 410.
	FaultWatchGone
	// FaultWatchInternalError: a Watch fails with 500.
	FaultWatchInternalError
	// FaultWatchTimeout: a Watch fails with a timeout, as for List.
	FaultWatchTimeout
	// FaultStreamClosed: a watch stream closes before its first event,
	// without an error.
	FaultStreamClosed
	// FaultStreamDropped: a watch stream closes mid-stream without an
	// error, as when a connection breaks; the event that was due is lost
	// with the rest of the stream.
	FaultStreamDropped
	// FaultErrorEvent: instead of the next event, the stream carries an
	// ERROR event whose object is a *metav1.Status (410 or 500, at random),
	// then closes.
	FaultErrorEvent
	// FaultBookmark: a BOOKMARK event at the resource version of the event
	// just delivered is inserted after it.
	FaultBookmark
	// FaultDelay: an event is held back for up to FaultConfig.MaxDelay.
	// Later events wait behind it: order is kept.
	FaultDelay

	// NumFaultKinds is the number of fault kinds.
	NumFaultKinds
)

var faultKindNames = [NumFaultKinds]string{
	"listGone", "continueGone", "listInternalError", "listTimeout",
	"watchGone", "watchInternalError", "watchTimeout",
	"streamClosed", "streamDropped", "errorEvent", "bookmark", "delay",
}

// String returns the kind's name, as printed by FaultStats.
func (k FaultKind) String() string {
	if k < 0 || k >= NumFaultKinds {
		return fmt.Sprintf("FaultKind(%d)", int(k))
	}
	return faultKindNames[k]
}

// FaultStats is a snapshot of what went through a FaultyListerWatcher.
type FaultStats struct {
	// Lists counts List calls, one per page, failed ones included.
	Lists int64
	// Watches counts Watch calls, failed ones included.
	Watches int64
	// Events counts the wrapped source's events delivered to consumers.
	Events int64
	// Injected counts the faults injected, by kind.
	Injected [NumFaultKinds]int64
}

// Total returns the number of faults injected, of all kinds.
func (s FaultStats) Total() int64 {
	var n int64
	for _, c := range s.Injected {
		n += c
	}
	return n
}

// String renders the counts on one line, e.g. for t.Logf.
func (s FaultStats) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "lists=%d watches=%d events=%d faults=%d", s.Lists, s.Watches, s.Events, s.Total())
	for k, n := range s.Injected {
		fmt.Fprintf(&b, " %s=%d", FaultKind(k), n)
	}
	return b.String()
}
