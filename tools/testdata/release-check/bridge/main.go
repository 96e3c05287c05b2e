// Command bridge adopts kcache through the clientgo bridge: a generated
// informer factory on kcache, with no replace in go.mod.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/kcache/cache/clientgo"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes/fake"
	toolscache "k8s.io/client-go/tools/cache"
)

func main() {
	client := fake.NewClientset(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}})
	factory := clientgo.NewSharedInformerFactory(client, 0)
	pods := factory.Core().V1().Pods()
	if _, err := pods.Informer().AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		DeleteFunc: func(obj interface{}) { _ = clientgo.KcacheTombstone(obj) },
	}); err != nil {
		fmt.Fprintln(os.Stderr, "bridge:", err)
		os.Exit(1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			fmt.Fprintln(os.Stderr, "bridge: not synced:", typ)
			os.Exit(1)
		}
	}
	if _, onKcache := clientgo.Unwrap(pods.Informer()); !onKcache {
		fmt.Fprintln(os.Stderr, "bridge: the factory's pod informer is not on kcache")
		os.Exit(1)
	}
	list, err := pods.Lister().List(labels.Everything())
	if err != nil || len(list) != 1 {
		fmt.Fprintln(os.Stderr, "bridge: want one pod, got", len(list), err)
		os.Exit(1)
	}
	fmt.Println("bridge: generated factory on kcache synced, 1 pod listed")
}
