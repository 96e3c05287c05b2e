package cache

import (
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"
)

// shardWatchOwner is what a shardWatch asks of the ShardedListerWatcher
// that opened it.
type shardWatchOwner interface {
	// inShard reports whether obj belongs to the shard held now.
	inShard(obj runtime.Object) bool
	// setMode records who filters, with the reason.
	setMode(logger klog.Logger, m ShardMode, why string)
	// markListed records that spec's shard was listed whole.
	markListed(spec *shardSpec)
	// untrack forgets the watch once it ended.
	untrack(w *shardWatch)
}

// shardWatch passes on the events of a watch except those of objects
// outside the shard. A move to another shard (SetShard) ends it with an
// expired-resource-version error, so that its Reflector lists again.
type shardWatch struct {
	inner  watch.Interface
	shard  shardWatchOwner
	logger klog.Logger
	out    chan watch.Event
	// spec is the shard the watch was opened for; streaming says it is a
	// streaming list, whose end of initial events completes a list.
	spec      *shardSpec
	streaming bool
	// stopped is closed by Stop, moved by a move to another shard; each
	// Once guards its close.
	stopped   chan struct{}
	stopOnce  sync.Once
	moved     chan struct{}
	movedOnce sync.Once
}

// newShardWatch wraps w; run passes its events on.
func newShardWatch(logger klog.Logger, w watch.Interface, s shardWatchOwner, spec *shardSpec, streaming bool) *shardWatch {
	return &shardWatch{
		inner: w, shard: s, logger: logger, out: make(chan watch.Event),
		spec: spec, streaming: streaming,
		stopped: make(chan struct{}), moved: make(chan struct{}),
	}
}

// ResultChan returns the events in the shard; it is closed after the
// wrapped watch ends or Stop is called.
func (w *shardWatch) ResultChan() <-chan watch.Event { return w.out }

// Stop stops the wrapped watch and the goroutine passing its events on.
func (w *shardWatch) Stop() {
	w.stopOnce.Do(func() { close(w.stopped) })
	w.inner.Stop()
}

// expire ends the watch after a move: the reader gets an expired error.
func (w *shardWatch) expire() { w.movedOnce.Do(func() { close(w.moved) }) }

// run forwards events until the wrapped watch ends, Stop is called or the
// shard moves.
func (w *shardWatch) run() {
	defer w.shard.untrack(w)
	defer close(w.out)
	in := w.inner.ResultChan()
	for {
		select {
		case <-w.stopped:
			return
		case <-w.moved:
			w.endMoved()
			return
		case ev, ok := <-in:
			if !ok {
				return
			}
			if !w.keep(ev) {
				continue
			}
			select {
			case w.out <- ev:
			case <-w.stopped:
				return
			case <-w.moved:
				w.endMoved()
				return
			}
		}
	}
}

// endMoved stops the wrapped watch and tells the reader, unless it stops
// reading first, that its resource version is gone.
func (w *shardWatch) endMoved() {
	w.inner.Stop()
	status := errShardMoved("the shard selector changed").(apierrors.APIStatus).Status()
	select {
	case w.out <- watch.Event{Type: watch.Error, Object: &status}:
	case <-w.stopped:
	}
}

// keep reports whether ev is passed on: anything but an object change, or
// a change of an object in the shard held now. The bookmark that ends a
// streaming list's initial events also completes a list.
func (w *shardWatch) keep(ev watch.Event) bool {
	switch ev.Type {
	case watch.Added, watch.Modified, watch.Deleted:
	case watch.Bookmark:
		if w.streaming && endsInitialEvents(ev.Object) {
			w.shard.markListed(w.spec)
		}
		return true
	default:
		return true
	}
	if ev.Object == nil || w.shard.inShard(ev.Object) {
		return true
	}
	w.shard.setMode(w.logger, ShardModeClient, "a watch event for an object outside the shard")
	return false
}
