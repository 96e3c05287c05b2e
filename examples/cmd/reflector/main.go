// Command reflector shows a Reflector on its own: it lists and watches the
// Pods of a small simulated cluster and writes what it sees into a store.
// The store here prints every call it gets, so you see the watch events
// arrive, the reflector resume after a dropped watch, and list again after
// a 410 Gone.
//
//	go run ./cmd/reflector
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"time"

	cache "github.com/kcache/cache"
	"github.com/kcache/cache/examples/internal/simcluster"
	v1 "k8s.io/api/core/v1"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "reflector:", err)
		os.Exit(1)
	}
}

// printingStore is a cache.Store that reports each call the reflector
// makes, after making it.
type printingStore struct {
	cache.Store
	calls chan<- string
}

func (s printingStore) Add(obj interface{}) error {
	err := s.Store.Add(obj)
	s.calls <- "store.Add     " + describe(obj) + "   (watch event ADDED)"
	return err
}

func (s printingStore) Update(obj interface{}) error {
	err := s.Store.Update(obj)
	s.calls <- "store.Update  " + describe(obj) + "   (watch event MODIFIED)"
	return err
}

func (s printingStore) Delete(obj interface{}) error {
	err := s.Store.Delete(obj)
	s.calls <- "store.Delete  " + describe(obj) + "   (watch event DELETED)"
	return err
}

func (s printingStore) Replace(list []interface{}, rv string) error {
	err := s.Store.Replace(list, rv)
	s.calls <- fmt.Sprintf("store.Replace %d pods at resource version %s (a LIST): %v", len(list), rv, sortedKeys(s.Store))
	return err
}

// sortedKeys returns the store's keys in order: a store lists them in no
// particular order.
func sortedKeys(s cache.Store) []string {
	keys := s.ListKeys()
	slices.Sort(keys)
	return keys
}

func describe(obj interface{}) string {
	pod := obj.(*v1.Pod)
	return fmt.Sprintf("%s/%s %s rv=%s", pod.Namespace, pod.Name, pod.Status.Phase, pod.ResourceVersion)
}

func run(ctx context.Context, out io.Writer) error {
	cluster := simcluster.New(simcluster.Options{})
	defer cluster.Close()
	for _, name := range []string{"web-1", "web-2", "api-1"} {
		if _, err := cluster.Create(simcluster.NewPod("shop", name, name[:3])); err != nil {
			return err
		}
	}

	calls := make(chan string, 16)
	store := printingStore{Store: cache.NewStore(cache.MetaNamespaceKeyFunc), calls: calls}
	// ListerWatcher() is a cache.ListWatch over the cluster's List and
	// Watch, as a client-go clientset would provide.
	reflector := cache.NewReflectorWithOptions(cluster.ListerWatcher(), &v1.Pod{}, store, cache.ReflectorOptions{Name: "pods"})

	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { reflector.RunWithContext(ctx) })
	defer wg.Wait()
	defer cancel()

	// expect prints the store calls that follow an action.
	expect := func(n int) error {
		for range n {
			select {
			case call := <-calls:
				fmt.Fprintln(out, "   ", call)
			case <-time.After(30 * time.Second):
				return errors.New("timed out waiting for the reflector")
			}
		}
		return nil
	}
	pod := func(name string) *v1.Pod {
		p, _ := cluster.Get("shop", name)
		return p
	}

	fmt.Fprintln(out, "cluster: 3 pods; the reflector lists them, then watches from the list's resource version")
	if err := expect(1); err != nil {
		return err
	}

	fmt.Fprintln(out, "cluster: create shop/web-3")
	if _, err := cluster.Create(simcluster.NewPod("shop", "web-3", "web")); err != nil {
		return err
	}
	if err := expect(1); err != nil {
		return err
	}
	fmt.Fprintln(out, "cluster: shop/web-1 starts running")
	if _, err := cluster.Update(simcluster.WithPhase(pod("web-1"), v1.PodRunning)); err != nil {
		return err
	}
	if err := expect(1); err != nil {
		return err
	}

	fmt.Fprintln(out, "cluster: drop every watch; shop/web-3 starts running meanwhile")
	cluster.DropWatches()
	if _, err := cluster.Update(simcluster.WithPhase(pod("web-3"), v1.PodRunning)); err != nil {
		return err
	}
	fmt.Fprintln(out, "    (the reflector watches again from the last resource version it saw: nothing is missed)")
	if err := expect(1); err != nil {
		return err
	}

	fmt.Fprintln(out, "cluster: delete shop/api-1")
	if err := cluster.Delete("shop", "api-1"); err != nil {
		return err
	}
	if err := expect(1); err != nil {
		return err
	}

	fmt.Fprintln(out, "cluster: compact the history (watchers get 410 Gone) after deleting shop/web-2 unseen")
	if err := cluster.Expire(func(tx simcluster.Tx) error { return tx.Delete("shop", "web-2") }); err != nil {
		return err
	}
	fmt.Fprintln(out, "    (the reflector cannot resume its watch: it lists again)")
	if err := expect(1); err != nil {
		return err
	}
	fmt.Fprintln(out, "store now:", sortedKeys(store))
	return nil
}
