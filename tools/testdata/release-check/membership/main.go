// Command membership builds a membership member whose range moves a
// sharded kcache ListerWatcher.
package main

import (
	"fmt"
	"os"

	cache "github.com/kcache/cache"
	"github.com/kcache/cache/membership"
	framework "github.com/kcache/cache/testing"
	"k8s.io/client-go/kubernetes/fake"
)

func main() {
	selector, err := cache.EvenShardSelector(0, 1)
	if err != nil {
		fmt.Fprintln(os.Stderr, "membership:", err)
		os.Exit(1)
	}
	lw, err := cache.NewShardedListerWatcher(framework.NewFakeControllerSource(), selector)
	if err != nil {
		fmt.Fprintln(os.Stderr, "membership:", err)
		os.Exit(1)
	}
	if _, err := membership.New(membership.Config{
		Client:    fake.NewClientset().CoordinationV1(),
		Namespace: "default",
		Group:     "release-check",
		Identity:  "replica-0",
		Resharder: lw,
	}); err != nil {
		fmt.Fprintln(os.Stderr, "membership:", err)
		os.Exit(1)
	}
	fmt.Println("membership: member configured over a sharded kcache ListerWatcher")
}
