package framework

import (
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// FakeControllerSourceOptions turns on the parts of kube-apiserver's
// behaviour that client-go's fake leaves out. The zero value gives a source
// that behaves as NewFakeControllerSource's.
type FakeControllerSourceOptions struct {
	// Paging makes List serve pages, as kube-apiserver does: at most
	// options.Limit objects per call (all of them when Limit is 0) and a
	// continue token for the rest. Every page of a list shows the state at
	// the first page's resource version, which each page reports. A
	// continue token whose resource version is no longer retained (see
	// WatchCacheSize, Compact and ResetWatch) fails with 410 Expired, a
	// malformed one with 400 Bad Request, and a first page asked for at a
	// resource version the source has not reached yet fails as "too large".
	Paging bool

	// WatchCacheSize is how many recent changes the source retains, like
	// the watch cache of kube-apiserver: a Watch can resume from, and a
	// continue token can point at, a resource version at most that many
	// changes old; an older one fails with 410 Expired. Zero retains every
	// change since the last Compact or ResetWatch. Watches already open are
	// not affected: they get every change.
	WatchCacheSize int

	// NewList returns the empty list object List fills, such as a
	// *v1.PodList, so that the source answers as a typed client does. Nil
	// lists into a *v1.List.
	NewList func() runtime.Object

	// Selectors makes List, Watch and streaming lists honour the label and
	// field selectors of their options, as kube-apiserver does; client-go's
	// fake ignores them. A selector that does not parse is a 400 Bad
	// Request. A watch judges each event by the object it carries (see the
	// package doc for how that differs from kube-apiserver).
	Selectors bool
	// FieldsOf returns the fields an object can be selected by, such as a
	// Pod's spec.nodeName. Nil selects by metadata.name and
	// metadata.namespace only.
	FieldsOf func(runtime.Object) fields.Set

	// RefuseStreamingLists makes the source answer a streaming list (a
	// Watch with SendInitialEvents) with 400 Bad Request and say so to
	// reflectors (IsWatchListSemanticsUnSupported), as an API server older
	// than the WatchList feature does, so that they list and page instead.
	RefuseStreamingLists bool

	// ShareObjects makes the source copy nothing: changes store the
	// caller's object itself, and lists and watches hand out the stored
	// objects. It is for benchmarks, so that copies cost nothing in the
	// measurements; nobody may then modify an object once given to or
	// received from the source.
	ShareObjects bool

	// HandOut, when set, models an API server whose responses are decoded
	// into fresh memory: changes store the caller's object itself (the
	// caller must not modify it afterwards), and every object a consumer
	// gets is HandOut(stored), built when it is handed over: for each list
	// item, and for each watch event (bookmarks included, whose object is
	// an empty one of the stored type with a resource version and maybe
	// an annotation) as the watch delivers it. A benchmark can so store a
	// small form of its objects and hand out full ones. HandOut must not
	// modify stored, should keep its name, namespace, UID, resource
	// version and annotations, and is called from several goroutines.
	HandOut func(stored runtime.Object) runtime.Object
}

// IsWatchListSemanticsUnSupported reports whether the source refuses
// streaming lists (FakeControllerSourceOptions.RefuseStreamingLists); a
// reflector asks before it tries one.
func (f *FakeControllerSource) IsWatchListSemanticsUnSupported() bool {
	return f.opts.RefuseStreamingLists
}

// NewFakeControllerSourceWithOptions returns an empty source whose List
// returns a *v1.List, with the behaviour opts turn on. Call Shutdown when
// done: the source runs a goroutine. It panics if opts.WatchCacheSize is
// negative.
func NewFakeControllerSourceWithOptions(opts FakeControllerSourceOptions) *FakeControllerSource {
	if opts.WatchCacheSize < 0 {
		panic(fmt.Sprintf("framework.NewFakeControllerSourceWithOptions: WatchCacheSize is %d, want 0 or more", opts.WatchCacheSize))
	}
	f := &FakeControllerSource{opts: opts}
	f.init(nil)
	return f
}

// Compact discards the recorded changes, as compaction does in etcd: open
// watches go on, but a Watch from, or a continue token at, a resource
// version older than the current one fails with 410 Expired from now on.
func (f *FakeControllerSource) Compact() {
	f.lock.Lock()
	defer f.lock.Unlock()
	clear(f.changes)
	f.changes = nil
}

// ResourceVersion returns the resource version of the newest change, "0"
// before any: what a consistent List would report.
func (f *FakeControllerSource) ResourceVersion() string {
	f.lock.RLock()
	defer f.lock.RUnlock()
	return strconv.Itoa(f.lastRV)
}

// Bookmark sends a BOOKMARK event at the current resource version to the
// open watches, as kube-apiserver does now and then to let idle watchers
// move their resource version on. Its object is an empty object of the
// resource's type carrying only the resource version. Bookmark does nothing
// until the type is known (an object was added, or the source is typed)
// and after Shutdown. Like a change, it waits for watches whose buffer is
// full.
//
// kube-apiserver only sends bookmarks to watches that set
// AllowWatchBookmarks, as reflectors always do; this fake sends them to
// every open watch, so call it only when every watcher asked for them.
func (f *FakeControllerSource) Bookmark() {
	f.publishMu.Lock()
	defer f.publishMu.Unlock()
	f.lock.RLock()
	b, example, rv, shutDown := f.Broadcaster, f.example, f.lastRV, f.shutDown
	f.lock.RUnlock()
	if shutDown || example == nil {
		return
	}
	obj, err := emptyLike(example)
	if err != nil {
		return
	}
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	accessor.SetResourceVersion(strconv.Itoa(rv))
	_ = b.Action(watch.Bookmark, obj)
}
