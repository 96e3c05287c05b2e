// Command importchange adopts kcache by the import change: kcache's package
// where client-go's tools/cache was, on a fake API server.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	cache "github.com/kcache/cache"
	framework "github.com/kcache/cache/testing"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func main() {
	src := framework.NewFakeControllerSource()
	src.Add(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}})
	inf := cache.NewSharedIndexInformer(src, &v1.Pod{}, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	go inf.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		fmt.Fprintln(os.Stderr, "importchange: the informer did not sync")
		os.Exit(1)
	}
	pods, err := inf.GetIndexer().ByIndex(cache.NamespaceIndex, "ns")
	if err != nil || len(pods) != 1 {
		fmt.Fprintln(os.Stderr, "importchange: want one pod in ns, got", len(pods), err)
		os.Exit(1)
	}
	fmt.Println("importchange: kcache informer synced, 1 pod cached")
}
