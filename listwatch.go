package cache

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// Lister lists the objects of one resource. The result must be a list
// object (meta.IsListType) carrying a resource version.
type Lister interface {
	List(options metav1.ListOptions) (runtime.Object, error)
}

// ListerWithContext is Lister with cancellation.
type ListerWithContext interface {
	ListWithContext(ctx context.Context, options metav1.ListOptions) (runtime.Object, error)
}

// Watcher watches the objects of one resource from a resource version.
type Watcher interface {
	Watch(options metav1.ListOptions) (watch.Interface, error)
}

// WatcherWithContext is Watcher with cancellation.
type WatcherWithContext interface {
	WatchWithContext(ctx context.Context, options metav1.ListOptions) (watch.Interface, error)
}

// ListerWatcher lists and watches one resource: what a Reflector needs.
type ListerWatcher interface {
	Lister
	Watcher
}

// ListerWatcherWithContext is ListerWatcher with cancellation.
type ListerWatcherWithContext interface {
	ListerWithContext
	WatcherWithContext
}

// watchListSemanticsReporter is implemented by clients (typically fakes) that
// can say they do not speak the streaming-list protocol. The method name is
// the one client-go's fakes implement, so they are recognised as they are.
type watchListSemanticsReporter interface {
	IsWatchListSemanticsUnSupported() bool
}

// lacksWatchListSemantics reports whether client says it cannot serve
// streaming lists; a client that says nothing is assumed able to.
func lacksWatchListSemantics(client any) bool {
	r, ok := client.(watchListSemanticsReporter)
	return ok && r.IsWatchListSemanticsUnSupported()
}
