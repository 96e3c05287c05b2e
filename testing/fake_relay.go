package framework

import (
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// relay returns w as its consumer gets it: with the events whose object
// sel rejects left out, and with every object but an ERROR event's passed
// through FakeControllerSourceOptions.HandOut when that is set. It returns
// w itself when there is nothing to do, so that a plain watch costs no
// goroutine.
//
// A watch judges each event by the object it carries, like kube-apiserver's
// watch cache, except that an object modified out of the selection is
// simply no longer sent, where kube-apiserver sends a DELETED event.
// Bookmarks and errors always pass.
func (f *FakeControllerSource) relay(w watch.Interface, sel selector) watch.Interface {
	if sel.selectsAll() && f.opts.HandOut == nil {
		return w
	}
	rw := &relayWatch{inner: w, sel: sel, handOut: f.opts.HandOut, result: make(chan watch.Event), stopped: make(chan struct{})}
	go rw.run()
	return rw
}

// relayWatch forwards a watch's events on one goroutine, which ends when
// the inner watch ends or the consumer stops the watch (unlike
// apimachinery's watch.Filter, whose goroutine waits forever on a consumer
// that stopped reading).
type relayWatch struct {
	inner   watch.Interface
	sel     selector
	handOut func(runtime.Object) runtime.Object
	result  chan watch.Event
	// stopped is closed by Stop.
	stopped  chan struct{}
	stopOnce sync.Once
}

// ResultChan returns the channel the events arrive on.
func (w *relayWatch) ResultChan() <-chan watch.Event { return w.result }

// Stop ends the watch; the result channel closes soon after.
func (w *relayWatch) Stop() {
	w.stopOnce.Do(func() {
		close(w.stopped)
		w.inner.Stop()
	})
}

// run forwards the events until either side ends. HandOut runs as each
// event is reached, as a server encodes each event of a stream when it
// sends it, so a long streaming list never exists in full.
func (w *relayWatch) run() {
	defer close(w.result)
	for e := range w.inner.ResultChan() {
		switch e.Type {
		case watch.Error:
		case watch.Bookmark:
			e = w.convert(e)
		default:
			if !w.sel.matches(e.Object) {
				continue
			}
			e = w.convert(e)
		}
		select {
		case w.result <- e:
		case <-w.stopped:
			return
		}
	}
}

// convert applies HandOut to e's object, if the source has one.
func (w *relayWatch) convert(e watch.Event) watch.Event {
	if w.handOut == nil {
		return e
	}
	return watch.Event{Type: e.Type, Object: w.handOut(e.Object)}
}
