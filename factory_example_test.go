package cache_test

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	cache "github.com/kcache/cache"
	framework "github.com/kcache/cache/testing"
)

// Two consumers ask the factory for the pods informer and get the same one;
// the factory starts it once and waits for its cache.
func ExampleInformerFactory() {
	source := framework.NewFakeControllerSource()
	defer source.Shutdown()
	source.Add(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-0"}})
	source.Add(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-1"}})

	pods := v1.SchemeGroupVersion.WithResource("pods")
	newLW := func() cache.ListerWatcher { return source }

	factory := cache.NewInformerFactory(0)
	defer factory.Shutdown()
	forControllerA := factory.InformerFor(pods, &v1.Pod{}, newLW)
	forControllerB := cache.TypedInformerFor[*v1.Pod](factory, pods, newLW)

	stop := make(chan struct{})
	defer close(stop)
	factory.Start(stop)
	synced := factory.WaitForCacheSync(stop)

	inDefault, _ := forControllerB.GetTypedIndexer().ByTypedIndex(cache.NamespaceIndex, "default")
	fmt.Println("synced:", synced[pods])
	fmt.Println("shared:", forControllerA.GetIndexer() == forControllerB.GetIndexer())
	fmt.Println("pods in default:", len(inDefault))
	// Output:
	// synced: true
	// shared: true
	// pods in default: 2
}
