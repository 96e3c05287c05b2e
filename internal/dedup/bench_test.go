package dedup

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
	wire := dedupBenchWire(b, 2000)
	b.Run("decode", func(b *testing.B) { benchDedupPods(b, wire, false) })
	b.Run("decode+share", func(b *testing.B) { benchDedupPods(b, wire, true) })
}

// dedupBenchWire returns the protobuf form of n pods of ReplicaSets of 200.
func dedupBenchWire(b *testing.B, n int) [][]byte {
	wire := make([][]byte, n)
	for i := range wire {
		data, err := dedupPod(i/200, i).Marshal()
		if err != nil {
			b.Fatal(err)
		}
		wire[i] = data
	}
	return wire
}

// benchDedupPods decodes the pods of wire, deduplicating them when share
// is set, and reports the live heap and the time per pod.
func benchDedupPods(b *testing.B, wire [][]byte, share bool) {
	pods := len(wire)
	var kept []*v1.Pod
	var heap float64
	for b.Loop() {
		b.StopTimer()
		s := New(Options{})
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
			if share {
				p = s.Share(p).(*v1.Pod)
			}
			kept[i] = p
		}
		b.StopTimer()
		runtime.GC()
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		heap = float64(after.HeapAlloc-before.HeapAlloc) / float64(pods)
		b.StartTimer()
	}
	runtime.KeepAlive(kept)
	b.ReportMetric(heap, "heapB/pod")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*pods), "ns/pod")
}

// BenchmarkDedupGuard_Round times one round of the guard (guard.go)
// over the table of an informer holding 20,000 pods of 100 ReplicaSets:
// ns/op is the time to check every shared value once; the guard, spending
// tuning.guardBudget of one core, covers the table in ns/op / guardBudget.
func BenchmarkDedupGuard_Round(b *testing.B) {
	g, values := dedupBenchGuard(b, 20000)
	ctx := context.Background()
	for b.Loop() {
		if n := g.Round(ctx); n != 0 {
			b.Fatalf("%d values reported changed", n)
		}
	}
	b.ReportMetric(float64(values), "values")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(values), "ns/value")
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N)/tuning.guardBudget, "s-to-cover")
}

// dedupBenchGuard returns the guard of a store holding pods pods of
// ReplicaSets of 200, deduplicated, and how many values its table holds.
func dedupBenchGuard(b *testing.B, pods int) (*Guard, int) {
	s := New(Options{})
	store := newObjectStore()
	for i := range pods {
		store.add(s.Share(dedupPod(i/200, i)))
	}
	var entries []dedupEntry
	for i := range s.stripes {
		entries = s.stripes[i].snapshot(entries)
	}
	return NewGuard(s, informerOf(store, "*v1.Pod")), len(entries)
}

// BenchmarkDedupCompactor_Compact times the compaction of one updated pod
// (update.go and compactor.go: the compare with the object it replaced and the swap
// in the store) beside the protobuf decoding of the same pod, the work
// every watch event costs: compaction's cost is best read as the ratio of
// the two (make bench-compare, make bench-e2e's churn phase).
func BenchmarkDedupCompactor_Compact(b *testing.B) {
	const pods = 2000
	s := New(Options{})
	store := newObjectStore()
	twins := make([]interface{}, pods)
	updates := make([]*v1.Pod, pods)
	wire := make([][]byte, pods)
	for i := range pods {
		twins[i] = s.Share(dedupPod(i/200, i))
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
		c := NewCompactor(s, store)
		i := 0
		for b.Loop() {
			k := i % pods
			// Caching the update is timed too: a few hundred
			// nanoseconds, too little to stop the timer for.
			store.add(updates[k])
			if !c.compactOne(updates[k].Namespace+"/"+updates[k].Name, twins[k]) {
				b.Fatal("nothing compacted")
			}
			i++
		}
	})
}
