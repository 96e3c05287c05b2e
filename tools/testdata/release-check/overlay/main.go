// Command overlay adopts kcache through the client-go overlay: client-go's
// own tools/cache import, replaced in go.mod by kcache-overlay's output.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	fcache "k8s.io/client-go/tools/cache/testing"
)

func main() {
	src := fcache.NewFakeControllerSource()
	src.Add(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}})
	inf := cache.NewSharedIndexInformer(src, &v1.Pod{}, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	// SetValueSharing is kcache's: this builds only on the overlay.
	if err := cache.SetValueSharing(inf, true); err != nil {
		fmt.Fprintln(os.Stderr, "overlay:", err)
		os.Exit(1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	go inf.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		fmt.Fprintln(os.Stderr, "overlay: the informer did not sync")
		os.Exit(1)
	}
	pods, err := corelisters.NewPodLister(inf.GetIndexer()).Pods("ns").List(labels.Everything())
	if err != nil || len(pods) != 1 {
		fmt.Fprintln(os.Stderr, "overlay: want one pod, got", len(pods), err)
		os.Exit(1)
	}
	fmt.Println("overlay: client-go's tools/cache is kcache, informer synced, 1 pod listed")
}
