// Command sharedinformer shows one shared informer serving several
// handlers: each handler runs on its own goroutine and sees every change
// in order; a handler added later first gets the cached objects; a removed
// handler hears nothing more.
//
//	go run ./cmd/sharedinformer
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
		fmt.Fprintln(os.Stderr, "sharedinformer:", err)
		os.Exit(1)
	}
}

// auditor reports every change as a line.
func auditor(lines chan<- string) cache.ResourceEventHandler {
	name := func(obj interface{}) string {
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			return tomb.Key
		}
		pod := obj.(*v1.Pod)
		return pod.Namespace + "/" + pod.Name
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) { lines <- "ADDED    " + name(obj) },
		UpdateFunc: func(oldObj, newObj interface{}) {
			lines <- fmt.Sprintf("MODIFIED %s %s -> %s", name(newObj), oldObj.(*v1.Pod).Status.Phase, newObj.(*v1.Pod).Status.Phase)
		},
		DeleteFunc: func(obj interface{}) { lines <- "DELETED  " + name(obj) },
	}
}

// runningCounter counts Running Pods and reports the count after each
// change. Handlers run one call at a time, so it needs no lock.
type runningCounter struct {
	running map[string]bool
	counts  chan<- int
}

func (c *runningCounter) set(obj interface{}, running bool) {
	pod := obj.(*v1.Pod)
	if running {
		c.running[pod.Namespace+"/"+pod.Name] = true
	} else {
		delete(c.running, pod.Namespace+"/"+pod.Name)
	}
	c.counts <- len(c.running)
}

func (c *runningCounter) OnAdd(obj interface{}, _ bool) {
	c.set(obj, obj.(*v1.Pod).Status.Phase == v1.PodRunning)
}

func (c *runningCounter) OnUpdate(_, newObj interface{}) {
	c.set(newObj, newObj.(*v1.Pod).Status.Phase == v1.PodRunning)
}

func (c *runningCounter) OnDelete(obj interface{}) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	c.set(obj, false)
}

func run(ctx context.Context, out io.Writer) error {
	cluster := simcluster.New(simcluster.Options{})
	defer cluster.Close()
	for _, p := range []*v1.Pod{
		simcluster.WithPhase(simcluster.NewPod("shop", "web-1", "web"), v1.PodRunning),
		simcluster.NewPod("shop", "web-2", "web"),
		simcluster.WithPhase(simcluster.NewPod("shop", "api-1", "api"), v1.PodRunning),
	} {
		if _, err := cluster.Create(p); err != nil {
			return err
		}
	}

	informer := cache.NewSharedIndexInformer(cluster.ListerWatcher(), &v1.Pod{}, 0, cache.Indexers{})
	audit, counts, late := make(chan string, 16), make(chan int, 16), make(chan string, 16)
	auditReg, err := informer.AddEventHandler(auditor(audit))
	if err != nil {
		return err
	}
	counterReg, err := informer.AddEventHandler(&runningCounter{running: map[string]bool{}, counts: counts})
	if err != nil {
		return err
	}

	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { informer.RunWithContext(ctx) })
	defer wg.Wait()
	defer cancel()

	fmt.Fprintln(out, "start: one informer, two handlers (audit, running)")
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced, auditReg.HasSynced, counterReg.HasSynced) {
		return errors.New("not synced")
	}
	// Each handler has processed the initial list; each got it in its own
	// order, so print the audit sorted and only the counter's last count.
	if err := printLines(out, "audit", audit, 3); err != nil {
		return err
	}
	if err := printLastCount(out, counts, 3); err != nil {
		return err
	}

	fmt.Fprintln(out, "cluster: shop/web-2 starts running")
	p, _ := cluster.Get("shop", "web-2")
	if _, err := cluster.Update(simcluster.WithPhase(p, v1.PodRunning)); err != nil {
		return err
	}
	if err := printLines(out, "audit", audit, 1); err != nil {
		return err
	}
	if err := printLastCount(out, counts, 1); err != nil {
		return err
	}

	fmt.Fprintln(out, "add a third handler (late) to the running informer: it gets the cached objects first")
	lateReg, err := informer.AddEventHandler(auditor(late))
	if err != nil {
		return err
	}
	if !cache.WaitForCacheSync(ctx.Done(), lateReg.HasSynced) {
		return errors.New("late handler not synced")
	}
	if err := printLines(out, "late", late, 3); err != nil {
		return err
	}

	fmt.Fprintln(out, "remove the audit handler; cluster: delete shop/api-1")
	if err := informer.RemoveEventHandler(auditReg); err != nil {
		return err
	}
	if err := cluster.Delete("shop", "api-1"); err != nil {
		return err
	}
	if err := printLines(out, "late", late, 1); err != nil {
		return err
	}
	if err := printLastCount(out, counts, 1); err != nil {
		return err
	}
	select {
	case line := <-audit:
		return fmt.Errorf("the removed handler was called: %s", line)
	default:
		fmt.Fprintln(out, "    [audit] (removed: nothing)")
	}
	return nil
}

// printLines prints the next n lines of one handler, sorted.
func printLines(out io.Writer, handler string, lines <-chan string, n int) error {
	var got []string
	for range n {
		select {
		case l := <-lines:
			got = append(got, l)
		case <-time.After(30 * time.Second):
			return fmt.Errorf("timed out waiting for the %s handler", handler)
		}
	}
	slices.Sort(got)
	for _, l := range got {
		fmt.Fprintf(out, "    [%s] %s\n", handler, l)
	}
	return nil
}

// printLastCount prints the last of the counter's next n reports.
func printLastCount(out io.Writer, counts <-chan int, n int) error {
	last := 0
	for range n {
		select {
		case last = <-counts:
		case <-time.After(30 * time.Second):
			return errors.New("timed out waiting for the running handler")
		}
	}
	fmt.Fprintf(out, "    [running] %d pods running\n", last)
	return nil
}
