package cache

import (
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// benchInfNamespace holds every benchmark pod.
const benchInfNamespace = "bench"

// benchInfPod returns a pod shaped like a small real one: labels, an owner,
// one container with resources, a node and a status.
func benchInfPod(i, rv int) *v1.Pod {
	name := fmt.Sprintf("web-%06d", i)
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       benchInfNamespace,
			Name:            name,
			UID:             types.UID(fmt.Sprintf("00000000-0000-0000-0000-%012d", i)),
			ResourceVersion: strconv.Itoa(rv),
			Labels:          map[string]string{"app": "web", "shard": strconv.Itoa(i % 16)},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-5d9c", UID: "rs-uid"}},
		},
		Spec: v1.PodSpec{
			NodeName: fmt.Sprintf("node-%03d", i%200),
			Containers: []v1.Container{{
				Name:  "web",
				Image: "registry.example/web:1.2.3",
				Resources: v1.ResourceRequirements{Requests: v1.ResourceList{
					v1.ResourceCPU:    resource.MustParse("100m"),
					v1.ResourceMemory: resource.MustParse("128Mi"),
				}},
			}},
		},
		Status: v1.PodStatus{Phase: v1.PodRunning, PodIP: fmt.Sprintf("10.0.%d.%d", i/250%250, i%250)},
	}
}

// benchInfLW lists n pods, built afresh on every call so that the list is
// garbage once the informer took its items, and serves one watch that the
// benchmark feeds.
type benchInfLW struct {
	n int
	w *watch.FakeWatcher
}

func newBenchInfLW(n int) *benchInfLW {
	return &benchInfLW{n: n, w: watch.NewFakeWithChanSize(1024, false)}
}

func (lw *benchInfLW) List(metav1.ListOptions) (apiruntime.Object, error) {
	list := &v1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: strconv.Itoa(lw.n)}}
	list.Items = make([]v1.Pod, lw.n)
	for i := range lw.n {
		list.Items[i] = *benchInfPod(i, i+1)
	}
	return list, nil
}

func (lw *benchInfLW) Watch(metav1.ListOptions) (watch.Interface, error) { return lw.w, nil }

// IsWatchListSemanticsUnSupported keeps the reflector on plain lists.
func (lw *benchInfLW) IsWatchListSemanticsUnSupported() bool { return true }

// benchInfRun runs inf until the returned stop is called, and waits until
// it synced.
func benchInfRun(b *testing.B, inf SharedInformer) (stop func()) {
	stop = infRun(b, inf)
	<-inf.HasSyncedChecker().Done()
	return stop
}

// benchInfHandlers registers n handlers that each mark wg done when they
// see final, the last update the benchmark sends, recognised by its
// resource version: the informer may hand out a copy that shares values
// with the cache rather than final itself. A handler whose backlog merged
// updates still sees final: merging keeps the newest object.
func benchInfHandlers(b *testing.B, inf SharedInformer, n int, final *v1.Pod, wg *sync.WaitGroup) {
	wg.Add(n)
	for range n {
		_, err := inf.AddEventHandler(ResourceEventHandlerFuncs{UpdateFunc: func(_, obj interface{}) {
			if pod, ok := obj.(*v1.Pod); ok && pod.ResourceVersion == final.ResourceVersion {
				wg.Done()
			}
		}})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// benchInfTemplates returns a prepared pod per name of lw, for
// benchInfModify.
func benchInfTemplates(lw *benchInfLW) []*v1.Pod {
	templates := make([]*v1.Pod, lw.n)
	for i := range templates {
		templates[i] = benchInfPod(i, 0)
	}
	return templates
}

// benchInfModify sends events Modified events for the pods of lw, round
// robin, the last one being final. Each event is a shallow copy of a
// template with a new resource version: two allocations.
func benchInfModify(lw *benchInfLW, templates []*v1.Pod, events int, final *v1.Pod) {
	rv := lw.n
	for i := range events - 1 {
		rv++
		pod := *templates[i%len(templates)]
		pod.ResourceVersion = strconv.Itoa(rv)
		lw.w.Modify(&pod)
	}
	lw.w.Modify(final)
}

// BenchmarkSharedInformer_Events measures the rate of watch events through
// a synced informer of 10k pods until every handler saw the last one. The
// producer's cost (copying a prepared pod per event) is included.
func BenchmarkSharedInformer_Events(b *testing.B) {
	const pods = 10000
	for _, handlers := range []int{1, 10} {
		b.Run(fmt.Sprintf("handlers=%d", handlers), func(b *testing.B) {
			lw := newBenchInfLW(pods)
			inf := NewSharedIndexInformer(lw, &v1.Pod{}, 0, Indexers{NamespaceIndex: MetaNamespaceIndexFunc})
			final := benchInfPod(0, pods+b.N+1)
			var seen sync.WaitGroup
			benchInfHandlers(b, inf, handlers, final, &seen)
			stop := benchInfRun(b, inf)
			defer stop()

			templates := benchInfTemplates(lw)
			b.ReportAllocs()
			b.ResetTimer()
			benchInfModify(lw, templates, b.N, final)
			seen.Wait()
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// BenchmarkSharedInformer_MemoryPerPod reports the heap kept per cached pod
// by a synced informer of 100k pods (the pods themselves included), from
// the in-use heap after a full collection before and after.
func BenchmarkSharedInformer_MemoryPerPod(b *testing.B) {
	const pods = 100000
	var perPod float64
	for range b.N {
		lw := newBenchInfLW(pods)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		inf := NewSharedIndexInformer(lw, &v1.Pod{}, 0, Indexers{NamespaceIndex: MetaNamespaceIndexFunc})
		stop := benchInfRun(b, inf)
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&after)
		if got := len(inf.GetStore().ListKeys()); got != pods {
			b.Fatalf("cached %d pods, want %d", got, pods)
		}
		perPod = float64(int64(after.HeapInuse)-int64(before.HeapInuse)) / pods
		stop()
		runtime.KeepAlive(inf)
	}
	b.ReportMetric(perPod, "bytes/pod")
}

// BenchmarkSharedInformer_WritesWithReaders measures the event rate into a
// 10k-pod namespace while readers list the whole namespace through the
// namespace index in a loop.
func BenchmarkSharedInformer_WritesWithReaders(b *testing.B) {
	for _, readers := range []int{0, 1, 10} {
		b.Run(fmt.Sprintf("readers=%d", readers), func(b *testing.B) { benchWritesWithReaders(b, readers) })
	}
}

// benchWritesWithReaders is one run of
// BenchmarkSharedInformer_WritesWithReaders with that many readers.
func benchWritesWithReaders(b *testing.B, readers int) {
	const pods = 10000
	lw := newBenchInfLW(pods)
	inf := NewSharedIndexInformer(lw, &v1.Pod{}, 0, Indexers{NamespaceIndex: MetaNamespaceIndexFunc})
	final := benchInfPod(0, pods+b.N+1)
	var seen sync.WaitGroup
	benchInfHandlers(b, inf, 1, final, &seen)
	stop := benchInfRun(b, inf)
	defer stop()

	quit := make(chan struct{})
	var reads atomic.Int64
	var readersDone sync.WaitGroup
	for range readers {
		readersDone.Go(func() {
			for {
				select {
				case <-quit:
					return
				default:
				}
				n := 0
				err := ListAllByNamespace(inf.GetIndexer(), benchInfNamespace, labels.Everything(), func(interface{}) { n++ })
				if err != nil || n != pods {
					panic(fmt.Sprintf("listed %d pods (%v), want %d", n, err, pods))
				}
				reads.Add(1)
			}
		})
	}

	templates := benchInfTemplates(lw)
	b.ReportAllocs()
	b.ResetTimer()
	benchInfModify(lw, templates, b.N, final)
	seen.Wait()
	b.StopTimer()
	close(quit)
	readersDone.Wait()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(reads.Load())/b.Elapsed().Seconds(), "lists/s")
}
