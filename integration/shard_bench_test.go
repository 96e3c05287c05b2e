package integration

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	kcache "github.com/kcache/cache"
	corev1 "k8s.io/api/core/v1"
)

// BenchmarkShardedReplicas measures what one replica of a pod informer
// costs when the pods are split over 1, 2 or 4 replicas: the single
// replica is an unsharded informer, the others use EvenShardSelector. It
// creates the pods once (KCACHE_SHARD_PODS, 10,000 by default), then,
// for each replica in turn, starts its informer on a client of its own,
// waits for it to sync, and records the live-heap growth after a
// collection, the client CPU time spent (user + system: decoding and
// storing, since the server runs in another process), the wall time to
// sync, and the bytes and objects received. The figures are per replica,
// averaged over the replicas and iterations.
//
// It is opt-in (not part of make integration): run it through
// INTEGRATION_PHASES=shard-bench integration/run.sh, which starts the
// API server with the ShardedListAndWatch gate, or with
// `go test -run '^$' -bench BenchmarkShardedReplicas -benchtime 1x` against
// a server of your own.
func BenchmarkShardedReplicas(b *testing.B) {
	s := needServer(b)
	pods := shardPodCount(b)
	namespaces := s.namespaces(b, "shard-bench", 4)
	writes := s.protobufClient(b)
	b.Cleanup(func() {
		if err := deleteAllPods(context.Background(), writes, namespaces); err != nil {
			b.Errorf("cleanup: %v", err)
		}
	})
	work := newShardWorkload(podClient{client: writes}, namespaces, pods)
	began := time.Now()
	if err := work.populate(context.Background()); err != nil {
		b.Fatalf("create %d pods: %v", pods, err)
	}
	b.Logf("created %d pods in %s", pods, time.Since(began).Round(time.Millisecond))
	for _, n := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("replicas=%d", n), func(b *testing.B) {
			var sum replicaCost
			for range b.N {
				for i := range n {
					sum = sum.plus(measureReplica(b, s, i, n))
				}
			}
			per := float64(b.N * n)
			b.ReportMetric(float64(sum.heap)/per/(1<<20), "heap-MiB/replica")
			b.ReportMetric(float64(sum.cpu.Milliseconds())/per, "cpu-ms/replica")
			b.ReportMetric(float64(sum.wall.Milliseconds())/per, "sync-ms/replica")
			b.ReportMetric(float64(sum.bytes)/per/(1<<20), "recv-MiB/replica")
			b.ReportMetric(float64(sum.decoded)/per, "decoded/replica")
			b.ReportMetric(float64(sum.held)/per, "held/replica")
		})
	}
}

// replicaCost is what measureReplica records of one replica.
type replicaCost struct {
	heap, bytes, decoded, held int64
	cpu, wall                  time.Duration
}

func (c replicaCost) plus(o replicaCost) replicaCost {
	return replicaCost{
		heap: c.heap + o.heap, bytes: c.bytes + o.bytes, decoded: c.decoded + o.decoded, held: c.held + o.held,
		cpu: c.cpu + o.cpu, wall: c.wall + o.wall,
	}
}

// measureReplica starts replica i of n (unsharded when n is 1), waits for
// it to sync, records its costs and stops it.
func measureReplica(b *testing.B, s *server, i, n int) replicaCost {
	b.Helper()
	client, bytes := s.countedClient(b)
	list, watch := podClient{client: client}.listWatch("")
	counting := &countingLW{list: list, watch: watch}
	var lw kcache.ListerWatcher = counting
	if n > 1 {
		selector, err := kcache.EvenShardSelector(i, n)
		if err != nil {
			b.Fatal(err)
		}
		if lw, err = kcache.NewShardedListerWatcher(counting, selector); err != nil {
			b.Fatal(err)
		}
	}
	informer := kcache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, kcache.Indexers{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	heapBefore := heapAfterGC()
	cpuBefore := cpuTime(b)
	began := time.Now()
	go func() {
		defer close(done)
		informer.RunWithContext(ctx)
	}()
	defer func() {
		cancel()
		<-done
	}()
	if !kcache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		b.Fatalf("replica %d of %d did not sync", i, n)
	}
	wall := time.Since(began)
	cpu := cpuTime(b) - cpuBefore
	return replicaCost{
		heap:    int64(heapAfterGC()) - int64(heapBefore),
		bytes:   bytes.n.Load(),
		decoded: counting.decoded.Load(),
		held:    int64(len(informer.GetStore().ListKeys())),
		cpu:     cpu,
		wall:    wall,
	}
}

// cpuTime returns the user and system CPU time this process has used.
func cpuTime(b *testing.B) time.Duration {
	b.Helper()
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}
