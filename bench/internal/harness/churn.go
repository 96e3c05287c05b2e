package harness

import (
	"context"
	"fmt"
	"os"
	"runtime/pprof"
	"time"

	"k8s.io/client-go/rest"
)

// ChurnConfig configures one churn child: an informer on every pod of a
// real API server, synced, then measured while another process updates the
// pods. The child never writes to the server itself.
type ChurnConfig struct {
	// Client is the core/v1 REST client the informer lists and watches
	// pods with.
	Client rest.Interface
	// Pods is how many pods the server holds; the child waits for that
	// many adds before the churn.
	Pods    int
	Timeout time.Duration
	// Begin is called once the informer has synced and the heap has
	// settled; it returns when the updates are about to start.
	Begin func(ctx context.Context) error
	// End is called at once after Begin and returns, once the updates
	// have stopped, how many watch events they made: the notifications
	// the child waits for before it closes the window.
	End func(ctx context.Context) (events int64, err error)
	// CPUProfile, when set, is where a CPU profile of the window is
	// written; HeapProfile where a heap profile is written after it.
	CPUProfile, HeapProfile string
}

// ChurnResult is what one churn child measured over its window, from
// Begin's return to the last notification End announced. Heap figures are
// bytes above the baseline taken just before the informer started.
type ChurnResult struct {
	Lib  string
	Pods int // pods cached when the churn began
	// Events is the number of notifications the handler got in the window
	// (one per watch event: the handler is never stalled, so no library
	// merges them).
	Events int64
	// Seconds is the window's wall time; CPUSeconds the process CPU time
	// (user plus system, every goroutine) spent in it.
	Seconds, CPUSeconds float64
	// BeforeHeap is HeapInuse after the sync and two GCs, just before the
	// window; AfterHeap the same just after it. After updates, HeapInuse
	// also holds the room old versions left in spans that still hold live
	// objects; BeforeLive and AfterLive are the live heap the last of
	// those GCs marked, without it.
	BeforeHeap, AfterHeap float64
	BeforeLive, AfterLive float64
	// PeakHeap is the highest HeapInuse sampled in the window; PeakLive
	// the highest live heap a GC marked in it.
	PeakHeap, PeakLive float64
	// GCSeconds is the GC CPU time in the window as the runtime estimates
	// it (gccost.go), GCCycles the GC cycles that ended in it, AllocBytes
	// the heap bytes the process allocated in it.
	GCSeconds  float64
	GCCycles   uint64
	AllocBytes float64
	// GCCycleSeconds is the GC CPU time of one full cycle at the settled
	// heap after the window (MeasureGCCycle), GCLive the live heap it
	// marked (the whole process's, not above the baseline), GOGC the GOGC
	// in force. CPUPerEventGCAmortized spreads the GC over them.
	GCCycleSeconds float64
	GCLive         float64
	GOGC           int
}

// CPUPerEvent is the process CPU time per notification, in seconds.
func (r ChurnResult) CPUPerEvent() float64 {
	if r.Events == 0 {
		return 0
	}
	return r.CPUSeconds / float64(r.Events)
}

// HeapPerPodBefore is the settled heap per cached pod before the churn.
func (r ChurnResult) HeapPerPodBefore() float64 { return r.BeforeHeap / float64(max(r.Pods, 1)) }

// HeapPerPodAfter is the settled heap per cached pod after the churn.
func (r ChurnResult) HeapPerPodAfter() float64 { return r.AfterHeap / float64(max(r.Pods, 1)) }

// LivePerPodBefore is the live heap per cached pod before the churn.
func (r ChurnResult) LivePerPodBefore() float64 { return r.BeforeLive / float64(max(r.Pods, 1)) }

// LivePerPodAfter is the live heap per cached pod after the churn.
func (r ChurnResult) LivePerPodAfter() float64 { return r.AfterLive / float64(max(r.Pods, 1)) }

// churnPollPeriod is how often the count of notifications is read once
// End has returned, until it reaches the announced number.
const churnPollPeriod = 2 * time.Millisecond

// churnTailTimeout bounds the wait for the announced notifications once
// End has returned. The last ones arrive within milliseconds of their
// writes; when some never come (a write changed nothing, another writer
// interfered), this ends the child with the counts instead of a hang.
const churnTailTimeout = time.Minute

// ChurnProbe is what MeasureChurn reads of a synced informer.
type ChurnProbe struct {
	Pods int // pods cached
	// Delivered counts the handler's notifications so far.
	Delivered func() int64
	// Peak is observed by the handler after each notification
	// (CountingHandler.ObserveEach), so that no sampling goroutine adds
	// to the window's CPU time.
	Peak *HeapPeak
	// Base is the heap taken before the informer started.
	Base HeapFigures
}

// MeasureChurn measures a synced informer through cfg's churn window. It
// returns the result even on error, with the figures measured so far.
func MeasureChurn(ctx context.Context, cfg ChurnConfig, p ChurnProbe) (ChurnResult, error) {
	res := ChurnResult{Pods: p.Pods}
	before := SettledHeap()
	res.BeforeHeap, res.BeforeLive = above(before.Inuse, p.Base.Inuse), above(before.Live, p.Base.Live)
	n0 := p.Delivered() // the updates have not started: nothing is missed
	if err := cfg.Begin(ctx); err != nil {
		return res, fmt.Errorf("churn: begin: %w", err)
	}
	stopProfile, err := StartCPUProfile(cfg.CPUProfile)
	if err != nil {
		return res, err
	}
	gc := newGCMeter()
	p.Peak.Start()
	start, cpu0, gc0 := time.Now(), ProcessCPU(), gc.read()
	want, err := cfg.End(ctx)
	if err != nil {
		err = fmt.Errorf("churn: end: %w", err)
	} else {
		tail, cancel := context.WithTimeout(ctx, churnTailTimeout)
		err = waitCount(tail, func() int64 { return p.Delivered() - n0 }, want)
		cancel()
	}
	res.CPUSeconds = (ProcessCPU() - cpu0).Seconds()
	res.setGCWindow(gc0, gc.read())
	res.Seconds = time.Since(start).Seconds()
	res.Events = p.Delivered() - n0
	peak := p.Peak.Stop()
	if perr := stopProfile(); err == nil {
		err = perr
	}
	if err != nil {
		return res, err
	}
	res.PeakHeap, res.PeakLive = above(peak.Inuse, p.Base.Inuse), above(peak.Live, p.Base.Live)
	after := SettledHeap()
	res.AfterHeap, res.AfterLive = above(after.Inuse, p.Base.Inuse), above(after.Live, p.Base.Live)
	res.setGCCycle(MeasureGCCycle(gcCycleRuns))
	return res, writeHeapProfile(cfg.HeapProfile)
}

// waitCount polls count until it reaches want or ctx ends.
func waitCount(ctx context.Context, count func() int64, want int64) error {
	if count() >= want {
		return nil
	}
	tick := time.NewTicker(churnPollPeriod)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			if count() >= want {
				return nil
			}
		case <-ctx.Done():
			return fmt.Errorf("churn: waiting for %d notifications, saw %d: %w", want, count(), ctx.Err())
		}
	}
}

// above is v - base in bytes, negative when the heap shrank below the
// baseline.
func above(v, base uint64) float64 { return float64(int64(v) - int64(base)) }

// StartCPUProfile starts a CPU profile into path unless path is "", and
// returns what stops it and closes the file.
func StartCPUProfile(path string) (stop func() error, err error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() error {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			return fmt.Errorf("cpu profile: %w", err)
		}
		return nil
	}, nil
}

// writeHeapProfile writes the heap profile to path unless path is "".
func writeHeapProfile(path string) error {
	if path == "" {
		return nil
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("heap profile: %w", err)
	}
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return fmt.Errorf("heap profile: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("heap profile: %w", err)
	}
	return nil
}
