// Package simcluster is a simulated Kubernetes cluster of Pods for the
// kcache demo and examples, in place of a real one.
//
// Its API server is the module's one simulated API server, the testing
// package's FakeControllerSource (github.com/kcache/cache/testing), set up
// to behave like kube-apiserver: every change takes the next resource
// version, lists are paged with continue tokens and honour label and field
// selectors, watches resume from a resource version or stream a list, and
// an old resource version or continue token gets 410 Gone. A Cluster adds
// what the demo needs on top: typed Pod writes, a list latency (through the
// testing package's FaultyListerWatcher, so that paging shows), and
// counts. It misbehaves on request the way real servers do: DropWatches
// closes every open watch, and Expire ends them with 410 Gone after
// changes no watcher saw, so that clients must list again.
//
// Resource versions increase but are not contiguous: Expire takes one of
// its own, as writes to other resources would on a real server.
//
// Everything handed out is a deep copy: callers may keep and modify what
// they get without affecting the Cluster.
package simcluster

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	cache "github.com/kcache/cache"
	framework "github.com/kcache/cache/testing"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

// PodsResource is the resource a Cluster serves.
var PodsResource = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

// Options configure a Cluster. The zero value is usable.
type Options struct {
	// ListLatency is how long the Cluster takes to answer one LIST page,
	// so that paging is visible. Zero answers at once.
	ListLatency time.Duration
	// HistoryLimit is how many changes the Cluster remembers for watches
	// that resume from an older resource version; older ones get 410
	// Gone. Default 50,000.
	HistoryLimit int
	// StreamingLists makes the Cluster serve streaming lists (watches with
	// SendInitialEvents); without it the Cluster says it cannot, and
	// clients use paginated lists.
	StreamingLists bool
}

// Stats counts what a Cluster served. Every field is a running total.
type Stats struct {
	// Lists counts LIST requests that began a list (no continue token).
	Lists int64
	// ListPages counts every LIST response, first pages included.
	ListPages int64
	// Watches counts WATCH requests, streaming lists included.
	Watches int64
	// WatchesDropped counts open watches the Cluster ended, by DropWatches
	// or Expire.
	WatchesDropped int64
	// Expirations counts calls to Expire.
	Expirations int64
	// GoneErrors counts 410 Gone answers, the ERROR events Expire sends
	// included.
	GoneErrors int64
}

// Cluster is the simulated cluster. It is safe for concurrent use.
type Cluster struct {
	src *framework.FakeControllerSource
	// lister answers LIST requests: the source, behind a fault injector
	// that injects nothing but the list latency when there is one.
	lister framework.ListerWatcherWithContext
	// expirations counts Expire calls.
	expirations atomic.Int64
}

// New returns an empty Cluster.
func New(opts Options) *Cluster {
	if opts.HistoryLimit <= 0 {
		opts.HistoryLimit = 50000
	}
	src := framework.NewFakeControllerSourceWithOptions(framework.FakeControllerSourceOptions{
		Paging:               true,
		WatchCacheSize:       opts.HistoryLimit,
		NewList:              func() runtime.Object { return &v1.PodList{} },
		Selectors:            true,
		FieldsOf:             podFields,
		RefuseStreamingLists: !opts.StreamingLists,
	})
	c := &Cluster{src: src, lister: sourceWithContext{src}}
	if opts.ListLatency > 0 {
		c.lister = framework.NewFaultyListerWatcher(src, framework.FaultConfig{ListDelay: opts.ListLatency})
	}
	return c
}

// podFields returns the fields a Pod can be selected by: metadata.name,
// metadata.namespace, spec.nodeName and status.phase.
func podFields(obj runtime.Object) fields.Set {
	p, ok := obj.(*v1.Pod)
	if !ok {
		return fields.Set{}
	}
	return fields.Set{
		"metadata.name":      p.Name,
		"metadata.namespace": p.Namespace,
		"spec.nodeName":      p.Spec.NodeName,
		"status.phase":       string(p.Status.Phase),
	}
}

// sourceWithContext gives the source the context-aware methods the fault
// injector's interface names; the source itself needs no context.
type sourceWithContext struct {
	src *framework.FakeControllerSource
}

func (s sourceWithContext) ListWithContext(_ context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	return s.src.List(opts)
}

func (s sourceWithContext) WatchWithContext(_ context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return s.src.Watch(opts)
}

// Close ends every open watch and makes every later request fail. It is
// safe to call more than once.
func (c *Cluster) Close() { c.src.Shutdown() }

// Stats returns the running totals of what the Cluster served.
func (c *Cluster) Stats() Stats {
	st := c.src.Stats()
	return Stats{
		Lists:          st.Lists,
		ListPages:      st.ListPages,
		Watches:        st.Watches,
		WatchesDropped: st.WatchesEnded,
		Expirations:    c.expirations.Load(),
		GoneErrors:     st.GoneErrors,
	}
}

// ResourceVersion returns the newest resource version.
func (c *Cluster) ResourceVersion() string { return c.src.ResourceVersion() }

// Len returns the number of Pods.
func (c *Cluster) Len() int { return c.src.Len() }

// Get returns a copy of the Pod namespace/name.
func (c *Cluster) Get(namespace, name string) (*v1.Pod, bool) {
	return asPod(c.src.Get(namespace, name))
}

// Pods returns copies of every Pod, ordered by namespace and name.
func (c *Cluster) Pods() []*v1.Pod {
	list, err := c.src.List(metav1.ListOptions{})
	if err != nil {
		return nil
	}
	items := list.(*v1.PodList).Items
	out := make([]*v1.Pod, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}

// Create stores a new Pod and returns it as stored, with its resource
// version and, if it had none, a UID. A Pod of the same name is an
// AlreadyExists error.
func (c *Cluster) Create(pod *v1.Pod) (*v1.Pod, error) { return podResult(c.src.Create(pod)) }

// Update replaces a Pod and returns it as stored. A missing Pod is a
// NotFound error; a Pod carrying a resource version other than the stored
// one is a Conflict error (an empty resource version skips that check).
func (c *Cluster) Update(pod *v1.Pod) (*v1.Pod, error) { return podResult(c.src.Update(pod)) }

// Delete removes the Pod namespace/name. A missing Pod is a NotFound error.
func (c *Cluster) Delete(namespace, name string) error { return c.src.Remove(namespace, name) }

// DropWatches closes every open watch, as a restarting API server or a
// load balancer would, and returns how many it closed. Clients resume
// from the last resource version they saw and miss nothing.
func (c *Cluster) DropWatches() int { return c.src.DropWatches() }

// Tx applies changes inside Expire; its methods are the Cluster's. It is
// valid only during the Expire call.
type Tx struct{ tx framework.Tx }

// Get is Cluster.Get inside Expire.
func (tx Tx) Get(namespace, name string) (*v1.Pod, bool) { return asPod(tx.tx.Get(namespace, name)) }

// Create is Cluster.Create inside Expire.
func (tx Tx) Create(pod *v1.Pod) (*v1.Pod, error) { return podResult(tx.tx.Create(pod)) }

// Update is Cluster.Update inside Expire.
func (tx Tx) Update(pod *v1.Pod) (*v1.Pod, error) { return podResult(tx.tx.Update(pod)) }

// Delete is Cluster.Delete inside Expire.
func (tx Tx) Delete(namespace, name string) error { return tx.tx.Remove(namespace, name) }

// Expire simulates etcd compaction while clients are disconnected: it ends
// every open watch with a 410 Gone error, applies changes (which therefore
// no watch sees), and forgets all history. A client resuming a watch, or
// following a continue token issued before the call, gets 410 Gone and
// must list again from the newest state; only that list shows what
// changes did. changes may be nil.
func (c *Cluster) Expire(changes func(Tx) error) error {
	c.expirations.Add(1)
	var apply func(framework.Tx) error
	if changes != nil {
		apply = func(tx framework.Tx) error { return changes(Tx{tx}) }
	}
	return c.src.Expire(apply)
}

// ListWatch returns the Cluster's list and watch functions, the way a
// client-go clientset is usually wrapped for an informer.
func (c *Cluster) ListWatch() *cache.ListWatch {
	return &cache.ListWatch{ListWithContextFunc: c.List, WatchFuncWithContext: c.Watch}
}

// ListerWatcher returns ListWatch wrapped so that it tells reflectors
// whether the Cluster serves streaming lists (see Options.StreamingLists).
func (c *Cluster) ListerWatcher() cache.ListerWatcher {
	return cache.ToListWatcherWithWatchListSemantics(c.ListWatch(), c)
}

// IsWatchListSemanticsUnSupported reports whether the Cluster refuses
// streaming lists; reflectors ask before trying one.
func (c *Cluster) IsWatchListSemanticsUnSupported() bool {
	return c.src.IsWatchListSemanticsUnSupported()
}

// List answers a LIST request with a *v1.PodList. With opts.Limit it
// returns one page and a continue token for the next. A continue token
// from before the last Expire, or too old for the history, is a 410 Gone
// error. Every page takes Options.ListLatency.
func (c *Cluster) List(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	return c.lister.ListWithContext(ctx, opts)
}

// Watch answers a WATCH request: from resource version N it replays the
// changes after N, then live ones; a version older than the history is a
// 410 Gone error. With opts.SendInitialEvents (and Options.StreamingLists)
// it streams a list: the current Pods as ADDED, then a bookmark marked
// "k8s.io/initial-events-end", then live changes.
func (c *Cluster) Watch(_ context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return c.src.Watch(opts)
}

// asPod converts a Get result.
func asPod(obj runtime.Object, ok bool) (*v1.Pod, bool) {
	if !ok {
		return nil, false
	}
	return obj.(*v1.Pod), true
}

// podResult converts a write's result.
func podResult(obj runtime.Object, err error) (*v1.Pod, error) {
	if err != nil {
		return nil, err
	}
	p, ok := obj.(*v1.Pod)
	if !ok {
		return nil, fmt.Errorf("the source stored a %T, not a Pod", obj)
	}
	return p, nil
}
