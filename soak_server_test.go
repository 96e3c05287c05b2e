package cache

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// simServer is a simulated API server for Pods, with the parts of
// kube-apiserver's behaviour a reflector depends on:
//
//   - every change takes the next resource version; stored objects are
//     never modified, a change stores a new object;
//   - a watch cache that keeps the last `window` changes: a watch from an
//     older resource version fails with 410, and a watcher that falls that
//     far behind gets an ERROR 410 event and is closed;
//   - lists from "", "0" or a reached resource version serve the newest
//     state, paginated by Limit with continue tokens whose snapshot
//     expires (410) with the window; a resource version not reached yet is
//     "too large";
//   - watches from a resource version replay the retained changes after
//     it, then follow live; watches from "" or "0", and streaming lists,
//     start with the current objects as ADDED events (streaming lists then
//     send the initial-events-end bookmark).
//
// Objects handed out are the stored ones: consumers must not modify them,
// which is the cache's contract anyway.
type simServer struct {
	// mu guards every field below but window and wg.
	mu sync.Mutex
	// rv is the resource version of the newest change.
	rv int64
	// objects holds the current state.
	objects map[string]*v1.Pod
	// log holds the retained changes, oldest first. Invariant: log[i] has
	// resource version rv-len(log)+1+i.
	log []simChange
	// changed is closed, and replaced, at every change and when the server
	// shuts down.
	changed chan struct{}
	// progress is closed, and replaced, whenever a watcher moves on.
	progress chan struct{}
	// watchers are the open watches.
	watchers map[*simWatcher]struct{}
	// snapshots are the lists being paginated, by continue-token id.
	snapshots map[int64]*simSnapshot
	nextID    int64
	shutDown  bool

	// Counters for the report.
	lists, streamingLists, watches, expiredWatchers int64

	// window is the number of changes the watch cache keeps; fixed.
	window int
	// wg counts the watcher goroutines.
	wg sync.WaitGroup
}

// simChange is one recorded change.
type simChange struct {
	typ watch.EventType
	obj *v1.Pod
}

// simSnapshot is the frozen state of a paginated list.
type simSnapshot struct {
	rv    int64
	items []*v1.Pod
}

func newSimServer(window int) *simServer {
	return &simServer{
		window:    window,
		objects:   map[string]*v1.Pod{},
		changed:   make(chan struct{}),
		progress:  make(chan struct{}),
		watchers:  map[*simWatcher]struct{}{},
		snapshots: map[int64]*simSnapshot{},
	}
}

var (
	_ ListerWatcherWithContext = (*simServer)(nil)
	_ ListerWatcher            = (*simServer)(nil)
)

// List is ListWithContext without a context.
func (s *simServer) List(opts metav1.ListOptions) (runtime.Object, error) {
	return s.ListWithContext(context.Background(), opts)
}

// Watch is WatchWithContext without a context.
func (s *simServer) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return s.WatchWithContext(context.Background(), opts)
}

// apply records a change of obj, which the caller must not touch again,
// and returns its resource version. ADDED and MODIFIED store obj, DELETED
// removes it.
func (s *simServer) apply(typ watch.EventType, obj *v1.Pod) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rv++
	obj.ResourceVersion = strconv.FormatInt(s.rv, 10)
	key := obj.Namespace + "/" + obj.Name
	if typ == watch.Deleted {
		delete(s.objects, key)
	} else {
		s.objects[key] = obj
	}
	s.log = append(s.log, simChange{typ: typ, obj: obj})
	if len(s.log) > 2*s.window {
		s.log = slices.Clone(s.log[len(s.log)-s.window:])
	}
	close(s.changed)
	s.changed = make(chan struct{})
	return s.rv
}

// oldestWatchableLocked is the oldest resource version a watch can start
// from: every change after it is retained. Caller holds mu.
func (s *simServer) oldestWatchableLocked() int64 {
	kept := min(len(s.log), s.window)
	return s.rv - int64(kept)
}

// current returns the resource version and the objects, sorted by key.
func (s *simServer) current() (int64, []*v1.Pod) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rv, s.sortedLocked()
}

// sortedLocked returns the current objects in key order. Caller holds mu.
func (s *simServer) sortedLocked() []*v1.Pod {
	items := make([]*v1.Pod, 0, len(s.objects))
	for _, p := range s.objects {
		items = append(items, p)
	}
	slices.SortFunc(items, func(a, b *v1.Pod) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	return items
}

// ListWithContext serves a list or one page of it.
func (s *simServer) ListWithContext(_ context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shutDown {
		return nil, errors.New("sim server: shut down")
	}
	s.dropExpiredSnapshotsLocked()
	var snap *simSnapshot
	offset := 0
	if opts.Continue != "" {
		id, off, err := parseContinue(opts.Continue)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		if snap = s.snapshots[id]; snap == nil {
			return nil, apierrors.NewResourceExpired("sim server: the continue token's snapshot was compacted")
		}
		offset = off
	} else {
		s.lists++
		if err := s.checkNotTooLargeLocked(opts.ResourceVersion); err != nil {
			return nil, err
		}
		snap = &simSnapshot{rv: s.rv, items: s.sortedLocked()}
	}
	end := len(snap.items)
	if opts.Limit > 0 && offset+int(opts.Limit) < end {
		end = offset + int(opts.Limit)
	}
	list := &v1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: strconv.FormatInt(snap.rv, 10)}}
	list.Items = make([]v1.Pod, 0, end-offset)
	for _, p := range snap.items[offset:end] {
		list.Items = append(list.Items, *p)
	}
	if end < len(snap.items) {
		if opts.Continue == "" {
			s.nextID++
			s.snapshots[s.nextID] = snap
			list.Continue = formatContinue(s.nextID, end)
		} else {
			id, _, _ := parseContinue(opts.Continue)
			list.Continue = formatContinue(id, end)
		}
		rest := int64(len(snap.items) - end)
		list.RemainingItemCount = &rest
	} else if opts.Continue != "" {
		id, _, _ := parseContinue(opts.Continue)
		delete(s.snapshots, id)
	}
	return list, nil
}

// dropExpiredSnapshotsLocked forgets the paginated lists whose snapshot
// fell out of the window. Caller holds mu.
func (s *simServer) dropExpiredSnapshotsLocked() {
	oldest := s.oldestWatchableLocked()
	for id, snap := range s.snapshots {
		if snap.rv < oldest {
			delete(s.snapshots, id)
		}
	}
}

func formatContinue(id int64, offset int) string { return fmt.Sprintf("%d:%d", id, offset) }

func parseContinue(token string) (int64, int, error) {
	idText, offText, ok := strings.Cut(token, ":")
	id, err1 := strconv.ParseInt(idText, 10, 64)
	off, err2 := strconv.Atoi(offText)
	if !ok || err1 != nil || err2 != nil || off < 0 {
		return 0, 0, fmt.Errorf("sim server: malformed continue token %q", token)
	}
	return id, off, nil
}

// parseRV reads a resource version: -1 for "" and "0", which mean "any".
func parseRV(rv string) (int64, error) {
	if rv == "" || rv == "0" {
		return -1, nil
	}
	n, err := strconv.ParseInt(rv, 10, 64)
	if err != nil || n < 0 {
		return 0, apierrors.NewBadRequest(fmt.Sprintf("sim server: resource version %q is not a number", rv))
	}
	return n, nil
}

// checkNotTooLargeLocked fails for a resource version the server has not
// reached. Caller holds mu.
func (s *simServer) checkNotTooLargeLocked(rv string) error {
	n, err := parseRV(rv)
	if err != nil {
		return err
	}
	if n > s.rv {
		err := apierrors.NewTimeoutError(fmt.Sprintf("Too large resource version: %d, current: %d", n, s.rv), 1)
		err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{
			Type: metav1.CauseTypeResourceVersionTooLarge, Message: "Too large resource version",
		})
		return err
	}
	return nil
}

// WatchWithContext opens a watch; see simServer.
func (s *simServer) WatchWithContext(_ context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shutDown {
		return nil, errors.New("sim server: shut down")
	}
	s.watches++
	if err := s.checkNotTooLargeLocked(opts.ResourceVersion); err != nil {
		return nil, err
	}
	from, _ := parseRV(opts.ResourceVersion)
	streaming := opts.SendInitialEvents != nil && *opts.SendInitialEvents
	w := &simWatcher{s: s, result: make(chan watch.Event, 16), stop: make(chan struct{}), cursor: from}
	switch {
	case streaming:
		s.streamingLists++
		w.prefix = s.initialEventsLocked(true)
		w.cursor = s.rv
	case from < 0:
		w.prefix = s.initialEventsLocked(false)
		w.cursor = s.rv
	case from < s.oldestWatchableLocked():
		return nil, apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", from, s.oldestWatchableLocked()))
	}
	s.watchers[w] = struct{}{}
	s.wg.Go(w.run)
	return w, nil
}

// initialEventsLocked returns the current objects as ADDED events, and for
// a streaming list the bookmark that ends them. Caller holds mu.
func (s *simServer) initialEventsLocked(endBookmark bool) []watch.Event {
	items := s.sortedLocked()
	events := make([]watch.Event, 0, len(items)+1)
	for _, p := range items {
		events = append(events, watch.Event{Type: watch.Added, Object: p})
	}
	if endBookmark {
		b := &v1.Pod{ObjectMeta: metav1.ObjectMeta{
			ResourceVersion: strconv.FormatInt(s.rv, 10),
			Annotations:     map[string]string{metav1.InitialEventsAnnotationKey: "true"},
		}}
		events = append(events, watch.Event{Type: watch.Bookmark, Object: b})
	}
	return events
}

// waitForWatchers blocks until no open watch is more than maxLag changes
// behind, or fails after timeout: the workload uses it not to outrun its
// consumers by more than the watch cache can absorb.
func (s *simServer) waitForWatchers(maxLag int64, timeout time.Duration) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		lagging := int64(0)
		for w := range s.watchers {
			lagging = max(lagging, s.rv-w.cursor)
		}
		progress := s.progress
		s.mu.Unlock()
		if lagging <= maxLag {
			return nil
		}
		select {
		case <-progress:
		case <-deadline.C:
			return fmt.Errorf("sim server: a watch is still %d changes behind after %v", lagging, timeout)
		}
	}
}

// shutdown closes every watch and waits for their goroutines.
func (s *simServer) shutdown() {
	s.mu.Lock()
	s.shutDown = true
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
	s.wg.Wait()
}

// stats returns the counters of the report.
func (s *simServer) stats() (lists, streamingLists, watches, expiredWatchers int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lists, s.streamingLists, s.watches, s.expiredWatchers
}

// simWatcher is one open watch: a goroutine that sends its prefix, then
// reads the change log from its cursor.
type simWatcher struct {
	s        *simServer
	result   chan watch.Event
	stop     chan struct{}
	stopOnce sync.Once
	prefix   []watch.Event
	// cursor is the resource version of the last change sent; written by
	// the watcher's goroutine under s.mu.
	cursor int64
}

func (w *simWatcher) Stop()                          { w.stopOnce.Do(func() { close(w.stop) }) }
func (w *simWatcher) ResultChan() <-chan watch.Event { return w.result }

func (w *simWatcher) run() {
	defer close(w.result)
	defer w.leave()
	for _, e := range w.prefix {
		if !w.send(e) {
			return
		}
	}
	w.prefix = nil
	for {
		batch, changed, end := w.next()
		if end != nil {
			if end.Type == watch.Error {
				w.send(*end)
			}
			return
		}
		for _, e := range batch {
			if !w.send(e) {
				return
			}
		}
		if len(batch) > 0 {
			w.advance(batch)
			continue
		}
		select {
		case <-changed:
		case <-w.stop:
			return
		}
	}
}

// next returns the changes after the cursor (at most a batch), or, when
// there are none, the channel that closes at the next change. end, when
// not nil, is the event that ends the watch: the server shut down (an
// empty event), or the cursor fell out of the window (an ERROR 410).
func (w *simWatcher) next() (batch []watch.Event, changed <-chan struct{}, end *watch.Event) {
	s := w.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shutDown {
		return nil, nil, &watch.Event{}
	}
	if oldest := s.oldestWatchableLocked(); w.cursor < oldest {
		s.expiredWatchers++
		status := apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", w.cursor, oldest)).ErrStatus
		return nil, nil, &watch.Event{Type: watch.Error, Object: &status}
	}
	start := len(s.log) - int(s.rv-w.cursor)
	last := min(len(s.log), start+64)
	for _, c := range s.log[start:last] {
		batch = append(batch, watch.Event{Type: c.typ, Object: c.obj})
	}
	return batch, s.changed, nil
}

// advance moves the cursor past batch and tells waitForWatchers.
func (w *simWatcher) advance(batch []watch.Event) {
	last := batch[len(batch)-1].Object.(*v1.Pod)
	rv, _ := strconv.ParseInt(last.ResourceVersion, 10, 64)
	s := w.s
	s.mu.Lock()
	defer s.mu.Unlock()
	w.cursor = rv
	close(s.progress)
	s.progress = make(chan struct{})
}

func (w *simWatcher) send(e watch.Event) bool {
	select {
	case w.result <- e:
		return true
	case <-w.stop:
		return false
	}
}

// leave unregisters the watcher.
func (w *simWatcher) leave() {
	s := w.s
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.watchers, w)
	close(s.progress)
	s.progress = make(chan struct{})
}
