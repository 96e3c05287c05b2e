package cache_test

import (
	"context"
	"fmt"
	"slices"
	"sync"

	cache "github.com/kcache/cache"
	framework "github.com/kcache/cache/testing"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// examplePod returns a Pod namespace/name labelled app=app, in phase.
func examplePod(namespace, name, app string, phase v1.PodPhase) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{"app": app}},
		Status:     v1.PodStatus{Phase: phase},
	}
}

// byApp indexes Pods by their "app" label.
func byApp(obj interface{}) ([]string, error) {
	pod, ok := obj.(*v1.Pod)
	if !ok {
		return nil, fmt.Errorf("expected a *v1.Pod, got %T", obj)
	}
	if app, ok := pod.Labels["app"]; ok {
		return []string{app}, nil
	}
	return nil, nil
}

// podNames returns "namespace/name" of each object, sorted: an index
// lookup returns objects in no particular order.
func podNames(objs []interface{}) []string {
	names := make([]string, 0, len(objs))
	for _, obj := range objs {
		pod := obj.(*v1.Pod)
		names = append(names, pod.Namespace+"/"+pod.Name)
	}
	slices.Sort(names)
	return names
}

// An Indexer is a store with secondary indexes: here Pods keyed by
// namespace/name and indexed by their app label and by namespace.
func ExampleNewIndexer() {
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{
		"app":                byApp,
		cache.NamespaceIndex: cache.MetaNamespaceIndexFunc,
	})
	for _, pod := range []*v1.Pod{
		examplePod("shop", "web-1", "web", v1.PodRunning),
		examplePod("shop", "web-2", "web", v1.PodPending),
		examplePod("shop", "db-1", "db", v1.PodRunning),
		examplePod("blog", "web-1", "web", v1.PodRunning),
	} {
		if err := indexer.Add(pod); err != nil {
			fmt.Println("add:", err)
		}
	}

	web, _ := indexer.ByIndex("app", "web")
	fmt.Println("app=web:", podNames(web))
	inShop, _ := indexer.ByIndex(cache.NamespaceIndex, "shop")
	fmt.Println("namespace shop:", podNames(inShop))

	// Updating an object moves it between index values.
	if err := indexer.Update(examplePod("shop", "web-2", "db", v1.PodRunning)); err != nil {
		fmt.Println("update:", err)
	}
	web, _ = indexer.ByIndex("app", "web")
	fmt.Println("app=web after relabelling shop/web-2:", podNames(web))

	obj, exists, _ := indexer.GetByKey("shop/db-1")
	fmt.Println("shop/db-1:", exists, obj.(*v1.Pod).Status.Phase)

	// Output:
	// app=web: [blog/web-1 shop/web-1 shop/web-2]
	// namespace shop: [shop/db-1 shop/web-1 shop/web-2]
	// app=web after relabelling shop/web-2: [blog/web-1 shop/web-1]
	// shop/db-1: true Running
}

// NewInformerWithOptions is the plain informer: a store kept in step with
// the server, and one handler called in order for every change. The fake
// source stands in for an API server.
func ExampleNewInformerWithOptions() {
	source := framework.NewFakeControllerSource()
	defer source.Shutdown()
	source.Add(examplePod("shop", "web-1", "web", v1.PodPending))
	source.Add(examplePod("shop", "web-2", "web", v1.PodPending))

	// The handler runs on the informer's goroutine; it hands each event to
	// this one so that the output has one order.
	events := make(chan string, 10)
	store, controller := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: source,
		ObjectType:    &v1.Pod{},
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc: func(obj interface{}) {
				pod := obj.(*v1.Pod)
				events <- fmt.Sprintf("added %s/%s (%s)", pod.Namespace, pod.Name, pod.Status.Phase)
			},
			UpdateFunc: func(oldObj, newObj interface{}) {
				oldPod, newPod := oldObj.(*v1.Pod), newObj.(*v1.Pod)
				events <- fmt.Sprintf("updated %s/%s: %s -> %s", newPod.Namespace, newPod.Name, oldPod.Status.Phase, newPod.Status.Phase)
			},
			DeleteFunc: func(obj interface{}) {
				if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
					obj = tombstone.Obj
				}
				pod := obj.(*v1.Pod)
				events <- fmt.Sprintf("deleted %s/%s", pod.Namespace, pod.Name)
			},
		},
	})

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { controller.RunWithContext(ctx) })
	defer wg.Wait()
	defer cancel()

	// The initial list arrives as one add per object, in no particular
	// order: sort them for a stable output.
	initial := []string{<-events, <-events}
	slices.Sort(initial)
	fmt.Println(initial[0])
	fmt.Println(initial[1])

	source.Modify(examplePod("shop", "web-1", "web", v1.PodRunning))
	fmt.Println(<-events)
	source.Delete(examplePod("shop", "web-2", "web", v1.PodPending))
	fmt.Println(<-events)

	fmt.Println("store:", store.ListKeys())

	// Output:
	// added shop/web-1 (Pending)
	// added shop/web-2 (Pending)
	// updated shop/web-1: Pending -> Running
	// deleted shop/web-2
	// store: [shop/web-1]
}

// A shared informer serves one cache to any number of handlers.
// WaitForCacheSync returns once the cache holds the initial list; a
// handler's registration says when that handler has processed it.
func ExampleNewSharedIndexInformer() {
	source := framework.NewFakeControllerSource()
	defer source.Shutdown()
	source.Add(examplePod("shop", "web-1", "web", v1.PodRunning))
	source.Add(examplePod("shop", "db-1", "db", v1.PodRunning))

	informer := cache.NewSharedIndexInformer(source, &v1.Pod{}, 0, cache.Indexers{"app": byApp})
	added := make(chan string, 10)
	registration, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) {
			pod := obj.(*v1.Pod)
			added <- pod.Namespace + "/" + pod.Name
		},
	})
	if err != nil {
		fmt.Println("add handler:", err)
		return
	}

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { informer.RunWithContext(ctx) })
	defer wg.Wait()
	defer cancel()

	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced, registration.HasSynced) {
		fmt.Println("cache did not sync")
		return
	}
	// The handler has seen the initial list, in no particular order.
	initial := []string{<-added, <-added}
	slices.Sort(initial)
	fmt.Println("handler saw:", initial)
	fmt.Println("cache:", podNames(informer.GetStore().List()))

	source.Add(examplePod("shop", "web-2", "web", v1.PodPending))
	fmt.Println("handler saw:", <-added)
	// The cache is updated before handlers are told, so it already holds
	// the new Pod.
	web, _ := informer.GetIndexer().ByIndex("app", "web")
	fmt.Println("app=web:", podNames(web))

	// Output:
	// handler saw: [shop/db-1 shop/web-1]
	// cache: [shop/db-1 shop/web-1]
	// handler saw: shop/web-2
	// app=web: [shop/web-1 shop/web-2]
}
