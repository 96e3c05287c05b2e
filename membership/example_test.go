package membership_test

import (
	"context"
	"fmt"
	"slices"

	cache "github.com/kcache/cache"
	"github.com/kcache/cache/membership"
	framework "github.com/kcache/cache/testing"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
)

// shardedPods is a replica's pod source: the first range the Member hands
// out builds its ShardedListerWatcher, and later ranges move it. Its
// SetShard runs on the Member's Run goroutine.
type shardedPods struct {
	all cache.ListerWatcher
	// lw is set by the first SetShard, which then closes ready; read it
	// only after ready is closed.
	lw    *cache.ShardedListerWatcher
	ready chan struct{}
}

func (p *shardedPods) SetShard(selector string) error {
	if p.lw == nil {
		lw, err := cache.NewShardedListerWatcher(p.all, selector)
		if err != nil {
			return err
		}
		p.lw = lw
		close(p.ready)
		return nil
	}
	// The informer lists again under the new selector: adds for the pods
	// that entered its shard, cache.MovedOutOfShard for those that left.
	return p.lw.SetShard(selector)
}

// Two replicas of a controller share the pods out. Each runs a Member
// whose Resharder builds, then moves, the ShardedListerWatcher of its pod
// informer. A fake clientset stands in for the API server and a fake
// source for the pods.
func Example() {
	client := fake.NewClientset()
	pods := framework.NewFakeControllerSource()
	defer pods.Shutdown()
	for i, uid := range []types.UID{
		"0b6f4a1e-3c51-4f0e-9a0c-5d1f2b7e8a91",
		"5a2d9c7e-8b14-4d3a-b6f1-0e9c2a4d7b35",
		"9e71c3b5-2f8a-4c6d-8e0b-7a5d3c1f9e24",
		"c4d8e2f6-a1b3-4957-8c0d-2e6f4a8b1c73",
	} {
		pods.Add(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprint("pod-", i), UID: uid}})
	}

	ctx, cancel := context.WithCancel(context.Background())
	var stopped []chan struct{}
	defer func() {
		cancel()
		for _, done := range stopped {
			<-done
		}
	}()
	// goRun runs f until ctx is done; the deferred function waits for it.
	goRun := func(f func(context.Context)) {
		done := make(chan struct{})
		stopped = append(stopped, done)
		go func() {
			defer close(done)
			f(ctx)
		}()
	}

	// join starts the replica of identity: its Member, and once the Member
	// has given it a range, its pod informer.
	join := func(identity string) (*membership.Member, cache.SharedIndexInformer) {
		source := &shardedPods{all: pods, ready: make(chan struct{})}
		m, err := membership.New(membership.Config{
			Client:    client.CoordinationV1(),
			Namespace: "kube-system",
			Group:     "pod-controller",
			Identity:  identity,
			Resharder: source,
			OnChange: func(selector string, index, count int) {
				// Logs and metrics; a controller also pauses while
				// index is -1 (no range).
			},
		})
		if err != nil {
			panic(err)
		}
		goRun(func(ctx context.Context) { _ = m.Run(ctx) })
		<-source.ready
		informer := cache.NewSharedIndexInformer(source.lw, &v1.Pod{}, 0, cache.Indexers{})
		goRun(informer.RunWithContext)
		cache.WaitForCacheSync(ctx.Done(), informer.HasSynced)
		return m, informer
	}

	a, _ := join("replica-a")
	fmt.Printf("replica-a alone: %+v\n", a.Assignment())
	b, informer := join("replica-b")
	fmt.Printf("replica-b joins: %+v\n", b.Assignment())
	keys := informer.GetStore().ListKeys()
	slices.Sort(keys)
	fmt.Println("replica-b holds", keys)
	// Output:
	// replica-a alone: {Selector:shardRange(object.metadata.uid, '0x0000000000000000', '0x10000000000000000') Index:0 Count:1}
	// replica-b joins: {Selector:shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000') Index:1 Count:2}
	// replica-b holds [ns/pod-1 ns/pod-3]
}
