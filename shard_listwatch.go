package cache

import (
	"context"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"
)

// ShardedListerWatcher restricts a ListerWatcher to one shard of its
// resource: the objects whose hashed UID (or namespace) falls in the ranges
// of a shard selector (see ParseShardSelector). It is how an informer is
// sharded: build it around the ListerWatcher you would otherwise pass, and
// give it to any informer or Reflector constructor, e.g.
//
//	lw, err := cache.NewShardedListerWatcher(podsLW, "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')")
//	if err != nil { ... }
//	informer := cache.NewSharedIndexInformer(lw, &v1.Pod{}, 0, indexers)
//
// Every list and watch a Reflector makes goes through it (the pages of a
// paginated list, watches, streaming lists, the relist after an expired
// resource version), and each carries the selector in
// ListOptions.ShardSelector, replacing any selector the caller set there.
//
// An API server with the ShardedListAndWatch feature filters, and echoes
// the selector in the list's ListMeta.ShardInfo. One without it ignores the
// field; the list then carries no ShardInfo and the ShardedListerWatcher
// removes the items outside the shard itself, hashing them as the server
// would. (Before the first streaming list, which has no list response, a
// one-object list asks the server.) Watch events are checked in both
// modes, at the cost of one hash per event, because the API servers behind one address may differ while
// the feature is rolled out; an ADDED, MODIFIED or DELETED event for an
// object outside the shard is dropped (an object never changes shard: its
// UID and namespace are immutable). Bookmarks and errors pass unchanged.
// Either way the informer holds exactly its shard.
//
// The selector travels in a field that apimachinery has from v0.36 on.
// Built with an older apimachinery, a ShardedListerWatcher cannot send it
// and works as with a server without the feature: every list is filtered on
// the client (ShardModeClient from the first list on, with no probe), and
// the informer still holds exactly its shard. Mode reports which way
// it went last; each change of mode is logged once, at V(1), and kept in
// the gauge of a ShardModeMetricsProvider.
//
// SetShard moves it, and the informer it serves, to another selector.
//
// A ShardedListerWatcher is safe for concurrent use and may serve several
// Reflectors (though a move expects one). It answers the streaming-list capability probe as the
// ListerWatcher it wraps does.
type ShardedListerWatcher struct {
	inner  ListerWatcherWithContext
	parent ListerWatcher
	// spec is the shard held now; SetShard replaces it (under moveMu).
	spec atomic.Pointer[shardSpec]
	// modes is who filters, with its gauges.
	modes shardModeState
	// listGen is the generation of the spec the paginated list in
	// progress began with; listedGen is the newest generation whose list
	// (paginated or streaming) came back whole. A watch that does not
	// list is refused while listedGen is behind spec, so that the first
	// thing after a move is a list under the new selector.
	listGen   atomic.Uint64
	listedGen atomic.Uint64

	// moveMu serialises SetShard calls with the registering of watches,
	// and guards watches: the live watches, which a move ends.
	moveMu  sync.Mutex
	watches map[*shardWatch]struct{}
}

var _ ListerWatcher = (*ShardedListerWatcher)(nil)
var _ ListerWatcherWithContext = (*ShardedListerWatcher)(nil)

// NewShardedListerWatcher returns lw restricted to the shard selector
// names (see ParseShardSelector for the form). A selector that does not
// parse is an error wrapping ErrInvalidShardSelector; nothing is listed or
// watched until a Reflector runs.
func NewShardedListerWatcher(lw ListerWatcher, selector string) (*ShardedListerWatcher, error) {
	sel, err := ParseShardSelector(selector)
	if err != nil {
		return nil, err
	}
	return newShardedListerWatcher(lw, sel), nil
}

// newShardedListerWatcher wraps lw with an already parsed selector.
func newShardedListerWatcher(lw ListerWatcher, sel *ShardSelector) *ShardedListerWatcher {
	s := &ShardedListerWatcher{
		inner:   ToListerWatcherWithContext(lw),
		parent:  lw,
		watches: map[*shardWatch]struct{}{},
	}
	s.spec.Store(newShardSpec(sel, firstShardGen))
	s.listedGen.Store(firstShardGen)
	return s
}

// Selector returns the selector in its canonical form, as sent to the
// server. After SetShard it is the new one.
func (s *ShardedListerWatcher) Selector() string { return s.spec.Load().text }

// Mode returns who filtered the latest list response (or, after a watch
// event outside the shard arrived, ShardModeClient).
func (s *ShardedListerWatcher) Mode() ShardMode { return s.modes.get() }

// List lists with the shard selector; see ListWithContext.
func (s *ShardedListerWatcher) List(options metav1.ListOptions) (runtime.Object, error) {
	return s.ListWithContext(context.Background(), options)
}

// Watch watches with the shard selector; see WatchWithContext.
func (s *ShardedListerWatcher) Watch(options metav1.ListOptions) (watch.Interface, error) {
	return s.WatchWithContext(context.Background(), options)
}

// ListWithContext lists through the wrapped ListerWatcher with the shard
// selector set, and removes the items outside the shard unless the response
// says the server applied the selector. Errors and results it cannot read
// as a list are returned as they came, for the caller to report.
func (s *ShardedListerWatcher) ListWithContext(ctx context.Context, options metav1.ListOptions) (runtime.Object, error) {
	spec, err := s.beginListPage(options)
	if err != nil {
		return nil, err
	}
	sent := setShardSelector(&options, spec.text)
	list, err := s.inner.ListWithContext(ctx, options)
	if err != nil || list == nil || isNilPointer(list) {
		return list, err
	}
	if s.spec.Load() != spec {
		return nil, errShardMoved("the shard selector changed while a list page was read")
	}
	logger := klog.FromContext(ctx)
	applied, echoed := shardInfoOf(list)
	switch {
	case !sent:
		s.setMode(logger, ShardModeClient, reasonSelectorNotSent)
		spec.filterList(list)
	case echoed && applied == spec.text:
		s.setMode(logger, ShardModeServer, "the list response echoes the selector")
	case echoed:
		logger.Info("Warning: the API server applied another shard selector than the one requested; filtering on the client", "requested", spec.text, "applied", applied)
		s.setMode(logger, ShardModeClient, "the list response echoes another selector")
		spec.filterList(list)
	default:
		s.setMode(logger, ShardModeClient, "the list response has no shardInfo")
		spec.filterList(list)
	}
	s.endListPage(list, spec)
	return list, nil
}

// WatchWithContext watches through the wrapped ListerWatcher with the
// shard selector set, and drops the events of objects outside the shard.
// The returned watch runs one goroutine until it is stopped or the wrapped
// watch ends.
//
// A streaming list brings no list response to learn the mode from, so the
// first one, while the mode is still unknown, is preceded by a probe: a
// list of at most one object, whose response says whether the server
// applies the selector. A failed probe is logged at V(4) and changes
// nothing.
func (s *ShardedListerWatcher) WatchWithContext(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
	spec := s.spec.Load()
	streaming := options.SendInitialEvents != nil && *options.SendInitialEvents
	if !streaming && s.listedGen.Load() < spec.gen {
		return nil, errShardMoved("the shard moved since the last list")
	}
	if !setShardSelector(&options, spec.text) {
		s.setMode(klog.FromContext(ctx), ShardModeClient, reasonSelectorNotSent)
	} else if s.Mode() == ShardModeUnknown && streaming {
		s.probeMode(ctx, spec)
	}
	w, err := s.inner.WatchWithContext(ctx, options)
	if err != nil || w == nil {
		return w, err
	}
	sw := newShardWatch(klog.FromContext(ctx), w, s, spec, streaming)
	s.track(sw)
	go sw.run()
	return sw, nil
}

// reasonSelectorNotSent is the reason logged for ShardModeClient when
// this build's apimachinery cannot carry the selector to the server.
const reasonSelectorNotSent = "this build's k8s.io/apimachinery predates ListOptions.ShardSelector (v0.36), so the selector is not sent"

// probeMode learns the mode from a one-object list.
func (s *ShardedListerWatcher) probeMode(ctx context.Context, spec *shardSpec) {
	logger := klog.FromContext(ctx)
	options := metav1.ListOptions{Limit: 1}
	setShardSelector(&options, spec.text)
	list, err := s.inner.ListWithContext(ctx, options)
	if err != nil || list == nil || isNilPointer(list) {
		logger.V(4).Info("Could not learn whether the API server applies the shard selector", "selector", spec.text, "err", err)
		return
	}
	if applied, echoed := shardInfoOf(list); echoed && applied == spec.text {
		s.setMode(logger, ShardModeServer, "a one-object list echoes the selector")
	} else {
		s.setMode(logger, ShardModeClient, "a one-object list has no shardInfo for the selector")
	}
}

// IsWatchListSemanticsUnSupported reports what the wrapped ListerWatcher
// reports, or false if it says nothing.
func (s *ShardedListerWatcher) IsWatchListSemanticsUnSupported() bool {
	return lacksWatchListSemantics(s.parent)
}

// inShard reports whether obj belongs to the shard held now. An object
// whose field cannot be read is kept, for the Reflector to report it as it
// would without a shard.
func (s *ShardedListerWatcher) inShard(obj runtime.Object) bool {
	return s.spec.Load().holds(obj)
}

// setMode records mode m; see shardModeState.set.
func (s *ShardedListerWatcher) setMode(logger klog.Logger, m ShardMode, why string) {
	s.modes.set(logger, m, why, s.Selector())
}

// reportModeTo gives the Reflector called name a mode gauge, when p makes
// one. Reflectors call it as they are built.
func (s *ShardedListerWatcher) reportModeTo(name string, p MetricsProvider) {
	if mp, ok := p.(ShardModeMetricsProvider); ok {
		s.modes.addGauge(mp.NewShardModeMetric(name))
	}
}

// Moving to another shard.
//
// A move is a relist under the new selector, nothing more: SetShard swaps
// the selector and ends every live watch with an expired resource version,
// as an API server does when it no longer has the requested history. The
// Reflector reading the watch then lists again, through the same
// ShardedListerWatcher, now with the new selector, and replaces its store's
// content with the result. Objects that entered the shard arrive as adds;
// objects that left it are missing from the list and become deletions,
// which the informer hands to its handlers as MovedOutOfShard (see
// shard_moved.go) instead of DeletedFinalStateUnknown.
//
// The relist must come from the new selector alone. A list that was under
// way when the selector changed would mix both shards, and a watch opened
// without listing first would miss the objects that entered. So each list
// page and each watch is checked against the generation of the selector: a
// page read across a move, a continued list begun before it, and a plain
// watch opened before a list under the new selector all fail with the same
// expired-resource-version error, which the Reflector answers by listing
// again from the newest state.

// SetShard moves the ShardedListerWatcher to the shard selector names (see
// ParseShardSelector for the form). A selector that does not parse is an
// error wrapping ErrInvalidShardSelector and changes nothing; the same
// selector as now changes nothing either.
//
// Otherwise every later list and watch carries the new selector, and the
// Reflector using this ListerWatcher lists again at once: its live watch
// ends with an expired resource version (as does a list in progress). An
// informer built on it then holds the new shard: handlers get an add for
// each object that entered it, a delete carrying MovedOutOfShard for each
// object that left it, and, with the informer's default (atomic) queue,
// nothing for the objects that stayed. HasSynced stays true, and at no
// moment does the informer's store hold an object of neither shard.
//
// SetShard expects the ShardedListerWatcher to serve one Reflector, as an
// informer's does; several Reflectors sharing it may skip the relist.
// It is safe to call from any goroutine, also before the informer runs.
func (s *ShardedListerWatcher) SetShard(selector string) error {
	sel, err := ParseShardSelector(selector)
	if err != nil {
		return err
	}
	s.moveMu.Lock()
	old := s.spec.Load()
	if sel.String() == old.text {
		s.moveMu.Unlock()
		return nil
	}
	s.spec.Store(newShardSpec(sel, old.gen+1))
	live := make([]*shardWatch, 0, len(s.watches))
	for w := range s.watches {
		live = append(live, w)
	}
	s.moveMu.Unlock()
	klog.Background().V(1).Info("Moving to another shard; the reflector lists again", "from", old.text, "to", sel.String(), "watches", len(live))
	for _, w := range live {
		w.expire()
	}
	return nil
}

// beginListPage returns the shard a list page is read for. A page that
// continues a list begun under another shard is refused.
func (s *ShardedListerWatcher) beginListPage(options metav1.ListOptions) (*shardSpec, error) {
	spec := s.spec.Load()
	if options.Continue == "" {
		s.listGen.Store(spec.gen)
		return spec, nil
	}
	if s.listGen.Load() != spec.gen {
		return nil, errShardMoved("the shard selector changed during a paginated list")
	}
	return spec, nil
}

// endListPage records, after the last page of a list, that spec's shard was
// listed whole.
func (s *ShardedListerWatcher) endListPage(list runtime.Object, spec *shardSpec) {
	if lm, err := meta.ListAccessor(list); err == nil && lm.GetContinue() != "" {
		return
	}
	s.markListed(spec)
}

// markListed records that spec's shard was listed whole, unless a newer
// one was already.
func (s *ShardedListerWatcher) markListed(spec *shardSpec) {
	for {
		listed := s.listedGen.Load()
		if listed >= spec.gen || s.listedGen.CompareAndSwap(listed, spec.gen) {
			return
		}
	}
}

// track registers a live watch for moves to end; a watch opened for a
// shard that was already left is ended at once.
func (s *ShardedListerWatcher) track(w *shardWatch) {
	s.moveMu.Lock()
	defer s.moveMu.Unlock()
	if s.spec.Load() != w.spec {
		w.expire()
		return
	}
	s.watches[w] = struct{}{}
}

// untrack forgets a watch that ended.
func (s *ShardedListerWatcher) untrack(w *shardWatch) {
	s.moveMu.Lock()
	defer s.moveMu.Unlock()
	delete(s.watches, w)
}
