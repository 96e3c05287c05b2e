//lint:file-ignore U1000 hideFifo's methods exist to be shadowed, never to be called (see hideFifo).

package clientgo

import (
	"context"
	"reflect"
	"sync"

	toolscache "k8s.io/client-go/tools/cache"

	kcache "github.com/kcache/cache"
)

// This file gives the bridge's informer, controller and handler
// registrations client-go's HasSyncedChecker on the client-go minors whose
// interfaces have it (v0.36 on), while the package is compiled against
// every supported minor, v0.35 included, which has neither the method nor
// its DoneChecker result type.
//
// A method whose result type may not exist cannot be written, so it is
// promoted instead: syncedChecker embeds a client-go DeltaFIFO, which from
// v0.36 on has HasSyncedChecker() DoneChecker returning itself (Name is the
// name it was made with; Done closes once it is replaced with an empty
// list). Every other DeltaFIFO method name is hidden: two more embedded
// fields at the same depth (fifoHidden and fifoHiddenToo) both have a
// method of that name, and a name several embedded fields share is
// promoted from none of them, whether the DeltaFIFO of this minor has it
// or not. So a syncedChecker adds exactly HasSyncedChecker where client-go
// has it, and nothing on v0.35 (checker_test.go pins both).
//
// The DeltaFIFO holds nothing: it is a latch. syncSignals closes it when
// the kcache checker it stands for is done, from a goroutine that lives
// only while the informer runs.

// clientGoHasCheckers reports whether this build's client-go has
// HasSyncedChecker (v0.36 on). Without it no latch is ever fired, and no
// goroutine started.
var clientGoHasCheckers = func() bool {
	_, ok := reflect.TypeFor[*toolscache.DeltaFIFO]().MethodByName("HasSyncedChecker")
	return ok
}()

// syncedChecker is a latch that presents client-go's HasSyncedChecker (see
// the file comment). Make it with newSyncedChecker.
type syncedChecker struct {
	*toolscache.DeltaFIFO
	fifoHidden
	fifoHiddenToo
	fire sync.Once
}

// newSyncedChecker returns an unfired latch whose checker is called name.
func newSyncedChecker(name string) *syncedChecker {
	opts := toolscache.DeltaFIFOOptions{}
	// Name exists where HasSyncedChecker does (v0.36 on).
	if f := reflect.ValueOf(&opts).Elem().FieldByName("Name"); f.IsValid() && f.Kind() == reflect.String {
		f.SetString(name)
	}
	return &syncedChecker{DeltaFIFO: toolscache.NewDeltaFIFOWithOptions(opts)}
}

// done closes the checker's channel; later calls do nothing.
func (c *syncedChecker) done() {
	c.fire.Do(func() {
		// An empty Replace of an empty queue cannot fail.
		_ = c.DeltaFIFO.Replace(nil, "")
	})
}

// hideFifo has a method named as each DeltaFIFO method of any supported
// client-go but HasSyncedChecker. Embedded twice beside the DeltaFIFO, as
// fifoHidden and fifoHiddenToo, it keeps all of those from being promoted.
// The signatures do not matter; the methods are never called.
type hideFifo[T any] struct{}

type (
	fifoHidden    = hideFifo[int]
	fifoHiddenToo = hideFifo[string]
)

func (hideFifo[T]) Add()         {}
func (hideFifo[T]) Close()       {}
func (hideFifo[T]) Delete()      {}
func (hideFifo[T]) Done()        {}
func (hideFifo[T]) HasSynced()   {}
func (hideFifo[T]) IsClosed()    {}
func (hideFifo[T]) KeyOf()       {}
func (hideFifo[T]) Name()        {}
func (hideFifo[T]) Pop()         {}
func (hideFifo[T]) Replace()     {}
func (hideFifo[T]) Resync()      {}
func (hideFifo[T]) Transformer() {}
func (hideFifo[T]) Update()      {}

// syncSignals fires latches when the kcache checkers they stand for are
// done, while the informer runs: one goroutine per unfired latch, started
// by run (or by add during a run) and ended by the end of the run.
type syncSignals struct {
	// mu guards ctx, wg and pending.
	mu sync.Mutex
	// ctx is the current run's context; nil while the informer does not
	// run. wg counts the goroutines of that run.
	ctx context.Context
	wg  *sync.WaitGroup
	// pending holds every latch added, until it fired.
	pending []signal
}

// signal is a latch and the kcache checker that fires it.
type signal struct {
	from kcache.DoneChecker
	to   *syncedChecker
}

// add fires to once from is done: now, or during the next run.
func (s *syncSignals) add(from kcache.DoneChecker, to *syncedChecker) {
	if !clientGoHasCheckers {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sig := signal{from: from, to: to}
	s.pending = append(s.pending, sig)
	if s.ctx != nil {
		s.startLocked(sig)
	}
}

// run starts the latches' goroutines for a run ending with ctx; the
// returned func waits for them after the run, and must be called once.
func (s *syncSignals) run(ctx context.Context) (wait func()) {
	if !clientGoHasCheckers {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	wg := &sync.WaitGroup{}
	s.mu.Lock()
	s.ctx, s.wg = ctx, wg
	for _, sig := range s.pending {
		s.startLocked(sig)
	}
	s.mu.Unlock()
	return func() {
		cancel()
		wg.Wait()
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.wg == wg {
			s.ctx, s.wg = nil, nil
		}
	}
}

// startLocked starts sig's goroutine in the current run. Caller holds s.mu.
func (s *syncSignals) startLocked(sig signal) {
	ctx := s.ctx
	s.wg.Go(func() {
		select {
		case <-sig.from.Done():
			sig.to.done()
			s.forget(sig.to)
		case <-ctx.Done():
		}
	})
}

// forget drops a fired latch from pending.
func (s *syncSignals) forget(c *syncedChecker) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, sig := range s.pending {
		if sig.to == c {
			s.pending = append(s.pending[:i], s.pending[i+1:]...)
			return
		}
	}
}
