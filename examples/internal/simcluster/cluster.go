// Package simcluster is a small in-process Kubernetes API server for Pods,
// used by the kcache demo and examples in place of a real cluster.
//
// A Cluster keeps a set of Pods and numbers every change with a new
// resource version, as etcd does. It serves LIST (with pages, continue
// tokens and label and field selectors) and WATCH (resuming from a
// resource version, optionally as a streaming list) through ListWatch, and
// it can misbehave on request the way real servers do: DropWatches closes
// every open watch, and Expire ends them with "410 Gone" after changes no
// watcher saw, so that clients must list again.
//
// Resource versions increase but are not contiguous: Expire takes one of
// its own, as writes to other resources would on a real server.
//
// Everything handed out is a deep copy: callers may keep and modify what
// they get without affecting the Cluster.
package simcluster

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// PodsResource is the resource a Cluster serves.
var PodsResource = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

var podsGroupResource = PodsResource.GroupResource()

// Options configure a Cluster. The zero value is usable.
type Options struct {
	// ListLatency is how long the Cluster takes to answer one LIST page,
	// so that paging is visible. Zero answers at once.
	ListLatency time.Duration
	// HistoryLimit is how many changes the Cluster remembers for watches
	// that resume from an older resource version; older ones get 410
	// Gone. Default 50,000.
	HistoryLimit int
	// WatchBacklogLimit is how many events a watch may fall behind by
	// before the Cluster ends it, as an API server ends a watcher that
	// does not keep up. Default 100,000.
	WatchBacklogLimit int
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
	// WatchesDropped counts watches ended by DropWatches.
	WatchesDropped int64
	// Expirations counts calls to Expire.
	Expirations int64
	// GoneErrors counts requests answered with 410 Gone.
	GoneErrors int64
	// SlowWatchesEnded counts watches ended for falling behind.
	SlowWatchesEnded int64
}

// Cluster is the simulated API server. It is safe for concurrent use.
type Cluster struct {
	opts Options

	// mu guards everything below it.
	mu sync.Mutex
	// rv is the newest resource version; each change increments it.
	rv uint64
	// pods holds the current state by "namespace/name".
	pods map[string]*v1.Pod
	// history holds the changes with a resource version above compacted,
	// oldest first.
	history []change
	// compacted is the newest resource version that is no longer in
	// history: a watch or list from an older version gets 410 Gone.
	compacted uint64
	// watchers are the open watches.
	watchers map[*watcher]struct{}
	// snapshots are the list results that continue tokens page through.
	snapshots map[uint64]*snapshot
	// nextSnapshot numbers snapshots.
	nextSnapshot uint64
	// closed is set by Close.
	closed bool

	stats struct {
		lists, listPages, watches, dropped, expirations, gone, slow atomic.Int64
	}
}

// change is one entry of the history.
type change struct {
	rv  uint64
	typ watch.EventType
	pod *v1.Pod
}

// ErrClosed is returned by every request after Close.
var ErrClosed = errors.New("simulated cluster is closed")

// New returns an empty Cluster.
func New(opts Options) *Cluster {
	if opts.HistoryLimit <= 0 {
		opts.HistoryLimit = 50000
	}
	if opts.WatchBacklogLimit <= 0 {
		opts.WatchBacklogLimit = 100000
	}
	return &Cluster{
		opts:      opts,
		pods:      map[string]*v1.Pod{},
		watchers:  map[*watcher]struct{}{},
		snapshots: map[uint64]*snapshot{},
	}
}

// Close ends every open watch and makes every later request fail. It is
// safe to call more than once.
func (c *Cluster) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for w := range c.watchers {
		w.end(nil)
	}
	clear(c.watchers)
}

// Stats returns the running totals of what the Cluster served.
func (c *Cluster) Stats() Stats {
	return Stats{
		Lists:            c.stats.lists.Load(),
		ListPages:        c.stats.listPages.Load(),
		Watches:          c.stats.watches.Load(),
		WatchesDropped:   c.stats.dropped.Load(),
		Expirations:      c.stats.expirations.Load(),
		GoneErrors:       c.stats.gone.Load(),
		SlowWatchesEnded: c.stats.slow.Load(),
	}
}

// ResourceVersion returns the newest resource version.
func (c *Cluster) ResourceVersion() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strconv.FormatUint(c.rv, 10)
}

// Len returns the number of Pods.
func (c *Cluster) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pods)
}

// Get returns a copy of the Pod namespace/name.
func (c *Cluster) Get(namespace, name string) (*v1.Pod, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.getLocked(namespace, name)
}

func (c *Cluster) getLocked(namespace, name string) (*v1.Pod, bool) {
	p, ok := c.pods[namespace+"/"+name]
	if !ok {
		return nil, false
	}
	return p.DeepCopy(), true
}

// Pods returns copies of every Pod, ordered by namespace and name.
func (c *Cluster) Pods() []*v1.Pod {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*v1.Pod, 0, len(c.pods))
	for _, key := range c.sortedKeysLocked() {
		out = append(out, c.pods[key].DeepCopy())
	}
	return out
}

// Create stores a new Pod and returns it as stored, with its resource
// version and, if it had none, a UID. A Pod of the same name is an
// AlreadyExists error.
func (c *Cluster) Create(pod *v1.Pod) (*v1.Pod, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.createLocked(pod, true)
}

// Update replaces a Pod and returns it as stored. A missing Pod is a
// NotFound error; a Pod carrying a resource version other than the stored
// one is a Conflict error (an empty resource version skips that check).
func (c *Cluster) Update(pod *v1.Pod) (*v1.Pod, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.updateLocked(pod, true)
}

// Delete removes the Pod namespace/name. A missing Pod is a NotFound error.
func (c *Cluster) Delete(namespace, name string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.deleteLocked(namespace, name, true)
}

// DropWatches closes every open watch, as a restarting API server or a
// load balancer would, and returns how many it closed. Clients resume
// from the last resource version they saw and miss nothing.
func (c *Cluster) DropWatches() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(c.watchers)
	for w := range c.watchers {
		w.end(nil)
	}
	clear(c.watchers)
	c.stats.dropped.Add(int64(n))
	return n
}

// Tx applies changes inside Expire; its methods are the Cluster's. It is valid only during the Expire call.
type Tx struct{ c *Cluster }

// Get is Cluster.Get inside Expire.
func (tx Tx) Get(namespace, name string) (*v1.Pod, bool) { return tx.c.getLocked(namespace, name) }

// Create is Cluster.Create inside Expire.
func (tx Tx) Create(pod *v1.Pod) (*v1.Pod, error) { return tx.c.createLocked(pod, false) }

// Update is Cluster.Update inside Expire.
func (tx Tx) Update(pod *v1.Pod) (*v1.Pod, error) { return tx.c.updateLocked(pod, false) }

// Delete is Cluster.Delete inside Expire.
func (tx Tx) Delete(namespace, name string) error {
	return tx.c.deleteLocked(namespace, name, false)
}

// Expire simulates etcd compaction while clients are disconnected: it ends
// every open watch with a 410 Gone error, applies changes (which therefore
// no watch sees), and forgets all history and list snapshots. A client
// resuming a watch, listing from a resource version or following a
// continue token issued before the call gets 410 Gone and must list again
// from the newest state; only that list shows what changes did. changes
// may be nil.
func (c *Cluster) Expire(changes func(Tx) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stats.expirations.Add(1)
	for w := range c.watchers {
		w.end(goneStatus("too old resource version: the history was compacted"))
	}
	clear(c.watchers)
	var err error
	if changes != nil {
		err = changes(Tx{c})
	}
	// The compaction takes a resource version of its own, as writes to
	// other resources would on a real server, so that every version handed
	// out before is now too old, even when changes did nothing.
	c.rv++
	c.history = nil
	c.compacted = c.rv
	clear(c.snapshots)
	if err != nil {
		return fmt.Errorf("changes while expiring: %w", err)
	}
	return nil
}

func (c *Cluster) createLocked(pod *v1.Pod, notify bool) (*v1.Pod, error) {
	if c.closed {
		return nil, ErrClosed
	}
	key := pod.Namespace + "/" + pod.Name
	if pod.Name == "" {
		return nil, apierrors.NewBadRequest("creating a pod: name is required")
	}
	if _, ok := c.pods[key]; ok {
		return nil, apierrors.NewAlreadyExists(podsGroupResource, key)
	}
	stored := pod.DeepCopy()
	c.rv++
	stored.ResourceVersion = strconv.FormatUint(c.rv, 10)
	if stored.UID == "" {
		stored.UID = types.UID(fmt.Sprintf("uid-%d", c.rv))
	}
	c.pods[key] = stored
	c.recordLocked(watch.Added, stored, notify)
	return stored.DeepCopy(), nil
}

func (c *Cluster) updateLocked(pod *v1.Pod, notify bool) (*v1.Pod, error) {
	if c.closed {
		return nil, ErrClosed
	}
	key := pod.Namespace + "/" + pod.Name
	old, ok := c.pods[key]
	if !ok {
		return nil, apierrors.NewNotFound(podsGroupResource, key)
	}
	if pod.ResourceVersion != "" && pod.ResourceVersion != old.ResourceVersion {
		return nil, apierrors.NewConflict(podsGroupResource, key,
			fmt.Errorf("resource version %s is not the stored %s", pod.ResourceVersion, old.ResourceVersion))
	}
	stored := pod.DeepCopy()
	c.rv++
	stored.ResourceVersion = strconv.FormatUint(c.rv, 10)
	stored.UID = old.UID
	c.pods[key] = stored
	c.recordLocked(watch.Modified, stored, notify)
	return stored.DeepCopy(), nil
}

func (c *Cluster) deleteLocked(namespace, name string, notify bool) error {
	if c.closed {
		return ErrClosed
	}
	key := namespace + "/" + name
	old, ok := c.pods[key]
	if !ok {
		return apierrors.NewNotFound(podsGroupResource, key)
	}
	delete(c.pods, key)
	c.rv++
	// The deleted object carries the deletion's resource version, as a
	// real server's DELETED event does.
	gone := old.DeepCopy()
	gone.ResourceVersion = strconv.FormatUint(c.rv, 10)
	c.recordLocked(watch.Deleted, gone, notify)
	return nil
}

// recordLocked appends a change to the history and, if notify, sends it
// to every open watch that selects it. The caller holds c.mu.
func (c *Cluster) recordLocked(typ watch.EventType, pod *v1.Pod, notify bool) {
	c.history = append(c.history, change{rv: c.rv, typ: typ, pod: pod})
	// Trim in chunks of a quarter of the limit, so that the cost of
	// shifting the history is spread over many changes.
	if len(c.history) > c.opts.HistoryLimit+c.opts.HistoryLimit/4 {
		over := len(c.history) - c.opts.HistoryLimit
		c.compacted = c.history[over-1].rv
		clear(c.history[:over])
		c.history = slices.Delete(c.history, 0, over)
	}
	if !notify {
		return
	}
	for w := range c.watchers {
		if !w.selects(pod) {
			continue
		}
		if !w.send(watch.Event{Type: typ, Object: pod.DeepCopy()}) {
			delete(c.watchers, w)
			c.stats.slow.Add(1)
		}
	}
}

// sortedKeysLocked returns the keys of every Pod in order. The caller
// holds c.mu.
func (c *Cluster) sortedKeysLocked() []string {
	keys := make([]string, 0, len(c.pods))
	for key := range c.pods {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	return keys
}

// goneStatus is the error a server sends for a resource version it no
// longer has.
func goneStatus(msg string) *apierrors.StatusError {
	return apierrors.NewResourceExpired(msg)
}
