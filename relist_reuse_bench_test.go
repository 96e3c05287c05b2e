package cache

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"
)

// relistBench is one informer-shaped pipeline for BenchmarkReflectorRelist:
// a reflector listing into an atomic RealFIFO whose consumer applies the
// popped ReplacedAll to an indexer, as an informer does.
type relistBench struct {
	n        int
	streamed bool
	indexer  Indexer
	queue    *RealFIFO
	// round numbers the relists; each changes the resource version of one
	// pod in a hundred.
	round int
}

func newRelistBench(b *testing.B, n int, streamed, reuse bool) *relistBench {
	rb := &relistBench{n: n, streamed: streamed}
	rb.indexer = NewIndexer(DeletionHandlingMetaNamespaceKeyFunc, Indexers{NamespaceIndex: MetaNamespaceIndexFunc})
	rb.queue = NewRealFIFOWithOptions(RealFIFOOptions{AtomicEvents: true})
	if reuse {
		rb.queue.consumerCache = rb.indexer
	}
	rb.relist(b)
	return rb
}

// pod is pod i as listed in the current round: a fresh deep copy, as a
// decoded response would be.
func (rb *relistBench) pod(i int) *v1.Pod {
	rv := i + 1
	if i%100 == 0 {
		rv = rb.n*(rb.round+1) + i
	}
	return benchInfPod(i, rv)
}

// lw serves the current round as one paginated list or one streaming list.
func (rb *relistBench) lw() *rfLW {
	rv := strconv.Itoa(rb.n * (rb.round + 2))
	if !rb.streamed {
		return &rfLW{listFn: func(_ context.Context, opts metav1.ListOptions) (apiruntime.Object, error) {
			from, _ := strconv.Atoi(opts.Continue)
			to := min(from+defaultListPageSize, rb.n)
			page := &v1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: rv}, Items: make([]v1.Pod, 0, to-from)}
			for i := from; i < to; i++ {
				page.Items = append(page.Items, *rb.pod(i))
			}
			if to < rb.n {
				page.Continue = strconv.Itoa(to)
			}
			return page, nil
		}}
	}
	return &rfLW{streaming: true, watchFn: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
		s := &rfStream{ch: make(chan watch.Event, 1024), stopped: make(chan struct{})}
		go func() {
			for i := range rb.n {
				s.send(watch.Event{Type: watch.Added, Object: rb.pod(i)})
			}
			s.send(rfEndBookmark(rv))
		}()
		return s, nil
	}}
}

// relist runs one relist end to end: list into the queue, then pop the
// ReplacedAll into the indexer.
func (rb *relistBench) relist(b *testing.B) {
	rb.listOnly(b)
	rb.apply(b)
	rb.round++
}

// listOnly lists into the queue.
func (rb *relistBench) listOnly(b *testing.B) {
	r := NewReflector(rb.lw(), &v1.Pod{}, rb.queue, 0)
	r.WatchListPageSize = defaultListPageSize
	ctx := context.Background()
	var res stepResult
	if rb.streamed {
		c := r.newCycle()
		res = r.stepWatchList(ctx, c)
		c.finish()
	} else {
		res = r.stepList(ctx)
	}
	if res.outcome != outcomeSynced {
		b.Fatalf("relist: %+v", res)
	}
}

// apply pops the queued ReplacedAll into the indexer.
func (rb *relistBench) apply(b *testing.B) {
	_, err := rb.queue.Pop(func(obj interface{}, isInInitialList bool) error {
		return processDeltas(klog.Background(), handlerSink{ResourceEventHandlerFuncs{}}, rb.indexer, obj.(Deltas), isInInitialList, DeletionHandlingMetaNamespaceKeyFunc)
	})
	if err != nil {
		b.Fatal(err)
	}
}

// heldMB is the heap a listed snapshot holds above the cache, once listed
// and queued but not yet applied: after a collection, so that only what
// the queue keeps counts.
func (rb *relistBench) heldMB(b *testing.B) float64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	rb.listOnly(b)
	runtime.GC()
	runtime.ReadMemStats(&after)
	rb.apply(b)
	rb.round++
	return float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / (1 << 20)
}

// BenchmarkReflectorRelist measures a relist of n pods, one in a hundred
// changed, through the path an informer takes: reflector, atomic RealFIFO,
// indexer. reuse=true gives the queue the indexer to reuse unchanged
// objects from, as informers do; reuse=false does not. The producer's cost
// (a deep copy per listed pod, as decoding would make) is included.
// held-MB is what the queued snapshot keeps alive above the cache.
func BenchmarkReflectorRelist(b *testing.B) {
	const n = 10_000
	for _, streamed := range []bool{false, true} {
		for _, reuse := range []bool{true, false} {
			b.Run(fmt.Sprintf("pods=%d/streamed=%v/reuse=%v", n, streamed, reuse), func(b *testing.B) {
				b.Cleanup(setFeatureForTesting(featureWatchListClient, streamed))
				rb := newRelistBench(b, n, streamed, reuse)
				held := rb.heldMB(b)
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					rb.relist(b)
				}
				b.StopTimer()
				b.ReportMetric(held, "held-MB")
				rb.queue.Close()
			})
		}
	}
}
