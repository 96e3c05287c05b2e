// Command sharding runs one replica of a sharded group on a fake clientset's
// Leases: its Pod informer, built for controller-runtime's NewInformer
// option, waits for the replica's range and then holds every Pod, since the
// replica is alone.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/kcache/cache/sharding"
	framework "github.com/kcache/cache/testing"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	toolscache "k8s.io/client-go/tools/cache"
)

const pods = 10

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "sharding:", err)
		os.Exit(1)
	}
	fmt.Printf("sharding: a lone replica claimed its range and cached all %d pods\n", pods)
}

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := sharding.New(sharding.Options{
		Client:    fake.NewClientset().CoordinationV1(),
		Namespace: "default",
		Group:     "release-check",
		Identity:  "replica-0",
		Objects:   []runtime.Object{&corev1.Pod{}},
	})
	if err != nil {
		return err
	}
	source := framework.NewFakeControllerSource()
	for i := range pods {
		source.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Namespace: "default", Name: fmt.Sprintf("pod-%d", i), UID: types.UID(fmt.Sprintf("uid-%d", i)),
		}})
	}
	informer := s.NewInformer(source, &corev1.Pod{}, 0, toolscache.Indexers{})
	go func() { _ = s.Start(ctx) }()
	go informer.Run(ctx.Done())
	if !toolscache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return fmt.Errorf("the informer did not sync: %w", ctx.Err())
	}
	if got := len(informer.GetStore().List()); got != pods {
		return fmt.Errorf("cached %d pods, want %d", got, pods)
	}
	return nil
}
