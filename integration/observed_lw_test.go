package integration

import (
	"context"
	"fmt"
	"net/http"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// contextListerWatcher is the context-aware list/watch pair that kcache's
// and client-go's ListWatch both implement.
type contextListerWatcher interface {
	ListWithContext(ctx context.Context, options metav1.ListOptions) (runtime.Object, error)
	WatchWithContext(ctx context.Context, options metav1.ListOptions) (watch.Interface, error)
}

// listCall is one List the observed ListerWatcher passed on.
type listCall struct {
	options metav1.ListOptions
	items   int    // items in the answer (0 on error)
	cont    string // the answer's continue token
	err     error
}

// observedLW wraps a ListerWatcher, records the calls an informer makes
// through it and the 410 Gone answers it gets, and can pause: while
// paused, the current watches are closed and new lists and watches wait.
// Its method set satisfies both kcache's and client-go's ListerWatcher
// (and their WithContext forms).
type observedLW struct {
	inner contextListerWatcher

	// mu guards every field below.
	mu      sync.Mutex
	lists   []listCall
	watches []metav1.ListOptions
	// expired counts 410 Gone answers: errors from List or Watch, and
	// ERROR events in watch streams.
	expired int
	active  map[*observedWatch]bool
	// resumed is non-nil while paused, and closed by resume.
	resumed chan struct{}
}

func newObservedLW(inner contextListerWatcher) *observedLW {
	return &observedLW{inner: inner, active: map[*observedWatch]bool{}}
}

func (o *observedLW) List(options metav1.ListOptions) (runtime.Object, error) {
	return o.ListWithContext(context.Background(), options)
}

func (o *observedLW) Watch(options metav1.ListOptions) (watch.Interface, error) {
	return o.WatchWithContext(context.Background(), options)
}

// ListWithContext records the call and its outcome.
func (o *observedLW) ListWithContext(ctx context.Context, options metav1.ListOptions) (runtime.Object, error) {
	if err := o.waitResumed(ctx); err != nil {
		return nil, err
	}
	obj, err := o.inner.ListWithContext(ctx, options)
	call := listCall{options: options, err: err}
	if err == nil {
		call.items = meta.LenList(obj)
		if l, lerr := meta.ListAccessor(obj); lerr == nil {
			call.cont = l.GetContinue()
		}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.lists = append(o.lists, call)
	if isGone(err) {
		o.expired++
	}
	return obj, err
}

// WatchWithContext records the call and wraps the stream so that 410
// ERROR events are counted and pause can close it. A watch that opened
// while a pause began is closed again and reopened after the pause, so no
// event gets through while paused.
func (o *observedLW) WatchWithContext(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
	for {
		if err := o.waitResumed(ctx); err != nil {
			return nil, err
		}
		w, err := o.inner.WatchWithContext(ctx, options)
		o.mu.Lock()
		if o.resumed != nil {
			o.mu.Unlock()
			if err == nil {
				w.Stop()
			}
			continue
		}
		o.watches = append(o.watches, options)
		if err != nil {
			if isGone(err) {
				o.expired++
			}
			o.mu.Unlock()
			return nil, err
		}
		ow := newObservedWatch(o, w)
		o.active[ow] = true
		o.mu.Unlock()
		return ow, nil
	}
}

// waitResumed blocks while the ListerWatcher is paused.
func (o *observedLW) waitResumed(ctx context.Context) error {
	o.mu.Lock()
	resumed := o.resumed
	o.mu.Unlock()
	if resumed == nil {
		return nil
	}
	select {
	case <-resumed:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for a paused ListerWatcher: %w", ctx.Err())
	}
}

// pause makes new calls wait and closes every open watch, as if the
// informer's connection had been lost.
func (o *observedLW) pause() {
	o.mu.Lock()
	if o.resumed == nil {
		o.resumed = make(chan struct{})
	}
	open := make([]*observedWatch, 0, len(o.active))
	for w := range o.active {
		open = append(open, w)
	}
	o.mu.Unlock()
	for _, w := range open {
		w.Stop()
	}
}

// resume lets waiting and new calls through.
func (o *observedLW) resume() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.resumed != nil {
		close(o.resumed)
		o.resumed = nil
	}
}

// observation is a copy of what an observedLW recorded.
type observation struct {
	lists   []listCall
	watches []metav1.ListOptions
	expired int
	// streamedEvents is the number of events delivered by each open watch.
	streamedEvents []int
}

// streams returns the watches that asked for a streaming list.
func (ob observation) streams() []metav1.ListOptions {
	var out []metav1.ListOptions
	for _, w := range ob.watches {
		if w.SendInitialEvents != nil && *w.SendInitialEvents {
			out = append(out, w)
		}
	}
	return out
}

// fullLists counts the lists that started a new listing (not the follow-up
// pages of a paginated one) plus the streaming lists: how often the
// informer (re)listed.
func (ob observation) fullLists() int {
	n := len(ob.streams())
	for _, l := range ob.lists {
		if l.options.Continue == "" {
			n++
		}
	}
	return n
}

func (o *observedLW) observe() observation {
	o.mu.Lock()
	defer o.mu.Unlock()
	ob := observation{
		lists:   append([]listCall(nil), o.lists...),
		watches: append([]metav1.ListOptions(nil), o.watches...),
		expired: o.expired,
	}
	for w := range o.active {
		ob.streamedEvents = append(ob.streamedEvents, w.delivered())
	}
	return ob
}

// isGone reports a 410 answer (the resource version is too old).
func isGone(err error) bool {
	return apierrors.IsResourceExpired(err) || apierrors.IsGone(err)
}

// observedWatch passes a watch's events on, counting them and the 410
// ERROR events among them.
type observedWatch struct {
	owner  *observedLW
	inner  watch.Interface
	out    chan watch.Event
	done   chan struct{}
	once   sync.Once
	closed chan struct{} // closed when forwarding has ended

	// mu guards events.
	mu     sync.Mutex
	events int
}

func newObservedWatch(owner *observedLW, inner watch.Interface) *observedWatch {
	w := &observedWatch{
		owner:  owner,
		inner:  inner,
		out:    make(chan watch.Event),
		done:   make(chan struct{}),
		closed: make(chan struct{}),
	}
	go w.forward()
	return w
}

func (w *observedWatch) forward() {
	defer close(w.closed)
	defer close(w.out)
	defer w.forget()
	for {
		select {
		case <-w.done:
			return
		case ev, ok := <-w.inner.ResultChan():
			if !ok {
				return
			}
			w.note(ev)
			select {
			case w.out <- ev:
			case <-w.done:
				return
			}
		}
	}
}

// note counts ev, and a 410 if it is one.
func (w *observedWatch) note(ev watch.Event) {
	w.mu.Lock()
	w.events++
	w.mu.Unlock()
	if ev.Type != watch.Error {
		return
	}
	if status, ok := ev.Object.(*metav1.Status); ok && status.Code == http.StatusGone {
		w.owner.mu.Lock()
		w.owner.expired++
		w.owner.mu.Unlock()
	}
}

func (w *observedWatch) delivered() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.events
}

// forget removes the watch from its owner's open watches.
func (w *observedWatch) forget() {
	w.owner.mu.Lock()
	defer w.owner.mu.Unlock()
	delete(w.owner.active, w)
}

// Stop stops the underlying watch and ends the stream; it may be called
// more than once and from any goroutine.
func (w *observedWatch) Stop() {
	w.once.Do(func() {
		close(w.done)
		w.inner.Stop()
	})
	<-w.closed
}

func (w *observedWatch) ResultChan() <-chan watch.Event { return w.out }
