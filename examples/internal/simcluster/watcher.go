package simcluster

import (
	"sync"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
)

// watcher is one open watch. The Cluster queues events on it without ever
// blocking; its own goroutine (run) hands them to the client.
//
// Lock order: Cluster.mu, then watcher.mu.
type watcher struct {
	cluster *Cluster
	labels  labels.Selector
	fields  fields.Selector
	limit   int

	// mu guards queue and ending.
	mu sync.Mutex
	// queue holds the events not yet handed to the client, oldest first.
	queue []watch.Event
	// ending says the server ends the stream once queue is delivered.
	ending bool

	// wake has room for one signal: "look at queue again".
	wake chan struct{}
	// stopped is closed when the client calls Stop.
	stopped  chan struct{}
	stopOnce sync.Once
	// result is the client's channel; run closes it when it returns.
	result chan watch.Event
}

var _ watch.Interface = (*watcher)(nil)

func newWatcher(c *Cluster, sel selector) *watcher {
	return &watcher{
		cluster: c,
		labels:  sel.labels,
		fields:  sel.fields,
		limit:   c.opts.WatchBacklogLimit,
		wake:    make(chan struct{}, 1),
		stopped: make(chan struct{}),
		result:  make(chan watch.Event),
	}
}

// ResultChan returns the channel of events. It is closed when the watch
// ends, by the client or by the server.
func (w *watcher) ResultChan() <-chan watch.Event { return w.result }

// Stop ends the watch from the client side. It is safe to call more than
// once and from any goroutine.
func (w *watcher) Stop() {
	w.stopOnce.Do(func() {
		close(w.stopped)
		w.cluster.forget(w)
	})
}

// selects reports whether pod passes the watch's selectors.
func (w *watcher) selects(pod *v1.Pod) bool {
	return selector{labels: w.labels, fields: w.fields}.matches(pod)
}

// send queues ev. It returns false, and ends the watch, when the client
// has fallen too far behind; the caller then forgets the watcher.
func (w *watcher) send(ev watch.Event) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ending {
		return true
	}
	if len(w.queue) >= w.limit {
		w.endLocked(nil)
		return false
	}
	w.queue = append(w.queue, ev)
	w.signal()
	return true
}

// end makes the server end the stream: undelivered events are dropped, as
// when a connection is cut, and status, if not nil, is sent as an ERROR
// event before the channel is closed.
func (w *watcher) end(status *apierrors.StatusError) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.endLocked(status)
}

// endLocked is end; the caller holds w.mu.
func (w *watcher) endLocked(status *apierrors.StatusError) {
	clear(w.queue)
	w.queue = w.queue[:0]
	if status != nil {
		w.queue = append(w.queue, watch.Event{Type: watch.Error, Object: &status.ErrStatus})
	}
	w.ending = true
	w.signal()
}

func (w *watcher) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// run hands queued events to the client until the client stops the watch
// or the server ended it and everything queued was delivered.
func (w *watcher) run() {
	defer close(w.result)
	var batch []watch.Event
	for {
		w.mu.Lock()
		batch, w.queue = w.queue, batch[:0]
		ending := w.ending
		w.mu.Unlock()
		if len(batch) == 0 {
			if ending {
				return
			}
			select {
			case <-w.wake:
				continue
			case <-w.stopped:
				return
			}
		}
		for i := range batch {
			select {
			case w.result <- batch[i]:
				batch[i] = watch.Event{}
			case <-w.stopped:
				return
			}
		}
	}
}
