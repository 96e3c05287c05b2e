package framework_test

import (
	"fmt"
	"math/rand/v2"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	framework "github.com/kcache/cache/testing"
)

// A FaultyListerWatcher goes wherever a ListerWatcher does: in front of a
// fake or a real client, handed to an informer or a reflector. Here it is
// called directly to show a seeded run and its counts.
func ExampleFaultyListerWatcher() {
	src := framework.NewFakeControllerSource()
	defer src.Shutdown()
	src.Add(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}})

	lw := framework.NewFaultyListerWatcher(src, framework.FaultConfig{
		Rand:              rand.New(rand.NewPCG(4, 2)),
		ListGone:          0.3,
		ListInternalError: 0.3,
	})
	for range 6 {
		_, err := lw.List(metav1.ListOptions{})
		switch {
		case err == nil:
			fmt.Println("listed")
		case apierrors.IsResourceExpired(err):
			fmt.Println("410 Gone")
		case apierrors.IsInternalError(err):
			fmt.Println("500 Internal Error")
		}
	}
	stats := lw.Stats()
	fmt.Println(stats.Lists, "lists,", stats.Injected[framework.FaultListGone], "gone,", stats.Injected[framework.FaultListInternalError], "internal errors")
	// Output:
	// listed
	// 500 Internal Error
	// listed
	// listed
	// 410 Gone
	// listed
	// 6 lists, 1 gone, 1 internal errors
}
