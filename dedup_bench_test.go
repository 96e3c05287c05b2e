package cache

import (
	"context"
	"runtime"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// BenchmarkDeduper_Pods decodes pods from their protobuf form, as an
// informer receives them, with and without sharing (as an informer's queue
// does it: dedupCopy), and reports the live heap per pod kept. Only the
// decoding and sharing are timed, not the collections around them.
func BenchmarkDeduper_Pods(b *testing.B) {
	const pods = 2000
	wire := make([][]byte, pods)
	for i := range wire {
		data, err := dedupPod(i/200, i).Marshal()
		if err != nil {
			b.Fatal(err)
		}
		wire[i] = data
	}
	for _, tt := range []struct {
		name  string
		share bool
	}{{"decode", false}, {"decode+share", true}} {
		b.Run(tt.name, func(b *testing.B) {
			var kept []*v1.Pod
			var heap float64
			for b.Loop() {
				b.StopTimer()
				s := newDeduper()
				runtime.GC()
				var before runtime.MemStats
				runtime.ReadMemStats(&before)
				b.StartTimer()
				kept = make([]*v1.Pod, pods)
				for i, data := range wire {
					p := &v1.Pod{}
					if err := p.Unmarshal(data); err != nil {
						b.Fatal(err)
					}
					if tt.share {
						p = dedupCopy(s, p).(*v1.Pod)
					}
					kept[i] = p
				}
				b.StopTimer()
				runtime.GC()
				var after runtime.MemStats
				runtime.ReadMemStats(&after)
				heap = float64(after.HeapAlloc-before.HeapAlloc) / pods
				b.StartTimer()
			}
			runtime.KeepAlive(kept)
			b.ReportMetric(heap, "heapB/pod")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*pods), "ns/pod")
		})
	}
}

// BenchmarkDedupGuard_Round times one round of the guard (dedup_guard.go)
// over the table of an informer holding 20,000 pods of 100 ReplicaSets:
// ns/op is the time to check every shared value once; the guard, spending
// guardBudget of one core, covers the table in ns/op / guardBudget.
func BenchmarkDedupGuard_Round(b *testing.B) {
	const pods = 20000
	s := newDeduper()
	store := NewStore(MetaNamespaceKeyFunc)
	for i := range pods {
		if err := store.Add(dedupCopy(s, dedupPod(i/200, i))); err != nil {
			b.Fatal(err)
		}
	}
	g := newDedupGuard(s, store, &v1.Pod{}, InformerNameAndResource{}, nil)
	var entries []dedupEntry
	for i := range s.stripes {
		entries = s.stripes[i].snapshot(entries)
	}
	ctx := context.Background()
	for b.Loop() {
		if n := g.round(ctx); n != 0 {
			b.Fatalf("%d values reported changed", n)
		}
	}
	b.ReportMetric(float64(len(entries)), "values")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(entries)), "ns/value")
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N)/guardBudget, "s-to-cover")
}

// BenchmarkDedupCompactor_Compact times the compaction of one updated pod
// (dedup_update.go: the compare with the object it replaced and the swap
// in the store) beside the protobuf decoding of the same pod, the work
// every watch event costs: compaction's cost is best read as the ratio of
// the two (make bench-compare, make bench-e2e's churn phase).
func BenchmarkDedupCompactor_Compact(b *testing.B) {
	const pods = 2000
	s := newDeduper()
	store := NewStore(MetaNamespaceKeyFunc).(*cache)
	twins := make([]interface{}, pods)
	updates := make([]*v1.Pod, pods)
	wire := make([][]byte, pods)
	for i := range pods {
		twins[i] = dedupCopy(s, dedupPod(i/200, i))
		p := dedupPod(i/200, i)
		p.ResourceVersion = "2"
		p.Labels["rollout"] = "2"
		updates[i] = p
		data, err := p.Marshal()
		if err != nil {
			b.Fatal(err)
		}
		wire[i] = data
	}
	b.Run("decode", func(b *testing.B) {
		i := 0
		for b.Loop() {
			p := &v1.Pod{}
			if err := p.Unmarshal(wire[i%pods]); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("compact", func(b *testing.B) {
		c := newDedupCompactor(s, store)
		i := 0
		for b.Loop() {
			k := i % pods
			// Caching the update is timed too: a few hundred
			// nanoseconds, too little to stop the timer for.
			if err := store.Update(updates[k]); err != nil {
				b.Fatal(err)
			}
			if !c.compactOne(updates[k].Namespace+"/"+updates[k].Name, twins[k]) {
				b.Fatal("nothing compacted")
			}
			i++
		}
	})
}
