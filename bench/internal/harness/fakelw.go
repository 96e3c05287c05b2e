package harness

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// Snapshot is the state a FakeLW serves to a list or to the initial events
// of a streaming list: Len pods at resourceVersion RV.
type Snapshot struct {
	Len int
	RV  string
	// Fill writes pod i into dst. It is called once per pod served, so a
	// Fill that builds fresh objects models an API server whose responses
	// are decoded into new memory every time.
	Fill func(dst *v1.Pod, i int)
}

// FakeLW is an in-memory ListerWatcher of pods shared by both cache
// packages (their ListerWatcher interfaces have the same method set). It
// serves plain and paginated lists, streaming lists (SendInitialEvents with
// the initial-events-end bookmark) and watches whose events the harness
// pushes with Watch.Send; Watch.Expire ends a watch with a 410 so the
// informer relists.
//
// It does not check resource versions: a workload that pushes an event is
// trusted to have made it newer than what the informer holds.
type FakeLW struct {
	noWatchList bool

	// mu guards snap, current and next.
	mu sync.Mutex
	// snap is served to every list and streaming list started from now on.
	snap Snapshot
	// current is the most recent watch, nil before the first.
	current *Watch
	// next is closed, then replaced, when a watch newer than current starts.
	next chan struct{}
}

// NewFakeLW returns a FakeLW serving snap. With watchList false it reports
// that it cannot stream lists, so informers list (and page) instead.
func NewFakeLW(snap Snapshot, watchList bool) *FakeLW {
	return &FakeLW{noWatchList: !watchList, snap: snap, next: make(chan struct{})}
}

// IsWatchListSemanticsUnSupported is the capability probe both reflectors
// make before trying a streaming list.
func (lw *FakeLW) IsWatchListSemanticsUnSupported() bool { return lw.noWatchList }

// SetSnapshot replaces what later lists and streaming lists serve.
func (lw *FakeLW) SetSnapshot(snap Snapshot) {
	lw.mu.Lock()
	lw.snap = snap
	lw.mu.Unlock()
}

// List serves snap. Like the API server it ignores Limit when asked for
// resourceVersion "0" and pages otherwise, the continue token being the
// index of the next pod.
func (lw *FakeLW) List(options metav1.ListOptions) (runtime.Object, error) {
	lw.mu.Lock()
	snap := lw.snap
	lw.mu.Unlock()
	start, end := 0, snap.Len
	if options.Continue != "" {
		n, err := strconv.Atoi(options.Continue)
		if err != nil || n < 0 || n > snap.Len {
			return nil, fmt.Errorf("fake list: bad continue token %q", options.Continue)
		}
		start = n
	}
	list := &v1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: snap.RV}}
	if options.Limit > 0 && options.ResourceVersion != "0" && start+int(options.Limit) < snap.Len {
		end = start + int(options.Limit)
		list.Continue = strconv.Itoa(end)
	}
	list.Items = make([]v1.Pod, end-start)
	for i := range list.Items {
		snap.Fill(&list.Items[i], start+i)
	}
	return list, nil
}

// Watch starts a watch. A streaming-list request first gets every pod of
// snap as an Added event and then the bookmark that ends the initial
// events; pushed events follow.
func (lw *FakeLW) Watch(options metav1.ListOptions) (watch.Interface, error) {
	w := &Watch{
		ch:      make(chan watch.Event, 128),
		stopped: make(chan struct{}),
		ready:   make(chan struct{}),
	}
	lw.mu.Lock()
	snap := lw.snap
	lw.current = w
	close(lw.next)
	lw.next = make(chan struct{})
	lw.mu.Unlock()
	if options.SendInitialEvents != nil && *options.SendInitialEvents {
		go w.streamInitial(snap)
	} else {
		close(w.ready)
	}
	return w, nil
}

// ReadyWatch waits for the newest watch that is past its initial events
// and not stopped, and returns it.
func (lw *FakeLW) ReadyWatch(ctx context.Context) (*Watch, error) {
	for {
		lw.mu.Lock()
		w, next := lw.current, lw.next
		lw.mu.Unlock()
		if w != nil {
			select {
			case <-w.ready:
				select {
				case <-w.stopped:
				default:
					return w, nil
				}
			case <-w.stopped:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		select {
		case <-next:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// ErrWatchStopped is returned by Send and Expire when the informer stopped
// the watch.
var ErrWatchStopped = errors.New("fake watch: stopped by its consumer")

// Watch is one watch served by FakeLW. After ReadyWatch returned it, one
// goroutine at a time may Send to it and finally Expire it.
type Watch struct {
	ch      chan watch.Event
	stopped chan struct{} // closed by Stop
	once    sync.Once
	ready   chan struct{} // closed once the initial events, if any, are sent
}

// Stop ends the watch from the consumer side.
func (w *Watch) Stop() { w.once.Do(func() { close(w.stopped) }) }

// ResultChan is the event stream.
func (w *Watch) ResultChan() <-chan watch.Event { return w.ch }

// Send delivers ev, waiting while the consumer is behind.
func (w *Watch) Send(ctx context.Context, ev watch.Event) error {
	select {
	case w.ch <- ev:
		return nil
	case <-w.stopped:
		return ErrWatchStopped
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Expire sends the 410 error that tells the informer its resource version
// is too old, then ends the stream; the informer relists.
func (w *Watch) Expire(ctx context.Context) error {
	gone := &metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusGone,
		Reason:  metav1.StatusReasonExpired,
		Message: "fake watch: resource version too old",
	}
	if err := w.Send(ctx, watch.Event{Type: watch.Error, Object: gone}); err != nil {
		return err
	}
	close(w.ch)
	return nil
}

// streamInitial sends snap as Added events and the closing bookmark.
func (w *Watch) streamInitial(snap Snapshot) {
	for i := 0; i < snap.Len; i++ {
		p := new(v1.Pod)
		snap.Fill(p, i)
		select {
		case w.ch <- watch.Event{Type: watch.Added, Object: p}:
		case <-w.stopped:
			return
		}
	}
	bookmark := &v1.Pod{ObjectMeta: metav1.ObjectMeta{
		ResourceVersion: snap.RV,
		Annotations:     map[string]string{metav1.InitialEventsAnnotationKey: "true"},
	}}
	select {
	case w.ch <- watch.Event{Type: watch.Bookmark, Object: bookmark}:
		close(w.ready)
	case <-w.stopped:
	}
}
