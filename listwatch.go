package cache

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// Lister lists the objects of one resource. The result must be a list
// object (meta.IsListType) carrying a resource version.
type Lister interface {
	// List returns the list object.
	//
	// Deprecated: implement and call ListerWithContext.ListWithContext, which
	// can be cancelled.
	List(options metav1.ListOptions) (runtime.Object, error)
}

// ListerWithContext is Lister with cancellation.
type ListerWithContext interface {
	ListWithContext(ctx context.Context, options metav1.ListOptions) (runtime.Object, error)
}

// Watcher watches the objects of one resource from a resource version.
type Watcher interface {
	// Watch opens the watch.
	//
	// Deprecated: implement and call WatcherWithContext.WatchWithContext,
	// which can be cancelled.
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

// isBufferedFakeWatch reports whether w is apimachinery's
// RaceFreeFakeWatcher, a test double no real client returns. client-go's
// object tracker, behind every generated fake clientset (typed, dynamic,
// metadata, and those of other projects), answers each watch with one,
// holding in its buffer, before it returns it, the events it replays for
// the objects already stored; it ignores SendInitialEvents and never sends
// the initial-events-end bookmark. So a streaming list answered with such
// a stream is complete when its buffer runs dry, or never: the Reflector
// reads what it holds without waiting (streamReader.bufferedOnly) and,
// without the bookmark, lists page by page at once. A fake that does
// serve streaming lists puts the bookmark in the buffer too, and is used
// as one; a test that fills such a watcher from another goroutine after
// returning it does not serve streaming lists by this rule (see README's
// table). The stream of a real server is never one: nothing changes there.
func isBufferedFakeWatch(w watch.Interface) bool {
	_, ok := w.(*watch.RaceFreeFakeWatcher)
	return ok
}

// ToListerWithContext returns l itself when it already implements
// ListerWithContext, and otherwise an adapter whose ListWithContext calls
// l.List. The adapter cannot cancel the call: the context is not seen by l.
func ToListerWithContext(l Lister) ListerWithContext {
	if lc, ok := l.(ListerWithContext); ok {
		return lc
	}
	return legacyLister{parent: l}
}

// ToWatcherWithContext returns w itself when it already implements
// WatcherWithContext, and otherwise an adapter whose WatchWithContext calls
// w.Watch. The adapter cannot cancel the call: the context is not seen by w.
func ToWatcherWithContext(w Watcher) WatcherWithContext {
	if wc, ok := w.(WatcherWithContext); ok {
		return wc
	}
	return legacyWatcher{parent: w}
}

// ToListerWatcherWithContext returns lw itself when it already implements
// ListerWatcherWithContext, and otherwise an adapter built from
// ToListerWithContext and ToWatcherWithContext. The adapter still answers the
// watch-list capability probe the way lw does.
func ToListerWatcherWithContext(lw ListerWatcher) ListerWatcherWithContext {
	if lwc, ok := lw.(ListerWatcherWithContext); ok {
		return lwc
	}
	return legacyListerWatcher{
		ListerWithContext:  ToListerWithContext(lw),
		WatcherWithContext: ToWatcherWithContext(lw),
		parent:             lw,
	}
}

// legacyLister gives a Lister the context-aware method.
type legacyLister struct{ parent Lister }

func (l legacyLister) ListWithContext(_ context.Context, options metav1.ListOptions) (runtime.Object, error) {
	return l.parent.List(options)
}

// legacyWatcher gives a Watcher the context-aware method.
type legacyWatcher struct{ parent Watcher }

func (w legacyWatcher) WatchWithContext(_ context.Context, options metav1.ListOptions) (watch.Interface, error) {
	return w.parent.Watch(options)
}

// legacyListerWatcher gives a ListerWatcher the context-aware methods and
// keeps its answer to the watch-list capability probe.
type legacyListerWatcher struct {
	ListerWithContext
	WatcherWithContext
	parent ListerWatcher
}

// IsWatchListSemanticsUnSupported reports what the wrapped ListerWatcher
// reports, or false if it says nothing.
func (lw legacyListerWatcher) IsWatchListSemanticsUnSupported() bool {
	return lacksWatchListSemantics(lw.parent)
}

// ListFunc lists the objects of one resource; see Lister.
//
// Deprecated: use ListWithContextFunc.
type ListFunc func(options metav1.ListOptions) (runtime.Object, error)

// ListWithContextFunc lists the objects of one resource, giving up when ctx
// is done; see ListerWithContext.
type ListWithContextFunc func(ctx context.Context, options metav1.ListOptions) (runtime.Object, error)

// WatchFunc starts a watch of one resource; see Watcher.
//
// Deprecated: use WatchFuncWithContext.
type WatchFunc func(options metav1.ListOptions) (watch.Interface, error)

// WatchFuncWithContext starts a watch of one resource, giving up when ctx is
// done; see WatcherWithContext.
type WatchFuncWithContext func(ctx context.Context, options metav1.ListOptions) (watch.Interface, error)

// ListWatch is a ListerWatcher and ListerWatcherWithContext made of plain
// functions, the usual way to feed a Reflector or an informer.
//
// At least one of ListFunc and ListWithContextFunc, and one of WatchFunc and
// WatchFuncWithContext, should be set. Each method prefers the function of
// its own form and falls back to the other: List and Watch call ListFunc and
// WatchFunc when set, else the context forms with context.Background();
// ListWithContext and WatchWithContext call the context forms when set, else
// the plain ones (which cannot see the context). With neither function of a
// pair set, or on a nil ListWatch, the methods panic (a nil function call),
// as client-go's do.
//
// A ListWatch is not modified by its methods; it is safe for concurrent use
// when its functions are.
type ListWatch struct {
	// ListFunc lists; used by List first, by ListWithContext as a fallback.
	//
	// Deprecated: set ListWithContextFunc.
	ListFunc ListFunc
	// WatchFunc watches; used by Watch first, by WatchWithContext as a fallback.
	//
	// Deprecated: set WatchFuncWithContext.
	WatchFunc WatchFunc

	// ListWithContextFunc lists; used by ListWithContext first, by List as a
	// fallback.
	ListWithContextFunc ListWithContextFunc
	// WatchFuncWithContext watches; used by WatchWithContext first, by Watch
	// as a fallback.
	WatchFuncWithContext WatchFuncWithContext

	// DisableChunking asks consumers not to split the initial list into
	// pages for this ListWatch. The ListWatch itself never pages: paging is
	// the Reflector's job.
	DisableChunking bool
}

var (
	_ ListerWatcher            = &ListWatch{}
	_ ListerWatcherWithContext = &ListWatch{}
)

// List calls ListFunc, or ListWithContextFunc with context.Background().
//
// Deprecated: call ListWithContext.
func (lw *ListWatch) List(options metav1.ListOptions) (runtime.Object, error) {
	if lw.ListFunc != nil {
		return lw.ListFunc(options)
	}
	return lw.ListWithContextFunc(context.Background(), options)
}

// ListWithContext calls ListWithContextFunc, or ListFunc.
func (lw *ListWatch) ListWithContext(ctx context.Context, options metav1.ListOptions) (runtime.Object, error) {
	if lw.ListWithContextFunc != nil {
		return lw.ListWithContextFunc(ctx, options)
	}
	return lw.ListFunc(options)
}

// Watch calls WatchFunc, or WatchFuncWithContext with context.Background().
//
// Deprecated: call WatchWithContext.
func (lw *ListWatch) Watch(options metav1.ListOptions) (watch.Interface, error) {
	if lw.WatchFunc != nil {
		return lw.WatchFunc(options)
	}
	return lw.WatchFuncWithContext(context.Background(), options)
}

// WatchWithContext calls WatchFuncWithContext, or WatchFunc.
func (lw *ListWatch) WatchWithContext(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
	if lw.WatchFuncWithContext != nil {
		return lw.WatchFuncWithContext(ctx, options)
	}
	return lw.WatchFunc(options)
}

// ToListWatcherWithWatchListSemantics wraps lw so that it answers the
// watch-list capability probe (IsWatchListSemanticsUnSupported) the way
// client does. Informers built on fake clients use it so that reflectors
// fall back to a plain list against clients that cannot stream one. client
// is asked once, now; a client that does not implement the probe counts as
// able to stream. The result keeps all of lw's methods, the context forms
// included.
func ToListWatcherWithWatchListSemantics(lw *ListWatch, client any) ListerWatcher {
	return &probedListWatch{ListWatch: lw, lacksWatchList: lacksWatchListSemantics(client)}
}

// probedListWatch is a ListWatch with a fixed answer to the watch-list
// capability probe.
type probedListWatch struct {
	*ListWatch
	lacksWatchList bool
}

// IsWatchListSemanticsUnSupported reports whether the client the ListWatch
// talks to said it cannot stream lists.
func (lw *probedListWatch) IsWatchListSemanticsUnSupported() bool {
	return lw.lacksWatchList
}

// NewListWatchFromClient returns a ListWatch that lists and watches resource
// in namespace (every namespace when empty) through c, restricted by
// fieldSelector. See NewFilteredListWatchFromClient.
func NewListWatchFromClient(c Getter, resource string, namespace string, fieldSelector fields.Selector) *ListWatch {
	selector := fields.Everything().String()
	if fieldSelector != nil {
		selector = fieldSelector.String()
	}
	return NewFilteredListWatchFromClient(c, resource, namespace, func(options *metav1.ListOptions) {
		options.FieldSelector = selector
	})
}

// NewFilteredListWatchFromClient returns a ListWatch that lists and watches
// resource in namespace (every namespace when empty) through c. Before each
// request, optionsModifier (if not nil) may edit a copy of the options the
// caller passed; watches have Watch set before it runs. The options are sent
// as query parameters encoded by metav1.ParameterCodec.
//
// All four function fields are set, so callers reading ListFunc or
// WatchFunc directly keep working. c must have the shape described on
// Getter; if it has not, every List and Watch returns an error saying why.
// Errors from the requests themselves are returned unchanged.
func NewFilteredListWatchFromClient(c Getter, resource string, namespace string, optionsModifier func(options *metav1.ListOptions)) *ListWatch {
	client := newRESTRequester(c)
	modify := optionsModifier
	if modify == nil {
		modify = func(*metav1.ListOptions) {}
	}
	listFn := func(ctx context.Context, options metav1.ListOptions) (runtime.Object, error) {
		modify(&options)
		return client.list(ctx, namespace, resource, &options)
	}
	watchFn := func(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
		options.Watch = true
		modify(&options)
		return client.watch(ctx, namespace, resource, &options)
	}
	return &ListWatch{
		ListFunc: func(options metav1.ListOptions) (runtime.Object, error) {
			return listFn(context.Background(), options)
		},
		WatchFunc: func(options metav1.ListOptions) (watch.Interface, error) {
			return watchFn(context.Background(), options)
		},
		ListWithContextFunc:  listFn,
		WatchFuncWithContext: watchFn,
	}
}
