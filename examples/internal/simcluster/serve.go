package simcluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	cache "github.com/kcache/cache"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// maxSnapshots bounds the list results kept for continue tokens; the
// oldest is forgotten first, and its token then gets 410 Gone.
const maxSnapshots = 64

// snapshot is a list result being paged through.
type snapshot struct {
	rv   uint64
	pods []*v1.Pod
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
func (c *Cluster) IsWatchListSemanticsUnSupported() bool { return !c.opts.StreamingLists }

// List answers a LIST request with a *v1.PodList. With opts.Limit it
// returns one page and a continue token for the next. A resource version
// older than the compacted history, or a continue token the Cluster
// forgot, is a 410 Gone error. Every page takes Options.ListLatency.
func (c *Cluster) List(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	sel, err := parseSelector(opts)
	if err != nil {
		return nil, err
	}
	list, err := c.listPage(sel, opts)
	if err != nil {
		return nil, err
	}
	if err := c.wait(ctx, c.opts.ListLatency); err != nil {
		return nil, err
	}
	return list, nil
}

func (c *Cluster) listPage(sel selector, opts metav1.ListOptions) (*v1.PodList, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	c.stats.listPages.Add(1)
	var (
		id     uint64
		offset int
		snap   *snapshot
	)
	if opts.Continue != "" {
		var ok bool
		id, offset, ok = parseContinue(opts.Continue)
		if snap = c.snapshots[id]; !ok || snap == nil || offset > len(snap.pods) {
			c.stats.gone.Add(1)
			return nil, goneStatus("the continue token is too old: list again without it")
		}
	} else {
		c.stats.lists.Add(1)
		if err := c.checkResourceVersionLocked(opts.ResourceVersion); err != nil {
			return nil, err
		}
		snap = &snapshot{rv: c.rv}
		for _, key := range c.sortedKeysLocked() {
			if p := c.pods[key]; sel.matches(p) {
				snap.pods = append(snap.pods, p)
			}
		}
	}

	end := len(snap.pods)
	if opts.Limit > 0 && int64(end-offset) > opts.Limit {
		end = offset + int(opts.Limit)
	}
	list := &v1.PodList{
		ListMeta: metav1.ListMeta{ResourceVersion: strconv.FormatUint(snap.rv, 10)},
		Items:    make([]v1.Pod, 0, end-offset),
	}
	for _, p := range snap.pods[offset:end] {
		list.Items = append(list.Items, *p.DeepCopy())
	}
	if end < len(snap.pods) {
		if id == 0 {
			id = c.keepSnapshotLocked(snap)
		}
		list.Continue = fmt.Sprintf("%d:%d", id, end)
		remaining := int64(len(snap.pods) - end)
		list.RemainingItemCount = &remaining
	} else if id != 0 {
		delete(c.snapshots, id)
	}
	return list, nil
}

// keepSnapshotLocked registers snap for continue tokens and returns its
// number. The caller holds c.mu.
func (c *Cluster) keepSnapshotLocked(snap *snapshot) uint64 {
	if len(c.snapshots) >= maxSnapshots {
		delete(c.snapshots, slices.Min(mapKeys(c.snapshots)))
	}
	c.nextSnapshot++
	c.snapshots[c.nextSnapshot] = snap
	return c.nextSnapshot
}

func mapKeys(m map[uint64]*snapshot) []uint64 {
	keys := make([]uint64, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}

func parseContinue(token string) (id uint64, offset int, ok bool) {
	idText, offText, found := strings.Cut(token, ":")
	if !found {
		return 0, 0, false
	}
	id, err1 := strconv.ParseUint(idText, 10, 64)
	offset, err2 := strconv.Atoi(offText)
	return id, offset, err1 == nil && err2 == nil && id > 0 && offset >= 0
}

// checkResourceVersionLocked says whether the Cluster can serve a request
// at rv: "" and "0" always, a version it compacted never (410 Gone), a
// version from the future neither. The caller holds c.mu.
func (c *Cluster) checkResourceVersionLocked(rv string) error {
	if rv == "" || rv == "0" {
		return nil
	}
	n, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("invalid resource version %q", rv))
	}
	if n < c.compacted {
		c.stats.gone.Add(1)
		return goneStatus(fmt.Sprintf("too old resource version: %d (%d)", n, c.compacted))
	}
	if n > c.rv {
		err := apierrors.NewTimeoutError("Too large resource version", 1)
		err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{
			Type:    metav1.CauseTypeResourceVersionTooLarge,
			Message: "Too large resource version",
		})
		return err
	}
	return nil
}

// Watch answers a WATCH request. From resource version "" or "0" it first
// sends every current Pod as ADDED; from a version N it replays the changes
// after N, or ends at once with a 410 Gone ERROR event when N is older than
// the compacted history. With opts.SendInitialEvents (and
// Options.StreamingLists) it streams a list: the current Pods as ADDED,
// then a bookmark marked "k8s.io/initial-events-end", then live changes.
func (c *Cluster) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	sel, err := parseSelector(opts)
	if err != nil {
		return nil, err
	}
	streaming := opts.SendInitialEvents != nil && *opts.SendInitialEvents
	if streaming && !c.opts.StreamingLists {
		return nil, apierrors.NewBadRequest("this server does not serve streaming lists (sendInitialEvents)")
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	c.stats.watches.Add(1)
	w := newWatcher(c, sel)
	switch {
	case streaming:
		if err := c.checkResourceVersionLocked(opts.ResourceVersion); err != nil && !apierrors.IsResourceExpired(err) {
			return nil, err
		}
		c.queueCurrentLocked(w)
		if opts.AllowWatchBookmarks {
			w.queue = append(w.queue, watch.Event{Type: watch.Bookmark, Object: c.bookmarkLocked(true)})
		}
	case opts.ResourceVersion == "" || opts.ResourceVersion == "0":
		c.queueCurrentLocked(w)
	default:
		if err := c.checkResourceVersionLocked(opts.ResourceVersion); err != nil {
			// A real server accepts the watch and ends it with an ERROR
			// event; clients must handle both forms.
			var status *apierrors.StatusError
			if !apierrors.IsResourceExpired(err) || !errors.As(err, &status) {
				return nil, err
			}
			w.end(status)
			go w.run()
			return w, nil
		}
		from, _ := strconv.ParseUint(opts.ResourceVersion, 10, 64)
		c.queueHistoryLocked(w, from)
	}
	c.watchers[w] = struct{}{}
	go w.run()
	return w, nil
}

// queueCurrentLocked queues every current Pod the watch selects as ADDED.
// The caller holds c.mu.
func (c *Cluster) queueCurrentLocked(w *watcher) {
	for _, key := range c.sortedKeysLocked() {
		if p := c.pods[key]; w.selects(p) {
			w.queue = append(w.queue, watch.Event{Type: watch.Added, Object: p.DeepCopy()})
		}
	}
}

// queueHistoryLocked queues the changes after resource version from that
// the watch selects. The caller holds c.mu.
func (c *Cluster) queueHistoryLocked(w *watcher, from uint64) {
	start := sort.Search(len(c.history), func(i int) bool { return c.history[i].rv > from })
	for _, ch := range c.history[start:] {
		if w.selects(ch.pod) {
			w.queue = append(w.queue, watch.Event{Type: ch.typ, Object: ch.pod.DeepCopy()})
		}
	}
}

// bookmarkLocked returns a bookmark object at the newest resource version.
// The caller holds c.mu.
func (c *Cluster) bookmarkLocked(initialEventsEnd bool) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: strconv.FormatUint(c.rv, 10)}}
	if initialEventsEnd {
		p.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: "true"}
	}
	return p
}

// forget removes a watcher the client stopped.
func (c *Cluster) forget(w *watcher) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.watchers, w)
}

// wait sleeps for d, or until ctx is done.
func (c *Cluster) wait(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// selector is a request's label and field selectors.
type selector struct {
	labels labels.Selector
	fields fields.Selector
}

func parseSelector(opts metav1.ListOptions) (selector, error) {
	sel := selector{labels: labels.Everything(), fields: fields.Everything()}
	var err error
	if opts.LabelSelector != "" {
		if sel.labels, err = labels.Parse(opts.LabelSelector); err != nil {
			return selector{}, apierrors.NewBadRequest(fmt.Sprintf("invalid label selector: %v", err))
		}
	}
	if opts.FieldSelector != "" {
		if sel.fields, err = fields.ParseSelector(opts.FieldSelector); err != nil {
			return selector{}, apierrors.NewBadRequest(fmt.Sprintf("invalid field selector: %v", err))
		}
	}
	return sel, nil
}

// matches reports whether pod passes both selectors. The fields a Pod
// can be selected by are metadata.name, metadata.namespace, spec.nodeName
// and status.phase.
func (s selector) matches(pod *v1.Pod) bool {
	if !s.labels.Empty() && !s.labels.Matches(labels.Set(pod.Labels)) {
		return false
	}
	if s.fields.Empty() {
		return true
	}
	return s.fields.Matches(fields.Set{
		"metadata.name":      pod.Name,
		"metadata.namespace": pod.Namespace,
		"spec.nodeName":      pod.Spec.NodeName,
		"status.phase":       string(pod.Status.Phase),
	})
}
