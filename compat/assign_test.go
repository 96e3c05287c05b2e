package compat_test

import (
	"context"
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clientgocache "k8s.io/client-go/tools/cache"

	cache "github.com/kcache/cache"
)

// Compile-time checks: the values client-go users hand to tools/cache fit
// kcache's types unchanged, and the two packages' list/watch types are
// interchangeable. A failure here is a build failure, not a test failure.
var (
	_ cache.ListerWatcher            = &cache.ListWatch{}
	_ cache.ListerWatcherWithContext = &cache.ListWatch{}
	_ cache.Lister                   = &cache.ListWatch{}
	_ cache.Watcher                  = &cache.ListWatch{}

	// What callers pass as a Getter.
	_ cache.Getter = (*rest.RESTClient)(nil)
	_ cache.Getter = rest.Interface(nil)
	_ cache.Getter = clientgocache.Getter(nil)

	// A kcache ListWatch can go where client-go expects a ListerWatcher,
	// and client-go's ListWatch where kcache expects one.
	_ clientgocache.ListerWatcher            = &cache.ListWatch{}
	_ clientgocache.ListerWatcherWithContext = &cache.ListWatch{}
	_ cache.ListerWatcher                    = &clientgocache.ListWatch{}
	_ cache.ListerWatcherWithContext         = &clientgocache.ListWatch{}
	_ cache.ListerWatcher                    = clientgocache.ToListWatcherWithWatchListSemantics(&clientgocache.ListWatch{}, nil)
	_ clientgocache.ListerWatcher            = cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{}, nil)

	// Function literals written for client-go's func types fit ours.
	_ = cache.ListWatch{
		ListFunc:             func(metav1.ListOptions) (runtime.Object, error) { return nil, nil },
		WatchFunc:            func(metav1.ListOptions) (watch.Interface, error) { return nil, nil },
		ListWithContextFunc:  func(context.Context, metav1.ListOptions) (runtime.Object, error) { return nil, nil },
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) { return nil, nil },
		DisableChunking:      true,
	}
	//lint:ignore SA1019 client-go's deprecated func types are part of the API this test proves
	_ = cache.ListFunc(clientgocache.ListFunc(nil))
	//lint:ignore SA1019 client-go's deprecated func types are part of the API this test proves
	_ = cache.WatchFunc(clientgocache.WatchFunc(nil))
	_ = cache.ListWithContextFunc(clientgocache.ListWithContextFunc(nil))
	_ = cache.WatchFuncWithContext(clientgocache.WatchFuncWithContext(nil))

	// The constructors keep client-go's signatures, Getter included.
	_ func(cache.Getter, string, string, fields.Selector) *cache.ListWatch           = cache.NewListWatchFromClient
	_ func(cache.Getter, string, string, func(*metav1.ListOptions)) *cache.ListWatch = cache.NewFilteredListWatchFromClient
	_ func(cache.ListerWatcher) cache.ListerWatcherWithContext                       = cache.ToListerWatcherWithContext
	_ func(cache.Lister) cache.ListerWithContext                                     = cache.ToListerWithContext
	_ func(cache.Watcher) cache.WatcherWithContext                                   = cache.ToWatcherWithContext
	_ func(*cache.ListWatch, any) cache.ListerWatcher                                = cache.ToListWatcherWithWatchListSemantics
)

// TestNewListWatchFromClient_AcceptsEveryTypedGroupsRESTClient builds
// ListWatches from several typed groups' RESTClient, held as rest.Interface
// as client-go returns it, and checks that each passed the Getter shape
// check: a request with a cancelled context fails with context.Canceled, not
// with an invalid-Getter error, and never reaches the network.
func TestNewListWatchFromClient_AcceptsEveryTypedGroupsRESTClient(t *testing.T) {
	clientset, err := kubernetes.NewForConfig(&rest.Config{Host: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	tests := map[string]rest.Interface{
		"core/v1":  clientset.CoreV1().RESTClient(),
		"apps/v1":  clientset.AppsV1().RESTClient(),
		"batch/v1": clientset.BatchV1().RESTClient(),
	}
	for name, getter := range tests {
		t.Run(name, func(t *testing.T) {
			lw := cache.NewListWatchFromClient(getter, "things", "ns", fields.Everything())
			_, listErr := lw.ListWithContext(ctx, metav1.ListOptions{})
			_, watchErr := lw.WatchWithContext(ctx, metav1.ListOptions{})
			for op, err := range map[string]error{"list": listErr, "watch": watchErr} {
				if !errors.Is(err, context.Canceled) {
					t.Errorf("%s: error = %v, want context.Canceled", op, err)
				}
			}
		})
	}
}
