// Command workqueue is the classic controller shape: a kcache shared
// informer's handlers put Pod keys on client-go's rate-limited workqueue,
// and a worker takes keys off it and reconciles: it reads the Pod from the
// informer's cache and marks Running Pods with an annotation, writing back
// to the (simulated) cluster. It shows retries with backoff after errors,
// several changes of one Pod collapsing into one reconcile, and a deleted
// Pod seen by its key alone.
//
//	go run ./cmd/workqueue
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	cache "github.com/kcache/cache"
	"github.com/kcache/cache/examples/internal/simcluster"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/workqueue"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "workqueue:", err)
		os.Exit(1)
	}
}

// seenRunning is the annotation the controller puts on Running Pods.
const seenRunning = "example.com/seen-running"

// controller reconciles Pods taken from queue, one at a time.
type controller struct {
	cluster *simcluster.Cluster
	indexer cache.Indexer
	queue   workqueue.TypedRateLimitingInterface[string]
	// failures makes the reconciles of a key fail this many times first,
	// to show retries.
	failures map[string]int
	// results receives one line per reconcile.
	results chan<- string
}

// processNext takes one key, reconciles it, and tells the queue how it
// went. It returns false once the queue is shut down.
func (c *controller) processNext() bool {
	key, shutdown := c.queue.Get()
	if shutdown {
		return false
	}
	defer c.queue.Done(key)
	outcome, err := c.reconcile(key)
	if err != nil {
		c.queue.AddRateLimited(key) // retried after a growing delay
		c.results <- fmt.Sprintf("reconcile %-14s error: %v (attempt %d; requeued with backoff)", key, err, c.queue.NumRequeues(key))
		return true
	}
	c.queue.Forget(key) // resets the key's backoff
	c.results <- fmt.Sprintf("reconcile %-14s %s", key, outcome)
	return true
}

// reconcile brings one Pod to the wanted state and says what it did.
func (c *controller) reconcile(key string) (string, error) {
	if c.failures[key] > 0 {
		c.failures[key]--
		return "", errors.New("the server says: conflict, try again")
	}
	obj, exists, err := c.indexer.GetByKey(key)
	if err != nil {
		return "", err
	}
	if !exists {
		return "gone: nothing left to do (a real controller would clean up here)", nil
	}
	// Objects from the cache are shared with the informer and every other
	// reader: never modify them. Copy first.
	pod := obj.(*v1.Pod)
	labels := labelSummary(pod)
	switch {
	case pod.Status.Phase != v1.PodRunning:
		return fmt.Sprintf("%s: nothing to do%s", pod.Status.Phase, labels), nil
	case pod.Annotations[seenRunning] == "true":
		return "Running, already annotated: nothing to do" + labels, nil
	}
	updated := pod.DeepCopy()
	if updated.Annotations == nil {
		updated.Annotations = map[string]string{}
	}
	updated.Annotations[seenRunning] = "true"
	if _, err := c.cluster.Update(updated); err != nil {
		return "", err
	}
	return "Running: annotated (this write comes back as an update)" + labels, nil
}

func labelSummary(pod *v1.Pod) string {
	if rev, ok := pod.Labels["rev"]; ok {
		return " [rev=" + rev + "]"
	}
	return ""
}

func run(ctx context.Context, out io.Writer) error {
	cluster := simcluster.New(simcluster.Options{})
	defer cluster.Close()
	if _, err := cluster.Create(simcluster.NewPod("shop", "web-1", "web")); err != nil {
		return err
	}

	informer := cache.NewSharedIndexInformer(cluster.ListerWatcher(), &v1.Pod{}, 0, cache.Indexers{})
	queue := workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "pods"},
	)
	enqueued := make(chan string, 64)
	enqueue := func(obj interface{}) {
		// Deletions may come as tombstones; this key function handles both.
		key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
		if err != nil {
			return
		}
		queue.Add(key)
		enqueued <- key
	}
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, newObj interface{}) { enqueue(newObj) },
		DeleteFunc: enqueue,
	}); err != nil {
		return err
	}

	results := make(chan string, 16)
	c := &controller{
		cluster: cluster, indexer: informer.GetIndexer(), queue: queue, results: results,
		failures: map[string]int{"shop/flaky-1": 2},
	}

	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { informer.RunWithContext(ctx) })
	// The worker reconciles one key per credit, so that this example
	// decides when work happens and its output has one order.
	credits := make(chan int)
	wg.Go(func() {
		for n := range credits {
			for range n {
				if !c.processNext() {
					return
				}
			}
		}
	})
	defer wg.Wait()
	defer close(credits)
	defer queue.ShutDown()
	defer cancel()

	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return errors.New("the informer did not sync")
	}
	// step makes a change, lets the worker do reconciles reconciles and
	// prints them, then waits until the handler has queued keys keys: those
	// the change caused and those the reconciles' own writes caused.
	step := func(say string, change func() error, reconciles, keys int) error {
		fmt.Fprintln(out, say)
		if err := change(); err != nil {
			return err
		}
		credits <- reconciles
		for range reconciles {
			select {
			case r := <-results:
				fmt.Fprintln(out, "   ", r)
			case <-time.After(30 * time.Second):
				return errors.New("timed out waiting for the worker")
			}
		}
		return drain(enqueued, keys)
	}
	get := func(name string) *v1.Pod {
		p, _ := cluster.Get("shop", name)
		return p
	}
	nothing := func() error { return nil }

	if err := step("start: the informer lists shop/web-1 and queues its key", nothing, 1, 1); err != nil {
		return err
	}
	if err := step("cluster: shop/web-1 starts running", func() error {
		_, err := cluster.Update(simcluster.WithPhase(get("web-1"), v1.PodRunning))
		return err
	}, 2, 2); err != nil {
		return err
	}
	if err := step("cluster: create shop/flaky-1, running (its first two reconciles fail)", func() error {
		_, err := cluster.Create(simcluster.WithPhase(simcluster.NewPod("shop", "flaky-1", "flaky"), v1.PodRunning))
		return err
	}, 4, 2); err != nil {
		return err
	}
	if err := step("cluster: relabel shop/web-1 three times while the worker is idle", func() error {
		for rev := 1; rev <= 3; rev++ {
			p := get("web-1")
			p.Labels["rev"] = fmt.Sprint(rev)
			if _, err := cluster.Update(p); err != nil {
				return err
			}
		}
		return nil
	}, 0, 3); err != nil {
		return err
	}
	fmt.Fprintf(out, "    queue length after 3 updates of one Pod: %d (one key, queued once)\n", queue.Len())
	if err := step("worker: one reconcile sees the newest state", nothing, 1, 0); err != nil {
		return err
	}
	if err := step("cluster: delete shop/web-1", func() error { return cluster.Delete("shop", "web-1") }, 1, 1); err != nil {
		return err
	}
	select {
	case k := <-enqueued:
		return fmt.Errorf("unexpected extra key queued: %s", k)
	default:
	}
	fmt.Fprintln(out, "done: queue length", queue.Len())
	return nil
}

// drain waits for n keys to be queued by the handler.
func drain(enqueued <-chan string, n int) error {
	for range n {
		select {
		case <-enqueued:
		case <-time.After(30 * time.Second):
			return errors.New("timed out waiting for the handler")
		}
	}
	return nil
}
