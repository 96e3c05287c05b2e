package simcluster

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	cache "github.com/kcache/cache"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// TestRealFIFO_NotSyncedWhileTheInitialListIsBeingProcessed pins a
// contract informers (and the demo's /healthz) rely on: an informer's
// queue reports HasSynced only once the consumer has processed the initial
// list, even when watch events are queued while that list is still being
// processed. The queue is set up as informers set it up (atomic events,
// unlocked while processing) and fed by a reflector over the simulated
// cluster.
//
// The consumer holds the processing of the initial list; meanwhile two
// Pods are created. Once the reflector has read the second event from the
// watch it has queued the first, so the queue has taken an Add during the
// processing. HasSynced must still be false.
func TestRealFIFO_NotSyncedWhileTheInitialListIsBeingProcessed(t *testing.T) {
	c := newTestCluster(t, 3, Options{})
	fifo := cache.NewRealFIFOWithOptions(cache.RealFIFOOptions{
		KeyFunction:           cache.MetaNamespaceKeyFunc,
		AtomicEvents:          true,
		UnlockWhileProcessing: true,
	})
	consumed := make(chan string, 16)
	lw := c.ListWatch()
	watchFn := lw.WatchFuncWithContext
	lw.WatchFuncWithContext = func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		w, err := watchFn(ctx, opts)
		if err != nil {
			return nil, err
		}
		return newTellingWatch(w, consumed), nil
	}
	r := cache.NewReflectorWithOptions(cache.ToListWatcherWithWatchListSemantics(lw, c), &v1.Pod{}, fifo, cache.ReflectorOptions{Name: "sync-test"})

	entered, release := make(chan struct{}), make(chan struct{})
	releaseOnce := sync.OnceFunc(func() { close(release) })
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { r.RunWithContext(ctx) })
	wg.Go(func() {
		first := true
		for {
			_, err := fifo.Pop(func(interface{}, bool) error {
				if first {
					first = false
					close(entered)
					<-release
				}
				return nil
			})
			if errors.Is(err, cache.ErrFIFOClosed) {
				return
			}
		}
	})
	defer func() {
		cancel()
		releaseOnce()
		fifo.Close()
		wg.Wait()
	}()

	select {
	case <-entered:
	case <-time.After(30 * time.Second):
		t.Fatal("the initial list was never popped")
	}
	for _, name := range []string{"late-1", "late-2"} {
		if _, err := c.Create(NewPod("ns", name, "web")); err != nil {
			t.Fatal(err)
		}
	}
	// The reflector reads late-2 only after queueing late-1.
	for name := ""; name != "late-2"; {
		select {
		case name = <-consumed:
		case <-time.After(30 * time.Second):
			t.Fatal("the reflector did not read the watch events")
		}
	}
	if fifo.HasSynced() {
		t.Error("HasSynced() = true while the initial list is still being processed")
	}
	releaseOnce()
	select {
	case <-fifo.HasSyncedChecker().Done():
	case <-time.After(30 * time.Second):
		t.Error("not synced after the initial list was processed")
	}
}

// tellingWatch forwards a watch through an unbuffered channel and reports
// the name of each Pod its reader took.
type tellingWatch struct {
	inner    watch.Interface
	out      chan watch.Event
	stopped  chan struct{}
	stopOnce sync.Once
}

func newTellingWatch(inner watch.Interface, consumed chan<- string) *tellingWatch {
	w := &tellingWatch{inner: inner, out: make(chan watch.Event), stopped: make(chan struct{})}
	go func() {
		defer close(w.out)
		for ev := range inner.ResultChan() {
			select {
			case w.out <- ev:
			case <-w.stopped:
				return
			}
			if p, ok := ev.Object.(*v1.Pod); ok {
				select {
				case consumed <- p.Name:
				default:
				}
			}
		}
	}()
	return w
}

func (w *tellingWatch) ResultChan() <-chan watch.Event { return w.out }

func (w *tellingWatch) Stop() {
	w.stopOnce.Do(func() {
		close(w.stopped)
		w.inner.Stop()
	})
}
