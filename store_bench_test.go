package cache

import (
	"fmt"
	"strconv"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// benchPod is a realistic pod: labels, a node, two containers.
func benchPod(i int, rv int) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       fmt.Sprintf("ns-%d", i%100),
			Name:            fmt.Sprintf("pod-%d", i),
			ResourceVersion: strconv.Itoa(rv),
			Labels:          map[string]string{"app": fmt.Sprintf("app-%d", i%50), "tier": "backend"},
		},
		Spec: v1.PodSpec{
			NodeName: fmt.Sprintf("node-%d", i%1000),
			Containers: []v1.Container{
				{Name: "main", Image: "registry.example/app:v1"},
				{Name: "sidecar", Image: "registry.example/proxy:v2"},
			},
		},
	}
}

// benchIndexers are the namespace, node and app indexes of the benchmarks.
func benchIndexers() Indexers {
	return Indexers{
		NamespaceIndex: MetaNamespaceIndexFunc,
		"node":         byNodeIndex,
		"app": func(obj interface{}) ([]string, error) {
			return []string{obj.(*v1.Pod).Labels["app"]}, nil
		},
	}
}

const indexerBenchPods = 100_000

func benchPodList(n int) []interface{} {
	out := make([]interface{}, n)
	for i := range out {
		out[i] = benchPod(i, i+1)
	}
	return out
}

func filledIndexer(b *testing.B, n int) Indexer {
	b.Helper()
	s := NewIndexer(MetaNamespaceKeyFunc, benchIndexers())
	if err := s.Replace(benchPodList(n), strconv.Itoa(n)); err != nil {
		b.Fatal(err)
	}
	return s
}

func BenchmarkIndexer_Add(b *testing.B) {
	pods := benchPodList(indexerBenchPods)
	s := NewIndexer(MetaNamespaceKeyFunc, benchIndexers())
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_ = s.Add(pods[i%indexerBenchPods])
	}
}

// BenchmarkIndexer_Update changes the node index of one update in ten.
func BenchmarkIndexer_Update(b *testing.B) {
	s := filledIndexer(b, indexerBenchPods)
	updates := make([]*v1.Pod, 1000)
	for i := range updates {
		p := benchPod(i*97%indexerBenchPods, indexerBenchPods+i)
		if i%10 == 0 {
			p.Spec.NodeName = "moved"
		}
		updates[i] = p
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_ = s.Update(updates[i%len(updates)])
	}
}

func BenchmarkIndexer_Delete(b *testing.B) {
	pods := benchPodList(indexerBenchPods)
	s := NewIndexer(MetaNamespaceKeyFunc, benchIndexers())
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p := pods[i%indexerBenchPods]
		b.StopTimer()
		_ = s.Add(p)
		b.StartTimer()
		_ = s.Delete(p)
	}
}

// BenchmarkIndexer_ByIndex looks up a namespace of 1,000 pods.
func BenchmarkIndexer_ByIndex(b *testing.B) {
	s := filledIndexer(b, indexerBenchPods)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := s.ByIndex(NamespaceIndex, "ns-7"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkIndexer_IndexKeys(b *testing.B) {
	s := filledIndexer(b, indexerBenchPods)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := s.IndexKeys("app", "app-3"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkIndexer_List(b *testing.B) {
	s := filledIndexer(b, indexerBenchPods)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_ = s.List()
	}
}

func BenchmarkIndexer_ListKeys(b *testing.B) {
	s := filledIndexer(b, indexerBenchPods)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_ = s.ListKeys()
	}
}

func BenchmarkIndexer_GetByKey(b *testing.B) {
	s := filledIndexer(b, indexerBenchPods)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_, _, _ = s.GetByKey("ns-7/pod-1007")
	}
}

func BenchmarkIndexer_Replace(b *testing.B) {
	pods := benchPodList(indexerBenchPods)
	s := NewIndexer(MetaNamespaceKeyFunc, benchIndexers())
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := s.Replace(pods, "1"); err != nil {
			b.Fatal(err)
		}
	}
}
