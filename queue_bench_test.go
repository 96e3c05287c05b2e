package cache

import (
	"strconv"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// benchPods returns n distinct Pods.
func benchPods(n int) []*v1.Pod {
	pods := make([]*v1.Pod, n)
	for i := range pods {
		pods[i] = queuePod("pod-"+strconv.Itoa(i), "1")
	}
	return pods
}

func discard(interface{}, bool) error { return nil }

func discardBatch([]Delta, bool) error { return nil }

// benchmarkAddPop measures one Add followed by one Pop on queue q.
func benchmarkAddPop(b *testing.B, q Queue) {
	pods := benchPods(1024)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := q.Add(pods[i%len(pods)]); err != nil {
			b.Fatal(err)
		}
		if _, err := q.Pop(discard); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDeltaFIFO_AddPop(b *testing.B) {
	benchmarkAddPop(b, NewDeltaFIFOWithOptions(DeltaFIFOOptions{KnownObjects: NewStore(MetaNamespaceKeyFunc), EmitDeltaTypeReplaced: true}))
}

func BenchmarkRealFIFO_AddPop(b *testing.B) {
	b.Run("known objects", func(b *testing.B) {
		benchmarkAddPop(b, NewRealFIFO(MetaNamespaceKeyFunc, NewStore(MetaNamespaceKeyFunc), nil))
	})
	b.Run("atomic unlocked", func(b *testing.B) {
		benchmarkAddPop(b, NewRealFIFOWithOptions(RealFIFOOptions{AtomicEvents: true, UnlockWhileProcessing: true, EmitDeltaTypeBookmark: true}))
	})
}

// BenchmarkRealFIFO_AddPopBatch measures queueing 100 changes to distinct
// objects and handing them out with PopBatch.
func BenchmarkRealFIFO_AddPopBatch(b *testing.B) {
	f := NewRealFIFOWithOptions(RealFIFOOptions{AtomicEvents: true, UnlockWhileProcessing: true})
	pods := benchPods(100)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, p := range pods {
			if err := f.Add(p); err != nil {
				b.Fatal(err)
			}
		}
		if err := f.PopBatch(discardBatch, discard); err != nil {
			b.Fatal(err)
		}
	}
}

// replaceBench holds a store of 100k known objects and a relist that misses
// 1% of them, so Replace also infers deletions.
type replaceBench struct {
	known Store
	list  []interface{}
}

func newReplaceBench(b *testing.B) replaceBench {
	const n = 100_000
	pods := benchPods(n)
	known := NewStore(MetaNamespaceKeyFunc)
	list := make([]interface{}, 0, n)
	for i, p := range pods {
		if err := known.Add(p); err != nil {
			b.Fatal(err)
		}
		if i%100 != 0 {
			list = append(list, p)
		}
	}
	return replaceBench{known: known, list: list}
}

// benchmarkReplace measures one Replace of the relist on a fresh queue made
// by newQueue; building the queue is not timed.
func benchmarkReplace(b *testing.B, newQueue func(known Store) Queue) {
	rb := newReplaceBench(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		q := newQueue(rb.known)
		b.StartTimer()
		if err := q.Replace(rb.list, "2"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDeltaFIFO_Replace100kKnown(b *testing.B) {
	benchmarkReplace(b, func(known Store) Queue {
		return NewDeltaFIFOWithOptions(DeltaFIFOOptions{KnownObjects: known, EmitDeltaTypeReplaced: true})
	})
}

func BenchmarkRealFIFO_Replace100kKnown(b *testing.B) {
	benchmarkReplace(b, func(known Store) Queue {
		return NewRealFIFO(MetaNamespaceKeyFunc, known, nil)
	})
}
