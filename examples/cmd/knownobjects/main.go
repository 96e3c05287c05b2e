// Command knownobjects shows why a DeltaFIFO fed by a reflector needs
// KnownObjects. A consumer pops the queue into its own cache. Then a Pod is
// deleted while the reflector cannot watch, and the reflector must list
// again: the new list simply lacks the Pod. Only a queue that can look at
// the consumer's cache (KnownObjects) notices that a Pod it handed out is
// missing from the list and queues its deletion; without it the consumer
// keeps the deleted Pod forever.
//
//	go run ./cmd/knownobjects
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	cache "github.com/kcache/cache"
	"github.com/kcache/cache/examples/internal/simcluster"
	v1 "k8s.io/api/core/v1"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "knownobjects:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out io.Writer) error {
	for _, withKnownObjects := range []bool{false, true} {
		if withKnownObjects {
			fmt.Fprintln(out, "\n== with KnownObjects: the queue checks the consumer's cache")
		} else {
			fmt.Fprintln(out, "== without KnownObjects")
		}
		if err := scenario(ctx, out, withKnownObjects); err != nil {
			return err
		}
	}
	return nil
}

// scenario runs the story once.
func scenario(ctx context.Context, out io.Writer, withKnownObjects bool) error {
	cluster := simcluster.New(simcluster.Options{})
	defer cluster.Close()
	for _, name := range []string{"web-1", "web-2", "web-3"} {
		if _, err := cluster.Create(simcluster.NewPod("shop", name, "web")); err != nil {
			return err
		}
	}

	// The consumer's cache. DeletionHandlingMetaNamespaceKeyFunc also
	// keys the tombstones (DeletedFinalStateUnknown) a relist produces.
	consumerCache := cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, cache.Indexers{})
	opts := cache.DeltaFIFOOptions{KeyFunction: cache.MetaNamespaceKeyFunc, EmitDeltaTypeReplaced: true}
	if withKnownObjects {
		opts.KnownObjects = consumerCache
	}
	queue := cache.NewDeltaFIFOWithOptions(opts)
	reflector := cache.NewReflectorWithOptions(cluster.ListerWatcher(), &v1.Pod{}, queue, cache.ReflectorOptions{Name: "pods"})

	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	popped := make(chan string, 16)
	wg.Go(func() { reflector.RunWithContext(ctx) })
	wg.Go(func() { consume(queue, consumerCache, popped) })
	defer wg.Wait()
	defer queue.Close()
	defer cancel()

	fmt.Fprintln(out, "cluster: shop/web-1, shop/web-2, shop/web-3; the reflector lists them into the queue")
	if err := expectPops(out, popped, 3); err != nil {
		return err
	}
	fmt.Fprintln(out, "consumer's cache:", sortedKeys(consumerCache))

	fmt.Fprintln(out, "cluster: shop/web-2 is deleted while the watch is down, and the history is compacted (410 Gone)")
	if err := cluster.Expire(func(tx simcluster.Tx) error { return tx.Delete("shop", "web-2") }); err != nil {
		return err
	}
	fmt.Fprintln(out, "reflector: lists again and calls queue.Replace([shop/web-1 shop/web-3])")
	pops := 2
	if withKnownObjects {
		pops = 3
	}
	if err := expectPops(out, popped, pops); err != nil {
		return err
	}
	truth, cached := podKeys(cluster.Pods()), sortedKeys(consumerCache)
	fmt.Fprintln(out, "cluster:         ", truth)
	fmt.Fprintln(out, "consumer's cache:", cached)
	if slices.Equal(truth, cached) {
		fmt.Fprintln(out, "=> the cache is in step with the cluster")
	} else {
		fmt.Fprintln(out, "=> the cache is stale: it keeps a Pod the cluster deleted, and no event will ever remove it")
	}
	return nil
}

// consume pops the queue until it is closed, applying each object's
// changes to the consumer's cache and reporting them on popped. Pop holds
// the queue's lock while this runs, so the queue and the cache never
// disagree about what was handed out.
func consume(queue *cache.DeltaFIFO, consumerCache cache.Indexer, popped chan<- string) {
	for {
		_, err := queue.Pop(func(obj interface{}, _ bool) error {
			var changes []string
			for _, d := range obj.(cache.Deltas) {
				var err error
				if d.Type == cache.Deleted {
					err = consumerCache.Delete(d.Object)
				} else {
					err = consumerCache.Update(d.Object) // adds when missing
				}
				if err != nil {
					return err
				}
				changes = append(changes, describe(d))
			}
			popped <- strings.Join(changes, ", ")
			return nil
		})
		if errors.Is(err, cache.ErrFIFOClosed) {
			return
		}
	}
}

func describe(d cache.Delta) string {
	if tomb, ok := d.Object.(cache.DeletedFinalStateUnknown); ok {
		return fmt.Sprintf("%s %s (DeletedFinalStateUnknown: the queue inferred the deletion)", d.Type, tomb.Key)
	}
	pod := d.Object.(*v1.Pod)
	return fmt.Sprintf("%s %s/%s", d.Type, pod.Namespace, pod.Name)
}

// expectPops prints the next n pops, sorted: the queue's order within one
// Replace is not part of its contract.
func expectPops(out io.Writer, popped <-chan string, n int) error {
	var got []string
	for range n {
		select {
		case p := <-popped:
			got = append(got, p)
		case <-time.After(30 * time.Second):
			return errors.New("timed out waiting for the queue")
		}
	}
	slices.Sort(got)
	for _, p := range got {
		fmt.Fprintln(out, "  pop:", p)
	}
	return nil
}

func sortedKeys(s cache.Store) []string {
	keys := s.ListKeys()
	slices.Sort(keys)
	return keys
}

func podKeys(pods []*v1.Pod) []string {
	keys := make([]string, len(pods))
	for i, p := range pods {
		keys[i] = p.Namespace + "/" + p.Name
	}
	return keys
}
