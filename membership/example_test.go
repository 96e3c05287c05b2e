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

// Two replicas of a controller share the pods out. Each runs a Member; its
// first range becomes the selector of its informer's ShardedListerWatcher,
// and later ranges go to the Resharder. A fake clientset stands in for the
// API server and a fake source for the pods.
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
	var stopped []chan error
	defer func() {
		cancel()
		for _, done := range stopped {
			<-done
		}
	}()

	// join runs the member of identity and returns its first range.
	join := func(identity string) (*membership.Member, string) {
		first := make(chan string, 1)
		m, err := membership.New(membership.Config{
			Client:    client.CoordinationV1(),
			Namespace: "kube-system",
			Group:     "pod-controller",
			Identity:  identity,
			// The first range starts the informer; a running informer
			// moves with its ListerWatcher's SetShard, so in a
			// controller the Resharder is that ListerWatcher.
			Resharder: membership.ResharderFunc(func(selector string) error {
				select {
				case first <- selector:
				default:
				}
				return nil
			}),
		})
		if err != nil {
			panic(err)
		}
		done := make(chan error, 1)
		stopped = append(stopped, done)
		go func() { done <- m.Run(ctx) }()
		return m, <-first
	}

	a, _ := join("replica-a")
	fmt.Printf("replica-a alone: %+v\n", a.Assignment())
	b, selector := join("replica-b")
	fmt.Printf("replica-b joins: %+v\n", b.Assignment())

	lw, err := cache.NewShardedListerWatcher(pods, selector)
	if err != nil {
		panic(err)
	}
	informer := cache.NewSharedIndexInformer(lw, &v1.Pod{}, 0, cache.Indexers{})
	informerDone := make(chan error, 1)
	stopped = append(stopped, informerDone)
	go func() {
		informer.RunWithContext(ctx)
		informerDone <- nil
	}()
	cache.WaitForCacheSync(ctx.Done(), informer.HasSynced)
	keys := informer.GetStore().ListKeys()
	slices.Sort(keys)
	fmt.Println("replica-b holds", keys)
	// Output:
	// replica-a alone: {Selector:shardRange(object.metadata.uid, '0x0000000000000000', '0x10000000000000000') Index:0 Count:1}
	// replica-b joins: {Selector:shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000') Index:1 Count:2}
	// replica-b holds [ns/pod-1 ns/pod-3]
}
