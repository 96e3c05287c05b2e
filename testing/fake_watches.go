package framework

import (
	"context"
	"sync"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/watch"
)

// sourceWatch is a watch the source handed out: the broadcaster's (maybe
// filtered) watch, remembered among the source's open watches until its
// consumer stops it or the source closes it.
type sourceWatch struct {
	watch.Interface
	f        *FakeControllerSource
	stopOnce sync.Once
}

// Stop ends the watch and forgets it.
func (w *sourceWatch) Stop() {
	w.stopOnce.Do(func() {
		w.f.lock.Lock()
		delete(w.f.watches, w)
		w.f.lock.Unlock()
		w.Interface.Stop()
	})
}

// track remembers w among the open watches and wakes WaitForWatches.
// Caller holds publishMu, not lock.
func (f *FakeControllerSource) track(w watch.Interface) watch.Interface {
	sw := &sourceWatch{Interface: w, f: f}
	f.lock.Lock()
	defer f.lock.Unlock()
	f.watches[sw] = struct{}{}
	close(f.watchesChanged)
	f.watchesChanged = make(chan struct{})
	return sw
}

// forgetWatchesLocked forgets every open watch, because the broadcaster
// serving them is about to shut down, and returns how many there were.
// Caller holds lock for writing.
func (f *FakeControllerSource) forgetWatchesLocked() int {
	n := len(f.watches)
	clear(f.watches)
	return n
}

// DropWatches closes every open watch without an error, as a restarting
// API server or a load balancer would, and returns how many it closed. The
// history is kept: a consumer resumes from the last resource version it
// saw and misses nothing.
func (f *FakeControllerSource) DropWatches() int {
	f.publishMu.Lock()
	defer f.publishMu.Unlock()
	f.lock.Lock()
	if f.shutDown {
		f.lock.Unlock()
		return 0
	}
	old := f.Broadcaster
	f.Broadcaster = newBroadcaster()
	n := f.forgetWatchesLocked()
	f.lock.Unlock()
	f.stats.watchesEnded.Add(int64(n))
	old.Shutdown()
	return n
}

// WaitForWatches blocks until at least n watches are open, or ctx is done.
// A test or benchmark uses it to start changing objects once its consumer
// is watching; the source loses no change made earlier (a watch replays
// the history after its resource version), so it is a matter of timing,
// not of correctness.
func (f *FakeControllerSource) WaitForWatches(ctx context.Context, n int) error {
	for {
		f.lock.RLock()
		open, changed := len(f.watches), f.watchesChanged
		f.lock.RUnlock()
		if open >= n {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// FakeControllerSourceStats counts what a FakeControllerSource served.
// Every field is a running total.
type FakeControllerSourceStats struct {
	// Lists counts List calls without a continue token.
	Lists int64
	// ListPages counts every List call that got past ListError and the
	// shut-down check, first pages included.
	ListPages int64
	// Watches counts Watch calls, streaming lists and refused ones
	// included.
	Watches int64
	// WatchesEnded counts open watches the source closed: by DropWatches,
	// Expire and ResetWatch.
	WatchesEnded int64
	// GoneErrors counts 410 Expired answers: to a List or Watch, and the
	// ERROR events Expire sends.
	GoneErrors int64
}

// sourceCounters are the atomic counters behind FakeControllerSourceStats.
type sourceCounters struct {
	lists, listPages, watches, watchesEnded, gone atomic.Int64
}

// countGone counts err if it is a 410 Expired.
func (c *sourceCounters) countGone(err error) {
	if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
		c.gone.Add(1)
	}
}

// Stats returns the running totals of what the source served.
func (f *FakeControllerSource) Stats() FakeControllerSourceStats {
	return FakeControllerSourceStats{
		Lists:        f.stats.lists.Load(),
		ListPages:    f.stats.listPages.Load(),
		Watches:      f.stats.watches.Load(),
		WatchesEnded: f.stats.watchesEnded.Load(),
		GoneErrors:   f.stats.gone.Load(),
	}
}
