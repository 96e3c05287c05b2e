// Command deltafifo shows the DeltaFIFO on its own: changes are queued by
// hand, grouped per object, and popped one object at a time with every
// change that object went through, oldest first.
//
//	go run ./cmd/deltafifo
package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	cache "github.com/kcache/cache"
	"github.com/kcache/cache/examples/internal/simcluster"
	v1 "k8s.io/api/core/v1"
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "deltafifo:", err)
		os.Exit(1)
	}
}

func run(out io.Writer) error {
	queue := cache.NewDeltaFIFOWithOptions(cache.DeltaFIFOOptions{
		KeyFunction: cache.MetaNamespaceKeyFunc,
		// Replace queues Replaced changes (not Sync ones), as informers do.
		EmitDeltaTypeReplaced: true,
	})
	defer queue.Close()

	web1 := simcluster.NewPod("shop", "web-1", "web")
	web2 := simcluster.NewPod("shop", "web-2", "web")
	steps := []struct {
		say string
		do  func() error
	}{
		{"add shop/web-1 (Pending)", func() error { return queue.Add(web1) }},
		{"add shop/web-2 (Pending)", func() error { return queue.Add(web2) }},
		{"update shop/web-1 (Running)", func() error { return queue.Update(simcluster.WithPhase(web1, v1.PodRunning)) }},
		{"update shop/web-1 (Succeeded)", func() error { return queue.Update(simcluster.WithPhase(web1, v1.PodSucceeded)) }},
		{"delete shop/web-1", func() error { return queue.Delete(simcluster.WithPhase(web1, v1.PodSucceeded)) }},
		{"delete shop/web-1 again (merged with the first delete)", func() error { return queue.Delete(simcluster.WithPhase(web1, v1.PodSucceeded)) }},
	}
	for _, s := range steps {
		fmt.Fprintln(out, "queue:", s.say)
		if err := s.do(); err != nil {
			return err
		}
	}

	// Two keys are queued; each Pop hands over all of one key's changes.
	fmt.Fprintln(out)
	for range 2 {
		if err := popAndPrint(out, queue); err != nil {
			return err
		}
	}

	// A Replace says "this is the whole list now". Without KnownObjects
	// the queue knows nothing about objects it already handed out, so it
	// reports no deletion for them: see ./cmd/knownobjects.
	fmt.Fprintln(out)
	fmt.Fprintln(out, "queue: replace with [shop/web-2 (Running), shop/web-3 (Pending)]")
	list := []interface{}{simcluster.WithPhase(web2, v1.PodRunning), simcluster.NewPod("shop", "web-3", "web")}
	if err := queue.Replace(list, "10"); err != nil {
		return err
	}
	for range 2 {
		if err := popAndPrint(out, queue); err != nil {
			return err
		}
	}
	return nil
}

// popAndPrint pops one key and prints its changes.
func popAndPrint(out io.Writer, queue *cache.DeltaFIFO) error {
	_, err := queue.Pop(func(obj interface{}, isInInitialList bool) error {
		deltas := obj.(cache.Deltas)
		pod := deltas.Newest().Object.(*v1.Pod)
		var changes []string
		for _, d := range deltas {
			changes = append(changes, fmt.Sprintf("%s(%s)", d.Type, d.Object.(*v1.Pod).Status.Phase))
		}
		fmt.Fprintf(out, "pop %s/%s: %s\n", pod.Namespace, pod.Name, strings.Join(changes, " "))
		return nil
	})
	return err
}
