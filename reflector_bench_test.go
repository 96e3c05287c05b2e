package cache

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// rfBenchPod is a pod of realistic shape: labels, an annotation, two
// containers with resources, a status.
func rfBenchPod(i int) v1.Pod {
	name := fmt.Sprintf("pod-%06d", i)
	container := func(n string) v1.Container {
		return v1.Container{
			Name:  n,
			Image: "registry.example.com/team/app:1.2.3",
			Resources: v1.ResourceRequirements{
				Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("128Mi")},
				Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("1"), v1.ResourceMemory: resource.MustParse("512Mi")},
			},
		}
	}
	return v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       fmt.Sprintf("ns-%03d", i%100),
			Name:            name,
			UID:             types.UID("uid-" + name),
			ResourceVersion: fmt.Sprint(i + 1),
			Labels:          map[string]string{"app": "bench", "shard": fmt.Sprint(i % 16)},
			Annotations:     map[string]string{"example.com/owner": "team"},
		},
		Spec: v1.PodSpec{
			NodeName:   fmt.Sprintf("node-%04d", i%500),
			Containers: []v1.Container{container("app"), container("sidecar")},
		},
		Status: v1.PodStatus{Phase: v1.PodRunning, PodIP: "10.0.0.1"},
	}
}

// rfBenchList builds a pod list of n items at resource version n.
func rfBenchList(n int) *v1.PodList {
	l := &v1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: fmt.Sprint(n)}, Items: make([]v1.Pod, n)}
	for i := range n {
		l.Items[i] = rfBenchPod(i)
	}
	return l
}

// rfPagedLister serves list in pages of the requested limit.
func rfPagedLister(list *v1.PodList) func(context.Context, metav1.ListOptions) (apiruntime.Object, error) {
	return func(_ context.Context, opts metav1.ListOptions) (apiruntime.Object, error) {
		from := 0
		if opts.Continue != "" {
			fmt.Sscanf(opts.Continue, "%d", &from)
		}
		to := len(list.Items)
		if opts.Limit > 0 && from+int(opts.Limit) < to {
			to = from + int(opts.Limit)
		}
		// A fresh page, as decoding a response would produce.
		page := &v1.PodList{ListMeta: list.ListMeta, Items: make([]v1.Pod, to-from)}
		copy(page.Items, list.Items[from:to])
		if to < len(list.Items) {
			page.Continue = fmt.Sprint(to)
		}
		return page, nil
	}
}

// rfHeapProbe is a store that samples the heap around Replace, when the
// list, its copied items and the filled store are all alive.
type rfHeapProbe struct {
	Store
	peak uint64
}

func (p *rfHeapProbe) sample() {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	p.peak = max(p.peak, m.HeapAlloc)
}

func (p *rfHeapProbe) Replace(list []interface{}, rv string) error {
	p.sample()
	err := p.Store.Replace(list, rv)
	p.sample()
	return err
}

// BenchmarkReflectorList measures a list going into a store, per list. The
// response is built once outside the timer (no decoding); pages are fresh
// copies of it, as a client would decode them. peak-heap-MB is the heap in
// use around Replace, above the heap before the list (which already holds
// the response): the reflector's own overhead plus the store's.
func BenchmarkReflectorList(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		list := rfBenchList(n)
		for _, mode := range []struct {
			name     string
			pageSize int64
			lister   func(context.Context, metav1.ListOptions) (apiruntime.Object, error)
		}{
			{name: "one-page", lister: func(context.Context, metav1.ListOptions) (apiruntime.Object, error) { return list, nil }},
			{name: "pages-of-500", pageSize: 500, lister: rfPagedLister(list)},
		} {
			b.Run(fmt.Sprintf("pods=%d/%s", n, mode.name), func(b *testing.B) {
				b.Cleanup(setFeatureForTesting(featureWatchListClient, false))
				lw := &rfLW{listFn: mode.lister}
				newReflector := func(store ReflectorStore) *Reflector {
					r := NewReflector(lw, &v1.Pod{}, store, 0)
					r.WatchListPageSize = mode.pageSize
					return r
				}
				ctx := context.Background()

				probe := &rfHeapProbe{Store: NewStore(MetaNamespaceKeyFunc)}
				runtime.GC()
				var before runtime.MemStats
				runtime.ReadMemStats(&before)
				if res := newReflector(probe).stepList(ctx); res.outcome != outcomeSynced {
					b.Fatalf("list: %+v", res)
				}
				peakMB := float64(probe.peak-min(probe.peak, before.HeapAlloc)) / (1 << 20)
				probe = nil

				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					if res := newReflector(NewStore(MetaNamespaceKeyFunc)).stepList(ctx); res.outcome != outcomeSynced {
						b.Fatalf("list: %+v", res)
					}
				}
				b.ReportMetric(peakMB, "peak-heap-MB")
			})
		}
	}
}

// rfCountingStore counts updates and closes done at the target.
type rfCountingStore struct {
	Store
	n, target int64
	done      chan struct{}
}

func (s *rfCountingStore) Update(obj interface{}) error {
	err := s.Store.Update(obj)
	if atomic.AddInt64(&s.n, 1) == s.target {
		close(s.done)
	}
	return err
}

// BenchmarkReflectorWatchEvents measures watch events going through the
// reflector into a store, per event.
func BenchmarkReflectorWatchEvents(b *testing.B) {
	b.Cleanup(setFeatureForTesting(featureWatchListClient, false))
	const distinct = 1000
	events := make([]watch.Event, distinct)
	for i := range events {
		p := rfBenchPod(i)
		p.ResourceVersion = fmt.Sprint(distinct + i)
		events[i] = watch.Event{Type: watch.Modified, Object: &p}
	}
	stream := &rfStream{ch: make(chan watch.Event, 1024), stopped: make(chan struct{})}
	opened := make(chan struct{})
	lw := &rfLW{
		listFn: rfLists(rfReply{obj: rfPodList("1", "")}),
		watchFn: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			close(opened)
			return stream, nil
		},
	}
	store := &rfCountingStore{Store: NewStore(MetaNamespaceKeyFunc), target: int64(b.N), done: make(chan struct{})}
	r := NewReflector(lw, &v1.Pod{}, store, 0)
	ctx, cancel := context.WithCancel(context.Background())
	finished := make(chan error, 1)
	go func() { finished <- r.ListAndWatchWithContext(ctx) }()
	<-opened

	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		stream.ch <- events[i%distinct]
	}
	<-store.done
	b.StopTimer()
	cancel()
	if err := <-finished; err != nil {
		b.Fatal(err)
	}
}
