package cache

import (
	"fmt"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Sizes of the benchmark cache: 100 namespaces of 1000 pods each, one pod
// in ten labelled app=web.
const (
	listerBenchNamespaces       = 100
	listerBenchPodsPerNamespace = 1000
)

var (
	listerBenchOnce  sync.Once
	listerBenchStore Indexer
)

// listerBenchIndexer returns the shared benchmark indexer, built once: it
// has the namespace index and holds listerBenchNamespaces*listerBenchPodsPerNamespace pods.
func listerBenchIndexer(b *testing.B) Indexer {
	b.Helper()
	listerBenchOnce.Do(func() {
		idx := NewIndexer(MetaNamespaceKeyFunc, Indexers{NamespaceIndex: MetaNamespaceIndexFunc})
		for ns := range listerBenchNamespaces {
			for i := range listerBenchPodsPerNamespace {
				app := "batch"
				if i%10 == 0 {
					app = "web"
				}
				pod := listerPod(fmt.Sprintf("ns-%03d", ns), fmt.Sprintf("pod-%04d", i),
					map[string]string{"app": app, "shard": fmt.Sprint(i % 7)})
				if err := idx.Add(pod); err != nil {
					panic(err)
				}
			}
		}
		listerBenchStore = idx
	})
	return listerBenchStore
}

// listerCountingAppend returns an AppendFunc that counts, and the counter.
func listerCountingAppend() (AppendFunc, *int) {
	n := 0
	return func(interface{}) { n++ }, &n
}

func BenchmarkListAll(b *testing.B) {
	idx := listerBenchIndexer(b)
	cases := map[string]struct {
		selector labels.Selector
		want     int
	}{
		"everything":      {labels.Everything(), listerBenchNamespaces * listerBenchPodsPerNamespace},
		"app=web":         {labels.SelectorFromSet(labels.Set{"app": "web"}), listerBenchNamespaces * listerBenchPodsPerNamespace / 10},
		"app=web,shard=3": {labels.SelectorFromSet(labels.Set{"app": "web", "shard": "3"}), -1},
	}
	for name, tc := range cases {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				appendFn, n := listerCountingAppend()
				if err := ListAll(idx, tc.selector, appendFn); err != nil {
					b.Fatal(err)
				}
				if tc.want >= 0 && *n != tc.want {
					b.Fatalf("listed %d, want %d", *n, tc.want)
				}
			}
		})
	}
}

func BenchmarkListAllByNamespace(b *testing.B) {
	idx := listerBenchIndexer(b)
	cases := map[string]struct {
		selector labels.Selector
		want     int
	}{
		"everything": {labels.Everything(), listerBenchPodsPerNamespace},
		"app=web":    {labels.SelectorFromSet(labels.Set{"app": "web"}), listerBenchPodsPerNamespace / 10},
	}
	for name, tc := range cases {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				appendFn, n := listerCountingAppend()
				if err := ListAllByNamespace(idx, "ns-042", tc.selector, appendFn); err != nil {
					b.Fatal(err)
				}
				if *n != tc.want {
					b.Fatalf("listed %d, want %d", *n, tc.want)
				}
			}
		})
	}
}

func BenchmarkGenericLister_ByNamespaceList(b *testing.B) {
	lister := NewGenericLister(listerBenchIndexer(b), schema.GroupResource{Resource: "pods"})
	web := labels.SelectorFromSet(labels.Set{"app": "web"})
	b.ReportAllocs()
	for b.Loop() {
		objs, err := lister.ByNamespace("ns-042").List(web)
		if err != nil {
			b.Fatal(err)
		}
		if len(objs) != listerBenchPodsPerNamespace/10 {
			b.Fatalf("listed %d", len(objs))
		}
	}
}
