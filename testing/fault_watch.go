package framework

import (
	"errors"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// faultyWatch relays a wrapped stream to its consumer through one
// goroutine, which injects the stream faults. Relaying through a single
// goroutine is what keeps events in order whatever is injected.
type faultyWatch struct {
	f      *FaultyListerWatcher
	inner  watch.Interface
	result chan watch.Event
	// stopped is closed by Stop; the relay then stops the wrapped stream
	// and closes result.
	stopped  chan struct{}
	stopOnce sync.Once
	// bookmarks is set when the consumer asked for bookmarks.
	bookmarks bool

	// The fields below belong to the relay goroutine.

	// live is set once the stream is past synthetic ADDED events, whose
	// resource versions are not a point to resume from: at once for a
	// watch from a given resource version, else at the first event that is
	// not ADDED.
	live bool
	// lastRV and last are the resource version and object of the newest
	// live event delivered: where an injected bookmark points, and the
	// template of its object.
	lastRV string
	last   runtime.Object
}

var _ watch.Interface = (*faultyWatch)(nil)

func newFaultyWatch(f *FaultyListerWatcher, inner watch.Interface, options metav1.ListOptions) *faultyWatch {
	streamingList := options.SendInitialEvents != nil && *options.SendInitialEvents
	w := &faultyWatch{
		f:         f,
		inner:     inner,
		result:    make(chan watch.Event),
		stopped:   make(chan struct{}),
		bookmarks: options.AllowWatchBookmarks,
		live:      !streamingList && options.ResourceVersion != "" && options.ResourceVersion != "0",
	}
	go w.relay()
	return w
}

// Stop ends the stream; the result channel closes soon after. It may be
// called any number of times.
func (w *faultyWatch) Stop() { w.stopOnce.Do(func() { close(w.stopped) }) }

// ResultChan returns the channel the events arrive on.
func (w *faultyWatch) ResultChan() <-chan watch.Event { return w.result }

// relay forwards events until the wrapped stream ends, the consumer stops
// the stream, or a fault ends it.
func (w *faultyWatch) relay() {
	defer close(w.result)
	defer w.inner.Stop()
	if w.f.inject(FaultStreamClosed) {
		return
	}
	in := w.inner.ResultChan()
	for {
		select {
		case <-w.stopped:
			return
		case ev, ok := <-in:
			if !ok || !w.forward(ev) {
				return
			}
		}
	}
}

// forward delivers ev, with whatever fault is drawn for it, and reports
// whether the stream goes on.
func (w *faultyWatch) forward(ev watch.Event) bool {
	switch {
	case w.f.inject(FaultStreamDropped):
		return false
	case w.f.inject(FaultErrorEvent):
		w.send(w.errorEvent())
		return false
	case w.f.inject(FaultDelay):
		if !w.pause() {
			return false
		}
	}
	if !w.send(ev) {
		return false
	}
	w.f.events.Add(1)
	w.note(ev)
	if bookmark, ok := w.bookmark(); ok && w.f.inject(FaultBookmark) {
		return w.send(bookmark)
	}
	return true
}

// send hands ev to the consumer unless the stream is stopped first.
func (w *faultyWatch) send(ev watch.Event) bool {
	select {
	case w.result <- ev:
		return true
	case <-w.stopped:
		return false
	}
}

// pause waits for a random delay up to MaxDelay, or until the stream is
// stopped, and reports whether the stream goes on.
func (w *faultyWatch) pause() bool {
	d := time.Duration(1 + w.f.intN(int64(w.f.cfg.MaxDelay)))
	t := w.f.cfg.Clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return true
	case <-w.stopped:
		return false
	}
}

// note records what a delivered event tells about the stream's position.
func (w *faultyWatch) note(ev watch.Event) {
	switch ev.Type {
	case watch.Added, watch.Modified, watch.Deleted, watch.Bookmark:
	default:
		return
	}
	if ev.Type != watch.Added {
		w.live = true
	}
	if !w.live {
		return
	}
	if m, err := meta.Accessor(ev.Object); err == nil {
		w.lastRV, w.last = m.GetResourceVersion(), ev.Object
	}
}

// bookmark builds a bookmark at the newest live event's resource version,
// if the consumer asked for bookmarks and there is such an event.
func (w *faultyWatch) bookmark() (watch.Event, bool) {
	if !w.bookmarks || !w.live || w.lastRV == "" {
		return watch.Event{}, false
	}
	obj, err := emptyLike(w.last)
	if err != nil {
		return watch.Event{}, false
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return watch.Event{}, false
	}
	m.SetResourceVersion(w.lastRV)
	return watch.Event{Type: watch.Bookmark, Object: obj}, true
}

// errorEvent builds the ERROR event of FaultErrorEvent: a 410 or a 500.
func (w *faultyWatch) errorEvent() watch.Event {
	var status metav1.Status
	if w.f.chance(0.5) {
		status = apierrors.NewResourceExpired("injected fault: watch: resource version too old").ErrStatus
	} else {
		status = apierrors.NewInternalError(errors.New("injected fault: watch stream failed")).ErrStatus
	}
	return watch.Event{Type: watch.Error, Object: &status}
}
