// Command informer shows the plain informer, NewInformerWithOptions: a
// store kept in step with the cluster and one handler told about every
// change, in order, including a deletion it could only infer after the
// cluster compacted its history.
//
//	go run ./cmd/informer
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
		fmt.Fprintln(os.Stderr, "informer:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out io.Writer) error {
	cluster := simcluster.New(simcluster.Options{})
	defer cluster.Close()
	for _, name := range []string{"web-1", "web-2"} {
		if _, err := cluster.Create(simcluster.NewPod("shop", name, "web")); err != nil {
			return err
		}
	}

	// The handler runs on the informer's goroutine, one call at a time;
	// it passes each line to this goroutine, which prints them.
	events := make(chan string, 16)
	store, controller := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: cluster.ListerWatcher(),
		ObjectType:    &v1.Pod{},
		Handler: cache.ResourceEventHandlerDetailedFuncs{
			AddFunc: func(obj interface{}, isInInitialList bool) {
				pod := obj.(*v1.Pod)
				from := "watch"
				if isInInitialList {
					from = "initial list"
				}
				events <- fmt.Sprintf("OnAdd    %s/%s %s (from the %s)", pod.Namespace, pod.Name, pod.Status.Phase, from)
			},
			UpdateFunc: func(oldObj, newObj interface{}) {
				oldPod, newPod := oldObj.(*v1.Pod), newObj.(*v1.Pod)
				events <- fmt.Sprintf("OnUpdate %s/%s %s -> %s", newPod.Namespace, newPod.Name, oldPod.Status.Phase, newPod.Status.Phase)
			},
			DeleteFunc: func(obj interface{}) {
				// A deletion the informer inferred from a relist comes
				// wrapped: the object is the last state it knew.
				if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
					events <- fmt.Sprintf("OnDelete %s (a DeletedFinalStateUnknown: deleted while the watch was down)", tomb.Key)
					return
				}
				pod := obj.(*v1.Pod)
				events <- fmt.Sprintf("OnDelete %s/%s", pod.Namespace, pod.Name)
			},
		},
	})

	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { controller.RunWithContext(ctx) })
	defer wg.Wait()
	defer cancel()

	// expect prints the next n handler calls; sorted, since the initial
	// list comes in no particular order.
	expect := func(n int) error {
		var got []string
		for range n {
			select {
			case e := <-events:
				got = append(got, e)
			case <-time.After(30 * time.Second):
				return errors.New("timed out waiting for the handler")
			}
		}
		slices.Sort(got)
		for _, e := range got {
			fmt.Fprintln(out, "   ", e)
		}
		return nil
	}
	step := func(say string, do func() error, calls int) error {
		fmt.Fprintln(out, say)
		if err := do(); err != nil {
			return err
		}
		return expect(calls)
	}
	pod := func(name string) *v1.Pod {
		p, _ := cluster.Get("shop", name)
		return p
	}

	if err := step("start: the informer lists shop/web-1 and shop/web-2", func() error { return nil }, 2); err != nil {
		return err
	}
	if !cache.WaitForCacheSync(ctx.Done(), controller.HasSynced) {
		return errors.New("the informer did not sync")
	}
	fmt.Fprintln(out, "synced")
	if err := step("cluster: create shop/web-3", func() error {
		_, err := cluster.Create(simcluster.NewPod("shop", "web-3", "web"))
		return err
	}, 1); err != nil {
		return err
	}
	if err := step("cluster: shop/web-1 starts running", func() error {
		_, err := cluster.Update(simcluster.WithPhase(pod("web-1"), v1.PodRunning))
		return err
	}, 1); err != nil {
		return err
	}
	if err := step("cluster: delete shop/web-3", func() error { return cluster.Delete("shop", "web-3") }, 1); err != nil {
		return err
	}
	if err := step("cluster: delete shop/web-2 while the watch is down, then compact the history (410 Gone)", func() error {
		return cluster.Expire(func(tx simcluster.Tx) error { return tx.Delete("shop", "web-2") })
	}, 2); err != nil {
		return err
	}
	fmt.Fprintln(out, "    (the relist hands every object over again: shop/web-1, unchanged, comes as an update with old == new)")
	keys := store.ListKeys()
	slices.Sort(keys)
	fmt.Fprintln(out, "store:", keys)
	return nil
}
