// Command factory shows the informer factory: two independent consumers
// (think: two controllers in one process) ask it for the Pods informer and
// get the same one, so the cluster is listed and watched once and the
// Pods are cached once. One consumer uses the untyped API, the other the
// typed one (TypedInformerFor[*v1.Pod]).
//
//	go run ./cmd/factory
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	cache "github.com/kcache/cache"
	"github.com/kcache/cache/examples/internal/simcluster"
	v1 "k8s.io/api/core/v1"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "factory:", err)
		os.Exit(1)
	}
}

// phaseWatcher is the first consumer: it reports phase changes, through
// the untyped API.
func phaseWatcher(f *cache.InformerFactory, newLW func() cache.ListerWatcher, lines chan<- string) (cache.SharedIndexInformer, error) {
	inf := f.InformerFor(simcluster.PodsResource, &v1.Pod{}, newLW)
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(oldObj, newObj interface{}) {
			oldPod, newPod := oldObj.(*v1.Pod), newObj.(*v1.Pod)
			if oldPod.Status.Phase != newPod.Status.Phase {
				lines <- fmt.Sprintf("[phase-watcher] %s/%s %s -> %s", newPod.Namespace, newPod.Name, oldPod.Status.Phase, newPod.Status.Phase)
			}
		},
	})
	return inf, err
}

// namespaceReport is the second consumer: it counts Running Pods per
// namespace, through the typed API and the namespace index the factory
// gives every informer.
type namespaceReport struct {
	pods cache.TypedSharedIndexInformer[*v1.Pod]
}

func newNamespaceReport(f *cache.InformerFactory, newLW func() cache.ListerWatcher, lines chan<- string) (*namespaceReport, error) {
	r := &namespaceReport{pods: cache.TypedInformerFor[*v1.Pod](f, simcluster.PodsResource, newLW)}
	_, err := r.pods.AddTypedEventHandler(cache.TypedResourceEventHandlerFuncs[*v1.Pod]{
		UpdateFunc: func(_, pod *v1.Pod) { lines <- "[namespace-report] " + r.running(pod.Namespace) },
	})
	return r, err
}

func (r *namespaceReport) running(namespace string) string {
	pods, err := r.pods.GetTypedIndexer().ByTypedIndex(cache.NamespaceIndex, namespace)
	if err != nil {
		return err.Error()
	}
	n := 0
	for _, p := range pods {
		if p.Status.Phase == v1.PodRunning {
			n++
		}
	}
	return fmt.Sprintf("%s: %d of %d pods running", namespace, n, len(pods))
}

func run(ctx context.Context, out io.Writer) error {
	cluster := simcluster.New(simcluster.Options{})
	defer cluster.Close()
	for _, p := range []*v1.Pod{
		simcluster.WithPhase(simcluster.NewPod("shop", "web-1", "web"), v1.PodRunning),
		simcluster.NewPod("shop", "web-2", "web"),
		simcluster.WithPhase(simcluster.NewPod("shop", "api-1", "api"), v1.PodRunning),
		simcluster.NewPod("blog", "web-1", "web"),
	} {
		if _, err := cluster.Create(p); err != nil {
			return err
		}
	}

	// The factory calls newLW only when it makes an informer.
	made := 0
	newLW := func() cache.ListerWatcher {
		made++
		return cluster.ListerWatcher()
	}
	factory := cache.NewInformerFactory(0)
	defer factory.Shutdown()

	a, b := make(chan string, 16), make(chan string, 16)
	untyped, err := phaseWatcher(factory, newLW, a)
	if err != nil {
		return err
	}
	report, err := newNamespaceReport(factory, newLW, b)
	if err != nil {
		return err
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	factory.Start(ctx.Done())
	synced := factory.WaitForCacheSync(ctx.Done())
	if !synced[simcluster.PodsResource] {
		return errors.New("pods did not sync")
	}

	fmt.Fprintln(out, "two consumers asked the factory for pods")
	fmt.Fprintln(out, "  same cache for both:", untyped.GetIndexer() == report.pods.GetIndexer())
	fmt.Fprintln(out, "  ListerWatchers made:", made)
	fmt.Fprintf(out, "  LIST requests the cluster served: %d\n", cluster.Stats().Lists)
	fmt.Fprintln(out, "  [namespace-report]", report.running("shop"))
	fmt.Fprintln(out, "  [namespace-report]", report.running("blog"))

	fmt.Fprintln(out, "cluster: shop/web-2 starts running")
	p, _ := cluster.Get("shop", "web-2")
	if _, err := cluster.Update(simcluster.WithPhase(p, v1.PodRunning)); err != nil {
		return err
	}
	var lines []string
	for range 2 {
		select {
		case l := <-a:
			lines = append(lines, l)
		case l := <-b:
			lines = append(lines, l)
		case <-time.After(30 * time.Second):
			return errors.New("timed out waiting for the consumers")
		}
	}
	// Each consumer's handler runs on its own goroutine: sort for one order.
	slices.Sort(lines)
	for _, l := range lines {
		fmt.Fprintln(out, "  "+l)
	}

	// The event came through the watch, so it is open by now.
	fmt.Fprintf(out, "  WATCH requests the cluster served: %d\n", cluster.Stats().Watches)

	factory.Shutdown()
	fmt.Fprintln(out, "factory shut down: informer stopped:", untyped.IsStopped())
	return nil
}
