// Command generatedfactory shows the adoption path for code built on
// client-go's generated informer factory that cannot replace client-go in
// its go.mod: one changed line, clientgo.NewSharedInformerFactory in place
// of informers.NewSharedInformerFactory, and the same generated informers
// and listers run on kcache. It uses client-go's fake clientset, so it
// needs no cluster.
//
//	go run ./cmd/generatedfactory
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
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
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := run(ctx, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "generatedfactory:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out io.Writer) error {
	client := fake.NewClientset(pod("shop", "web-1"), pod("shop", "web-2"))

	// The one changed line: before, informers.NewSharedInformerFactory.
	factory := clientgo.NewSharedInformerFactory(client, 0)

	pods := factory.Core().V1().Pods()
	added := make(chan string, 10)
	if _, err := pods.Informer().AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) { added <- obj.(*v1.Pod).Name },
	}); err != nil {
		return fmt.Errorf("adding a handler: %w", err)
	}
	_, onKcache := clientgo.Unwrap(pods.Informer())
	fmt.Fprintf(out, "pods informer runs on kcache: %v\n", onKcache)

	stop := make(chan struct{})
	defer factory.Shutdown()
	defer close(stop)
	factory.Start(stop)
	for typ, synced := range factory.WaitForCacheSync(ctx.Done()) {
		if !synced {
			return fmt.Errorf("informer for %v did not sync", typ)
		}
	}
	for range 2 {
		if _, err := receiveName(ctx, added); err != nil {
			return err
		}
	}
	listed, err := pods.Lister().Pods("shop").List(labels.Everything())
	if err != nil {
		return fmt.Errorf("listing: %w", err)
	}
	fmt.Fprintf(out, "lister sees %d pods in shop\n", len(listed))

	// The fake clientset drops changes made before a watch is open, so
	// wait for the informer's watch before creating a pod.
	if err := waitForWatch(ctx, client); err != nil {
		return err
	}
	if _, err := client.CoreV1().Pods("shop").Create(ctx, pod("shop", "web-3"), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating a pod: %w", err)
	}
	name, err := receiveName(ctx, added)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "handler saw %s added\n", name)
	return nil
}

func receiveName(ctx context.Context, names <-chan string) (string, error) {
	select {
	case name := <-names:
		return name, nil
	case <-ctx.Done():
		return "", errors.New("no add event before the deadline")
	}
}

// waitForWatch waits until the informer has opened its watch on pods.
func waitForWatch(ctx context.Context, client *fake.Clientset) error {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		for _, action := range client.Actions() {
			if action.GetVerb() == "watch" && action.GetResource().Resource == "pods" {
				return nil
			}
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return errors.New("the informer opened no watch before the deadline")
		}
	}
}

func pod(namespace, name string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
}
