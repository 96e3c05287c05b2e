package cache_test

import (
	"context"
	"fmt"
	"slices"

	cache "github.com/kcache/cache"
	framework "github.com/kcache/cache/testing"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// An informer holding the first half of the pods by UID hash. The fake
// source ignores the selector, as an API server without the
// ShardedListAndWatch feature does, so the objects outside the shard are
// dropped on the client.
func ExampleNewShardedListerWatcher() {
	src := framework.NewFakeControllerSource()
	defer src.Shutdown()
	for i, uid := range []types.UID{
		"0b6f4a1e-3c51-4f0e-9a0c-5d1f2b7e8a91",
		"5a2d9c7e-8b14-4d3a-b6f1-0e9c2a4d7b35",
		"9e71c3b5-2f8a-4c6d-8e0b-7a5d3c1f9e24",
		"c4d8e2f6-a1b3-4957-8c0d-2e6f4a8b1c73",
	} {
		src.Add(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprint("pod-", i), UID: uid}})
	}

	lw, err := cache.NewShardedListerWatcher(src, "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')")
	if err != nil {
		fmt.Println(err)
		return
	}
	informer := cache.NewSharedIndexInformer(lw, &v1.Pod{}, 0, cache.Indexers{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go informer.RunWithContext(ctx)
	cache.WaitForCacheSync(ctx.Done(), informer.HasSynced)

	keys := informer.GetStore().ListKeys()
	slices.Sort(keys)
	fmt.Println(keys, lw.Mode())

	_, err = cache.NewShardedListerWatcher(src, "shardRange(object.metadata.uid, '0x0', '0x8000000000000000')")
	fmt.Println(err)
	// Output:
	// [ns/pod-0 ns/pod-2] client
	// invalid shard selector "shardRange(object.metadata.uid, '0x0', '0x8000000000000000')": at offset 32: range start: "0x0" must have exactly 16 hex digits (did you mean "0x0000000000000000"?)
}
