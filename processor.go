package cache

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// ResourceEventHandlerRegistration is the handle of one registered handler.
type ResourceEventHandlerRegistration interface {
	// HasSynced reports whether the informer synced and this handler has
	// processed every object of its initial list.
	HasSynced() bool

	// HasSyncedChecker returns a DoneChecker for HasSynced.
	HasSyncedChecker() DoneChecker
}

// ListenerMetricsProvider is an optional extension of
// InformerMetricsProvider: a provider that also implements it receives,
// per registered handler, a gauge of the notifications waiting for the
// handler and a counter of notifications merged into earlier ones.
type ListenerMetricsProvider interface {
	// NewListenerBacklogMetric returns the gauge of pending notifications.
	NewListenerBacklogMetric(id InformerNameAndResource, handlerName string) GaugeMetric
	// NewListenerMergedMetric returns the counter of merged notifications.
	NewListenerMergedMetric(id InformerNameAndResource, handlerName string) CounterMetric
}

// listenerBatchSize bounds how many notifications a listener takes from
// its backlog per lock acquisition.
const listenerBatchSize = 64

// listenerPanicPause is how long a listener waits, once it holds the next
// notification, before calling a handler whose previous call panicked (a
// panic it survived because utilruntime.ReallyCrash is false). client-go's
// listener sleeps the same second, so a handler that panics on every
// notification costs one call a second instead of a busy core. The pause
// is measured on the real clock, as client-go's sleep is, whatever clock
// the informer was given.
const listenerPanicPause = time.Second

// processorListener delivers notifications to one handler, in order, on
// its own goroutine. Adding never blocks: notifications wait in a backlog
// that merges per object only once the handler stalled, or past the limit
// a program set (listener_backlog.go). It is the registration handle
// returned by AddEventHandler.
//
// Lock order: sharedProcessor.mu, then processorListener.mu. No lock is
// held while the handler runs.
type processorListener struct {
	// mu guards pending, stall and stopped.
	mu      sync.Mutex
	pending backlog
	stall   stallRule
	stopped bool

	// returned counts handler calls that returned; only run writes it.
	returned atomic.Uint64

	// halted mirrors stopped for the delivery loop, which checks it
	// between notifications without taking mu.
	halted atomic.Bool
	// wake has room for one signal: "look at pending again".
	wake chan struct{}
	// quit is closed by stop.
	quit chan struct{}
	// finished is closed when the listener will deliver nothing more.
	finished  chan struct{}
	closeOnce sync.Once

	handler ResourceEventHandler
	name    string
	logger  klog.Logger
	tracker *handlerSyncTracker

	backlogGauge  GaugeMetric
	mergedCounter CounterMetric

	// resyncMu guards requestedResync, resyncPeriod and nextResync.
	resyncMu        sync.Mutex
	requestedResync time.Duration
	resyncPeriod    time.Duration
	nextResync      time.Time
}

var _ ResourceEventHandlerRegistration = (*processorListener)(nil)

// listenerConfig is what a listener is made of.
type listenerConfig struct {
	logger          klog.Logger
	handler         ResourceEventHandler
	requestedResync time.Duration
	resyncPeriod    time.Duration
	now             time.Time
	upstreamName    string
	id              InformerNameAndResource
	metrics         InformerMetricsProvider
	// clock times the stall rule; nil means the real clock.
	clock clock.PassiveClock
}

func newProcessorListener(cfg listenerConfig) *processorListener {
	name := nameForHandler(cfg.handler)
	clk := cfg.clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	pending, stall := backlogFor(clk)
	l := &processorListener{
		pending:         pending,
		stall:           stall,
		wake:            make(chan struct{}, 1),
		quit:            make(chan struct{}),
		finished:        make(chan struct{}),
		handler:         cfg.handler,
		name:            name,
		logger:          cfg.logger,
		tracker:         newHandlerSyncTracker(fmt.Sprintf("%s + event handler %s", cfg.upstreamName, name)),
		backlogGauge:    noopMetric{},
		mergedCounter:   noopMetric{},
		requestedResync: cfg.requestedResync,
		resyncPeriod:    cfg.resyncPeriod,
	}
	if lp, ok := informerMetricsProviderOr(cfg.metrics).(ListenerMetricsProvider); ok && cfg.id.Reserved() {
		l.backlogGauge = lp.NewListenerBacklogMetric(cfg.id, name)
		l.mergedCounter = lp.NewListenerMergedMetric(cfg.id, name)
	}
	l.determineNextResync(cfg.now)
	return l
}

// HasSynced reports whether the informer synced and this handler has
// processed every object of its initial list.
func (l *processorListener) HasSynced() bool { return l.tracker.HasSynced() }

// HasSyncedChecker returns a DoneChecker for HasSynced.
func (l *processorListener) HasSyncedChecker() DoneChecker { return l.tracker }

// ShutdownChan is closed once the listener was removed and its handler
// returned from its last call.
func (l *processorListener) ShutdownChan() <-chan struct{} { return l.finished }

// add queues n for the handler. It never blocks on the handler.
func (l *processorListener) add(n notification) {
	if n.kind == notifyAdd && n.initialList {
		l.tracker.startInitialItem()
	}
	l.mu.Lock()
	if l.stopped {
		l.mu.Unlock()
		return
	}
	merged, cancelled := l.pending.merged, l.pending.cancelledInitial
	stalled := l.stall.beforePush(&l.pending, l.returned.Load())
	l.pending.push(n)
	merged, cancelled = l.pending.merged-merged, l.pending.cancelledInitial-cancelled
	size := l.pending.len()
	l.mu.Unlock()

	if stalled {
		l.logger.Info("Event handler stalled: merging its pending notifications per object until one of its calls returns",
			"handler", l.name, "pending", size, "stallTimeout", ListenerStallTimeout)
	}
	for ; cancelled > 0; cancelled-- {
		l.finishInitial()
	}
	if merged > 0 {
		l.mergedCounter.Inc()
	}
	l.backlogGauge.Set(float64(size))
	l.signal()
}

func (l *processorListener) signal() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// run delivers notifications until the listener is stopped.
//
// A call that follows a panicking one starts listenerPanicPause late. As
// in client-go, that wait belongs to the call: once it has begun, stopping
// the listener does not cut it short, and the notification is still
// delivered before run returns.
func (l *processorListener) run() {
	defer l.markFinished()
	batch := make([]notification, 0, listenerBatchSize)
	panicked := false
	for {
		batch = l.take(batch[:0])
		if len(batch) == 0 {
			select {
			case <-l.wake:
				continue
			case <-l.quit:
				return
			}
		}
		for i := range batch {
			if l.halted.Load() {
				return
			}
			if panicked {
				time.Sleep(listenerPanicPause)
			}
			panicked = l.deliver(batch[i])
			l.returned.Add(1)
			batch[i] = notification{}
		}
	}
}

// take moves up to a batch of pending notifications into batch.
func (l *processorListener) take(batch []notification) []notification {
	l.mu.Lock()
	for len(batch) < cap(batch)-1 {
		first, second, ok := l.pending.pop()
		if !ok {
			break
		}
		batch = append(batch, first)
		if second != nil {
			batch = append(batch, *second)
		}
	}
	size := l.pending.len()
	l.mu.Unlock()
	if len(batch) > 0 {
		l.backlogGauge.Set(float64(size))
	}
	return batch
}

// deliver calls the handler under utilruntime.HandleCrashWithLogger, as
// client-go does: a panic is logged ("Observed a panic"), the
// utilruntime.PanicHandlers run, and with utilruntime.ReallyCrash (the
// default) the panic goes on and ends the process. With ReallyCrash false
// the notification is dropped for this handler, deliver reports that the
// call panicked, and run pauses before the next one.
//
// An initial-list add counts as processed even when the handler panicked:
// client-go does not count it, so its registration never reports synced
// (kubernetes/kubernetes#129024, a known bug).
func (l *processorListener) deliver(n notification) (panicked bool) {
	if n.kind == notifyAdd && n.initialList {
		defer l.finishInitial()
	}
	defer utilruntime.HandleCrashWithLogger(l.logger)
	// Stays true when the call panics: the deferred HandleCrash recovers
	// and the function returns with the result as it was.
	panicked = true
	n.callOn(l.handler)
	return false
}

func (l *processorListener) finishInitial() {
	if err := l.tracker.finishInitialItem(); err != nil {
		l.logger.Error(err, "Sync bookkeeping error", "handler", l.name)
	}
}

// stop drops pending notifications and makes run return after the call in
// progress, if any; a call waiting out listenerPanicPause is in progress.
func (l *processorListener) stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped {
		return
	}
	l.stopped = true
	l.halted.Store(true)
	l.pending = backlog{}
	close(l.quit)
}

func (l *processorListener) markFinished() {
	l.closeOnce.Do(func() { close(l.finished) })
}

// followUpstream marks the handler's upstream as synced when upstream
// closes, unless the listener stops first.
func (l *processorListener) followUpstream(upstream <-chan struct{}) {
	l.tracker.followUpstream(upstream, l.quit)
}

// shouldResync reports whether the listener's resync period has elapsed.
func (l *processorListener) shouldResync(now time.Time) bool {
	l.resyncMu.Lock()
	defer l.resyncMu.Unlock()
	return l.resyncPeriod != 0 && !now.Before(l.nextResync)
}

func (l *processorListener) determineNextResync(now time.Time) {
	l.resyncMu.Lock()
	defer l.resyncMu.Unlock()
	l.nextResync = now.Add(l.resyncPeriod)
}

func (l *processorListener) setResyncPeriod(period time.Duration) {
	l.resyncMu.Lock()
	defer l.resyncMu.Unlock()
	l.resyncPeriod = period
}

// sharedProcessor fans notifications out to the listeners of an informer.
type sharedProcessor struct {
	// mu guards listeners, started and stopped, and orders listener
	// goroutine starts with wg.Wait.
	mu sync.RWMutex
	// listeners maps each listener to whether it takes part in the
	// current resync round.
	listeners map[*processorListener]bool
	started   bool
	stopped   bool

	// upstream is closed when the informer has synced.
	upstream <-chan struct{}
	clock    clock.Clock
	wg       sync.WaitGroup
}

func newSharedProcessor(clk clock.Clock, upstream <-chan struct{}) *sharedProcessor {
	return &sharedProcessor{listeners: map[*processorListener]bool{}, clock: clk, upstream: upstream}
}

// addListener registers l and queues, for it, an add with
// isInInitialList set for each of initial (the cache's content when l joins
// a running informer). If the processor runs, l starts delivering and
// follows the informer's sync at once. Both happen under p.mu, after the
// initial items are queued, so l's sync tracker counts them all before it
// can learn that the informer synced. It reports whether the processor was
// running.
func (p *sharedProcessor) addListener(l *processorListener, initial []interface{}) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		l.stop()
		l.markFinished()
		return false
	}
	p.listeners[l] = true
	for _, obj := range initial {
		l.add(addNotification(obj, true))
	}
	if p.started {
		p.wg.Go(l.run)
		p.wg.Go(func() { l.followUpstream(p.upstream) })
	}
	return p.started
}

// removeListener unregisters the listener behind handle and stops it. An
// unknown handle is not an error; a handle of a foreign type is.
func (p *sharedProcessor) removeListener(handle ResourceEventHandlerRegistration) error {
	l, ok := handle.(*processorListener)
	if !ok {
		return fmt.Errorf("invalid key type "+verbBool, handle)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.listeners[l]; !ok {
		return nil
	}
	delete(p.listeners, l)
	l.stop()
	if !p.started {
		l.markFinished()
	}
	return nil
}

// distribute hands n to every listener, or, for a resync notification,
// to the listeners taking part in the current resync round.
func (p *sharedProcessor) distribute(n notification, isSync bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	for l, syncing := range p.listeners {
		if !isSync || syncing {
			l.add(n)
		}
	}
}

// run starts every listener, waits for ctx to end, then stops them and
// waits until each handler returned from its last call.
func (p *sharedProcessor) run(ctx context.Context) {
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		return
	}
	for l := range p.listeners {
		p.wg.Go(l.run)
		p.wg.Go(func() { l.followUpstream(p.upstream) })
	}
	p.started = true
	p.mu.Unlock()

	<-ctx.Done()

	p.mu.Lock()
	for l := range p.listeners {
		l.stop()
	}
	p.listeners = map[*processorListener]bool{}
	p.stopped = true
	p.mu.Unlock()
	p.wg.Wait()
}

// shouldResync starts a resync round: it marks the listeners whose period
// elapsed and reports whether there is any.
func (p *sharedProcessor) shouldResync() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.clock.Now()
	any := false
	for l := range p.listeners {
		due := l.shouldResync(now)
		p.listeners[l] = due
		if due {
			any = true
			l.determineNextResync(now)
		}
	}
	return any
}

// resyncCheckPeriodChanged recomputes every listener's effective resync
// period against a new check period.
func (p *sharedProcessor) resyncCheckPeriodChanged(logger klog.Logger, check time.Duration) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	for l := range p.listeners {
		l.setResyncPeriod(determineResyncPeriod(logger, l.requestedResync, check))
	}
}

// determineResyncPeriod returns the resync period a handler gets: none
// when it asked for none or the informer does not resync, and never less
// than the informer's check period.
func determineResyncPeriod(logger klog.Logger, desired, check time.Duration) time.Duration {
	switch {
	case desired == 0:
		return 0
	case check == 0:
		logger.Info("Warning: the specified resyncPeriod is invalid because this shared informer doesn't support resyncing", "desired", desired)
		return 0
	case desired < check:
		logger.Info("Warning: the specified resyncPeriod is being increased to the minimum resyncCheckPeriod", "desired", desired, "resyncCheckPeriod", check)
		return check
	}
	return desired
}

// verbBool is the %t verb, kept out of the constant format so that vet
// accepts it: client-go formats a foreign handle with %t, and its text
// ("invalid key type %!t(...)") is matched here exactly.
var verbBool = "%t"
