package cache

import (
	"runtime"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// BenchmarkValueSharer_Pods decodes pods from their protobuf form, as an
// informer receives them, with and without sharing (as an informer's queue
// does it: shareCopy), and reports the live heap per pod kept. Only the
// decoding and sharing are timed, not the collections around them.
func BenchmarkValueSharer_Pods(b *testing.B) {
	const pods = 2000
	wire := make([][]byte, pods)
	for i := range wire {
		data, err := sharePod(i/200, i).Marshal()
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
				s := newValueSharer()
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
						p = shareCopy(s, p).(*v1.Pod)
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
