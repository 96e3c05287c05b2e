package simcluster

import (
	"context"
	"sync"
	"testing"
	"time"

	cache "github.com/kcache/cache"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// TestInformer_NotSyncedWhileTheInitialListIsBeingStored pins a contract
// the demo's /healthz relies on: a shared informer reports HasSynced only
// once its cache holds the initial list, even when watch events arrive
// while that list is still being stored.
//
// The initial list's processing is held inside an index function; while it
// is held, two Pods are created; once the reflector has read the second
// event from the watch, it has queued the first, so the queue has seen an
// Add during the processing. HasSynced must still be false.
func TestInformer_NotSyncedWhileTheInitialListIsBeingStored(t *testing.T) {
	c := newTestCluster(t, 3, Options{})
	entered, release := make(chan struct{}), make(chan struct{})
	releaseOnce := sync.OnceFunc(func() { close(release) })
	var holdOnce sync.Once
	indexers := cache.Indexers{"hold": func(obj interface{}) ([]string, error) {
		holdOnce.Do(func() {
			close(entered)
			<-release
		})
		return nil, nil
	}}
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
	inf := cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, c), &v1.Pod{}, 0, indexers)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	defer func() { cancel(); releaseOnce(); <-done }()

	select {
	case <-entered:
	case <-time.After(30 * time.Second):
		t.Fatal("the initial list was never stored")
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
	if inf.HasSynced() {
		t.Error("HasSynced() = true while the initial list is still being stored")
	}
	releaseOnce()
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("never synced")
	}
	if n := len(inf.GetStore().ListKeys()); n < 3 {
		t.Errorf("synced with %d objects in the cache, want at least the 3 listed", n)
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
