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
	benchNamespaces   = 100
	benchPodsPerSpace = 1000
)

var (
	benchIndexerOnce sync.Once
	benchIndexer     Indexer
)

// listerBenchIndexer returns the shared benchmark indexer, built once: it
// has the namespace index and holds benchNamespaces*benchPodsPerSpace pods.
func listerBenchIndexer(b *testing.B) Indexer {
	b.Helper()
	benchIndexerOnce.Do(func() {
		idx := NewIndexer(MetaNamespaceKeyFunc, Indexers{NamespaceIndex: MetaNamespaceIndexFunc})
		for ns := range benchNamespaces {
			for i := range benchPodsPerSpace {
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
		benchIndexer = idx
	})
	return benchIndexer
}

// countingAppend returns an AppendFunc that counts, and the counter.
func countingAppend() (AppendFunc, *int) {
	n := 0
	return func(interface{}) { n++ }, &n
}

func BenchmarkListAll(b *testing.B) {
	idx := listerBenchIndexer(b)
	cases := map[string]struct {
		selector labels.Selector
		want     int
	}{
		"everything":      {labels.Everything(), benchNamespaces * benchPodsPerSpace},
		"app=web":         {labels.SelectorFromSet(labels.Set{"app": "web"}), benchNamespaces * benchPodsPerSpace / 10},
		"app=web,shard=3": {labels.SelectorFromSet(labels.Set{"app": "web", "shard": "3"}), -1},
	}
	for name, tc := range cases {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				appendFn, n := countingAppend()
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
		"everything": {labels.Everything(), benchPodsPerSpace},
		"app=web":    {labels.SelectorFromSet(labels.Set{"app": "web"}), benchPodsPerSpace / 10},
	}
	for name, tc := range cases {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				appendFn, n := countingAppend()
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
		if len(objs) != benchPodsPerSpace/10 {
			b.Fatalf("listed %d", len(objs))
		}
	}
}
