package cache

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	fcache "github.com/kcache/cache/testing"
)

// With the keep-serving opt-in (utilruntime.ReallyCrash false), a
// panicking handler misses only the calls that panicked, and the other
// handlers miss nothing.
func TestSharedInformer_WithoutReallyCrashAPanickingHandlerKeepsReceiving(t *testing.T) {
	keepServing(t)
	synctest.Test(t, func(t *testing.T) {
		src := infSource(t, 3)
		inf := infNewPodInformer(src)
		panicky := &infRecorder{before: func(e infEvent) {
			if e.Key == "ns/p1" {
				panic("handler bug on " + e.Key)
			}
		}}
		calm := &infRecorder{}
		panickyReg := infAdd(t, inf, panicky)
		infAdd(t, inf, calm)
		infRun(t, inf)
		// The initial add of p1 panicked; it still counts as processed
		// (client-go's registration would never sync:
		// kubernetes/kubernetes#129024).
		<-panickyReg.HasSyncedChecker().Done()
		for i := range 3 {
			src.Modify(testPod("ns", fmt.Sprint("p", i), ""))
		}
		src.Delete(testPod("ns", "p1", ""))
		src.Modify(testPod("ns", "p2", ""))
		// Each call after a panicking one waits listenerPanicPause.
		time.Sleep(time.Minute)
		synctest.Wait()

		all := calm.snapshot()
		if len(all) != 3+3+1+1 {
			t.Fatalf("calm handler got %d calls, want 8: %v", len(all), all)
		}
		var wantPanicky []infEvent
		for _, e := range all {
			if e.Key != "ns/p1" {
				wantPanicky = append(wantPanicky, e)
			}
		}
		if diff := cmp.Diff(wantPanicky, panicky.snapshot()); diff != "" {
			t.Errorf("panicking handler's completed calls (-want +got):\n%s", diff)
		}
	})
}

// infGauge is a GaugeMetric that keeps its last value.
type infGauge struct{ bits atomic.Uint64 }

func (g *infGauge) Set(v float64) { g.bits.Store(uint64(v)) }
func (g *infGauge) value() int    { return int(g.bits.Load()) }

// infCounter is a CounterMetric.
type infCounter struct{ n atomic.Int64 }

func (c *infCounter) Inc() { c.n.Add(1) }

// infListenerMetrics provides listener metrics (and no-op informer ones).
type infListenerMetrics struct {
	noopInformerMetricsProvider
	// mu guards backlog and merged, keyed by handler name.
	mu      sync.Mutex
	backlog map[string]*infGauge
	merged  map[string]*infCounter
}

var _ ListenerMetricsProvider = (*infListenerMetrics)(nil)

func (m *infListenerMetrics) NewListenerBacklogMetric(_ InformerNameAndResource, handler string) GaugeMetric {
	m.mu.Lock()
	defer m.mu.Unlock()
	g := &infGauge{}
	m.backlog[handler] = g
	return g
}

func (m *infListenerMetrics) NewListenerMergedMetric(_ InformerNameAndResource, handler string) CounterMetric {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := &infCounter{}
	m.merged[handler] = c
	return c
}

// infStuckHandler is a distinctly named handler for the metrics test.
type infStuckHandler struct{ *infRecorder }

func TestSharedInformer_StuckHandlerBacklogIsBoundedByTheNumberOfObjects(t *testing.T) {
	const (
		limit   = 10
		objects = 50
		updates = 10000
	)
	defer SetListenerBacklogLimit(SetListenerBacklogLimit(-1)) // the default for the quick handler
	synctest.Test(t, func(t *testing.T) {
		name, err := NewInformerName("stuck-handler-test")
		if err != nil {
			t.Fatal(err)
		}
		defer name.Release()
		metrics := &infListenerMetrics{backlog: map[string]*infGauge{}, merged: map[string]*infCounter{}}
		src := infSource(t, objects)
		inf := NewSharedIndexInformerWithOptions(src, &v1.Pod{}, SharedIndexInformerOptions{
			Identifier:              name.WithResource(schema.GroupVersionResource{Version: "v1", Resource: "pods"}),
			InformerMetricsProvider: metrics,
		})
		release := newInfLatch()
		stuck := infStuckHandler{&infRecorder{before: func(infEvent) { release.wait() }}}
		quick := &infRecorder{}
		// Only the stuck handler's listener gets the small limit.
		prev := SetListenerBacklogLimit(limit)
		stuckReg := infAdd(t, inf, stuck)
		SetListenerBacklogLimit(prev)
		infAdd(t, inf, quick)
		infRun(t, inf)
		t.Cleanup(release.open)
		<-inf.HasSyncedChecker().Done()
		for i := range updates {
			src.Modify(testPod("ns", fmt.Sprint("p", i%objects), ""))
		}
		synctest.Wait()

		if got := quick.count("update"); got != updates {
			t.Fatalf("the other handler got %d updates, want %d: the stuck one held it back", got, updates)
		}
		l := stuckReg.(*processorListener)
		l.mu.Lock()
		pending, merged := l.pending.len(), l.pending.merged
		l.mu.Unlock()
		if pending > objects {
			t.Errorf("stuck handler has %d notifications pending for %d objects", pending, objects)
		}
		// All but the ones the listener took before blocking, and at most
		// one pending per object, were merged.
		if minMerged := uint64(objects + updates - objects - listenerBatchSize); merged < minMerged {
			t.Errorf("%d notifications merged, want at least %d", merged, minMerged)
		}
		handlerName := nameForHandler(stuck)
		metrics.mu.Lock()
		gauge, counter := metrics.backlog[handlerName], metrics.merged[handlerName]
		metrics.mu.Unlock()
		if gauge == nil || counter == nil {
			t.Fatalf("no listener metrics for %q; have %v", handlerName, metrics.backlog)
		}
		if got := gauge.value(); got != pending {
			t.Errorf("backlog gauge = %d, pending = %d", got, pending)
		}
		if counter.n.Load() == 0 {
			t.Errorf("merged counter never incremented")
		}

		release.open()
		synctest.Wait()
		if got := gauge.value(); got != 0 {
			t.Errorf("backlog gauge = %d once the handler caught up, want 0", got)
		}
		replay := replayAll(stuck.snapshot())
		if len(replay.problems) > 0 {
			t.Errorf("merged calls do not fit the handler's state:\n%s", strings.Join(replay.problems, "\n"))
		}
		if diff := cmp.Diff(infStoreState(inf.GetStore()), replay.state); diff != "" {
			t.Errorf("stuck handler ends out of step with the store (-store +handler):\n%s", diff)
		}
	})
}

func TestSharedInformer_RunReturnsOnlyOnceABlockedHandlerReturns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := infSource(t, 1)
		inf := infNewPodInformer(src)
		entered := make(chan struct{})
		release := make(chan struct{})
		infAdd(t, inf, &infRecorder{before: func(infEvent) {
			close(entered)
			<-release
		}})
		ctx, cancel := context.WithCancel(context.Background())
		returned := make(chan struct{})
		go func() {
			defer close(returned)
			inf.RunWithContext(ctx)
		}()
		<-entered
		cancel()
		synctest.Wait()
		select {
		case <-returned:
			t.Fatalf("Run returned while a handler was still running")
		default:
		}
		if !inf.IsStopped() {
			t.Errorf("IsStopped false once the informer's context ended")
		}
		close(release)
		<-returned
	})
}

// infFailingListWatch fails its first list and serves an empty pod list
// after; its watches never deliver anything.
type infFailingListWatch struct{ lists atomic.Int32 }

func (lw *infFailingListWatch) List(metav1.ListOptions) (runtime.Object, error) {
	if lw.lists.Add(1) == 1 {
		return nil, errors.New("list refused")
	}
	return &v1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "7"}}, nil
}

func (lw *infFailingListWatch) Watch(metav1.ListOptions) (watch.Interface, error) {
	return watch.NewFake(), nil
}

// IsWatchListSemanticsUnSupported keeps the reflector on plain lists.
func (lw *infFailingListWatch) IsWatchListSemanticsUnSupported() bool { return true }

func TestSharedInformer_Lifecycle(t *testing.T) {
	t.Run("setters fail once started and keep the old values", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			inf := infNewPodInformer(infSource(t, 1))
			if err := inf.SetWatchErrorHandler(func(*Reflector, error) {}); err != nil {
				t.Errorf("SetWatchErrorHandler before Run: %v", err)
			}
			infRun(t, inf)
			<-inf.HasSyncedChecker().Done()
			if err := inf.SetTransform(nil); err == nil {
				t.Errorf("SetTransform after Run succeeded")
			}
			if err := inf.SetWatchErrorHandler(func(*Reflector, error) {}); err == nil {
				t.Errorf("SetWatchErrorHandler after Run succeeded")
			}
			if err := inf.SetWatchErrorHandlerWithContext(func(context.Context, *Reflector, error) {}); err == nil {
				t.Errorf("SetWatchErrorHandlerWithContext after Run succeeded")
			}
		})
	})

	t.Run("watch error handler set before Run is told about list errors", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			lw := &infFailingListWatch{}
			inf := NewSharedIndexInformer(lw, &v1.Pod{}, 0, Indexers{})
			var told []string
			if err := inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *Reflector, err error) {
				told = append(told, err.Error())
			}); err != nil {
				t.Fatal(err)
			}
			infRun(t, inf)
			<-inf.HasSyncedChecker().Done()
			// Synced means the listed objects were processed; the Reflector
			// records the list's resource version only after handing them
			// over (as client-go's does), so let it get there.
			synctest.Wait()
			if len(told) != 1 || !strings.Contains(told[0], "list refused") {
				t.Errorf("watch error handler told %q, want the one list error", told)
			}
			if got := inf.LastSyncResourceVersion(); got != "7" {
				t.Errorf("LastSyncResourceVersion = %q after the second list, want 7", got)
			}
		})
	})

	t.Run("second Run returns at once and the first keeps serving", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			src := infSource(t, 1)
			inf := infNewPodInformer(src)
			rec := &infRecorder{}
			infAdd(t, inf, rec)
			infRun(t, inf)
			<-inf.HasSyncedChecker().Done()
			inf.Run(make(chan struct{})) // must return although its channel never closes
			src.Modify(testPod("ns", "p0", ""))
			synctest.Wait()
			if got := rec.count("update"); got != 1 {
				t.Errorf("after a second Run the handler got %d updates, want 1", got)
			}
		})
	})

	t.Run("stopped informer refuses handlers and indexers and does not run again", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			src := infSource(t, 1)
			inf := infNewPodInformer(src)
			if inf.IsStopped() {
				t.Errorf("IsStopped before Run")
			}
			stop := infRun(t, inf)
			<-inf.HasSyncedChecker().Done()
			if inf.IsStopped() {
				t.Errorf("IsStopped while running")
			}
			stop()
			if !inf.IsStopped() {
				t.Errorf("not IsStopped after Run returned")
			}
			if _, err := inf.AddEventHandler(&infRecorder{}); err == nil {
				t.Errorf("AddEventHandler after stop succeeded")
			}
			if _, err := inf.AddEventHandlerWithResyncPeriod(&infRecorder{}, time.Minute); err == nil {
				t.Errorf("AddEventHandlerWithResyncPeriod after stop succeeded")
			}
			if err := inf.AddIndexers(Indexers{"by-node": byNodeIndex}); err == nil {
				t.Errorf("AddIndexers after stop succeeded")
			}
			inf.Run(make(chan struct{})) // must return at once
			if !inf.IsStopped() {
				t.Errorf("not IsStopped after a Run following the stop")
			}
		})
	})

	t.Run("indexers added while running index the cached objects", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			src := fcache.NewFakeControllerSource()
			t.Cleanup(src.Shutdown)
			src.Add(podOnNode("ns", "a", "n1", 0))
			src.Add(podOnNode("ns", "b", "n2", 0))
			inf := infNewPodInformer(src)
			infRun(t, inf)
			<-inf.HasSyncedChecker().Done()
			if err := inf.AddIndexers(Indexers{"by-node": byNodeIndex}); err != nil {
				t.Fatalf("AddIndexers while running: %v", err)
			}
			if err := inf.AddIndexers(Indexers{"by-node": byNodeIndex}); err == nil {
				t.Errorf("adding an index name twice succeeded")
			}
			src.Add(podOnNode("ns", "c", "n1", 0))
			synctest.Wait()
			got, err := inf.GetIndexer().ByIndex("by-node", "n1")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{"ns/a", "ns/c"}, keysOf(got)); diff != "" {
				t.Errorf("ByIndex(by-node, n1) (-want +got):\n%s", diff)
			}
		})
	})

	t.Run("resource version, store and controller view follow the source", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			src := infSource(t, 2)
			inf := infNewPodInformer(src)
			ctrl := inf.GetController()
			if got := inf.LastSyncResourceVersion(); got != "" {
				t.Errorf("LastSyncResourceVersion before Run = %q, want empty", got)
			}
			if ctrl.HasSynced() {
				t.Errorf("controller view synced before Run")
			}
			infRun(t, inf)
			<-inf.HasSyncedChecker().Done()
			synctest.Wait()
			if got := inf.LastSyncResourceVersion(); got != "2" {
				t.Errorf("LastSyncResourceVersion after syncing = %q, want 2", got)
			}
			src.Modify(testPod("ns", "p0", ""))
			synctest.Wait()
			if got := inf.LastSyncResourceVersion(); got != "3" {
				t.Errorf("LastSyncResourceVersion after a change = %q, want 3", got)
			}
			if got := ctrl.LastSyncResourceVersion(); got != "3" {
				t.Errorf("controller view's LastSyncResourceVersion = %q, want 3", got)
			}
			if !ctrl.HasSynced() {
				t.Errorf("controller view not synced")
			}
			if ctrl.HasSyncedChecker().Done() != inf.HasSyncedChecker().Done() {
				t.Errorf("controller view's checker is not the informer's")
			}
			// Running the view does nothing and returns at once.
			ctrl.Run(make(chan struct{}))
			ctrl.RunWithContext(context.Background())
			if inf.GetStore() != inf.GetIndexer() {
				t.Errorf("GetStore and GetIndexer return different caches")
			}
		})
	})
}
