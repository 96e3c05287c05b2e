package cache

import (
	"context"
	"reflect"
	"sync"
	"sync/atomic"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"

	"github.com/kcache/cache/internal/shardfilter"
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

	// strict, when set, gives this ShardedListerWatcher the contract of
	// client-go v0.38's NewShardedListWatch (see strictShard); nil gives
	// kcache's own.
	strict *strictShard
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
	if s.strict != nil {
		return s.listStrict(ctx, options, spec)
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
	if s.strict != nil {
		if _, err := s.strict.filter(spec).Ask(&options); err != nil {
			return nil, err
		}
	} else if !setShardSelector(&options, spec.text) {
		s.setMode(klog.FromContext(ctx), ShardModeClient, reasonSelectorNotSent)
	} else if s.Mode() == ShardModeUnknown && streaming {
		s.probeMode(ctx, spec)
	}
	w, err := s.inner.WatchWithContext(ctx, options)
	if err != nil || w == nil {
		return w, err
	}
	sw := newShardWatch(ctx, w, s, spec, streaming)
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

// admit reports whether a watch event is passed on: anything but an
// object change, or a change of an object in the shard held now.
func (s *ShardedListerWatcher) admit(ctx context.Context, ev watch.Event) bool {
	if s.strict != nil {
		return s.strict.filter(s.spec.Load()).Admit(ctx, ev)
	}
	switch ev.Type {
	case watch.Bookmark, watch.Error:
		return true
	case watch.Added, watch.Modified, watch.Deleted:
	default:
		return true
	}
	if ev.Object == nil || s.inShard(ev.Object) {
		return true
	}
	s.setMode(klog.FromContext(ctx), ShardModeClient, "a watch event for an object outside the shard")
	return false
}

// setMode records mode m; see shardModeState.set. In strict mode the
// change is not logged (client-go's ListerWatcher logs only its fallback).
func (s *ShardedListerWatcher) setMode(logger klog.Logger, m ShardMode, why string) {
	if s.strict != nil {
		logger = logr.Discard()
	}
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

// shardWatchOwner is what a shardWatch asks of the ShardedListerWatcher
// that opened it.
type shardWatchOwner interface {
	// admit reports whether a watch event is passed on.
	admit(ctx context.Context, ev watch.Event) bool
	// markListed records that spec's shard was listed whole.
	markListed(spec *shardSpec)
	// untrack forgets the watch once it ended.
	untrack(w *shardWatch)
}

// shardWatch passes on the events of a watch except those of objects
// outside the shard. A move to another shard (SetShard) ends it with an
// expired-resource-version error, so that its Reflector lists again.
type shardWatch struct {
	inner watch.Interface
	shard shardWatchOwner
	ctx   context.Context
	out   chan watch.Event
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
func newShardWatch(ctx context.Context, w watch.Interface, s shardWatchOwner, spec *shardSpec, streaming bool) *shardWatch {
	return &shardWatch{
		inner: w, shard: s, ctx: ctx, out: make(chan watch.Event),
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
	if ev.Type == watch.Bookmark && w.streaming && endsInitialEvents(ev.Object) {
		w.shard.markListed(w.spec)
	}
	return w.shard.admit(w.ctx, ev)
}

// This file says who keeps a sharded ListerWatcher's results inside its
// shard, the server or the client, and reports it in logs and gauges.

// ShardMode says who keeps a ShardedListerWatcher's results inside its
// shard.
type ShardMode int32

const (
	// ShardModeUnknown: no list response has been seen yet (and no watch
	// event outside the shard), or the probe before a streaming list failed.
	ShardModeUnknown ShardMode = iota
	// ShardModeServer: the API server filters. The last list response
	// echoed the selector in ListMeta.ShardInfo, so objects outside the
	// shard are neither sent nor decoded.
	ShardModeServer
	// ShardModeClient: the API server ignored the selector (its
	// ShardedListAndWatch feature is off, or it predates the feature), or
	// the selector could not be sent (this build's apimachinery predates
	// v0.36's ListOptions.ShardSelector), so the ShardedListerWatcher drops
	// what lies outside the shard after decoding it.
	ShardModeClient
)

// String returns "unknown", "server" or "client".
func (m ShardMode) String() string {
	switch m {
	case ShardModeServer:
		return "server"
	case ShardModeClient:
		return "client"
	}
	return "unknown"
}

// ShardModeMetricsProvider is implemented by a MetricsProvider (see
// SetReflectorMetricsProvider) that also wants the shard mode of sharded
// reflectors. Each Reflector built on a ShardedListerWatcher asks it for
// one gauge, labelled with the reflector's name like the other reflector
// metrics, and keeps it at the ShardMode's numeric value: 0 unknown,
// 1 server, 2 client.
type ShardModeMetricsProvider interface {
	NewShardModeMetric(name string) GaugeMetric
}

// shardModeReporter is implemented by ShardedListerWatcher, for Reflectors
// to find it among their ListerWatchers.
type shardModeReporter interface {
	reportModeTo(name string, p MetricsProvider)
}

// shardModeState is the current ShardMode of a ShardedListerWatcher and
// the gauges that show it.
type shardModeState struct {
	// mode is the current ShardMode; it changes only under reportMu.
	mode atomic.Int32

	// reportMu serialises mode changes with their log line and gauge
	// updates, and guards gauges. The gauges' Set (user code) runs under
	// it; no other path of this package takes reportMu.
	reportMu sync.Mutex
	gauges   []GaugeMetric
}

func (st *shardModeState) get() ShardMode { return ShardMode(st.mode.Load()) }

// set records mode m, logging why (with the selector) and updating the
// gauges when it differs from the current one.
func (st *shardModeState) set(logger klog.Logger, m ShardMode, why, selector string) {
	if st.get() == m {
		return
	}
	st.reportMu.Lock()
	defer st.reportMu.Unlock()
	if ShardMode(st.mode.Swap(int32(m))) == m {
		return
	}
	if m == ShardModeServer {
		logger.V(1).Info("The API server filters by the shard selector", "selector", selector, "reason", why)
	} else {
		logger.V(1).Info("The API server ignores the shard selector; filtering on the client", "selector", selector, "reason", why)
	}
	for _, g := range st.gauges {
		g.Set(float64(m))
	}
}

// addGauge keeps g at the mode from now on.
func (st *shardModeState) addGauge(g GaugeMetric) {
	st.reportMu.Lock()
	defer st.reportMu.Unlock()
	st.gauges = append(st.gauges, g)
	g.Set(float64(st.get()))
}

// This file reaches the two API fields of the ShardedListAndWatch feature,
// ListOptions.ShardSelector and ListMeta.ShardInfo, which exist only in
// apimachinery v0.36 and later. The rest of the package is built against
// the oldest apimachinery this module supports, so it finds the fields by
// name, once, and works without them: then no selector is sent, no list
// says it was applied, and a ShardedListerWatcher filters on the client, as
// it does when the server lacks the feature.

// listOptionsShardSelector is the index of ListOptions.ShardSelector, or
// nil when this build's apimachinery has no such string field.
var listOptionsShardSelector = stringFieldIndex(reflect.TypeFor[metav1.ListOptions](), "ShardSelector")

// stringFieldIndex returns the index of the string field name of struct
// type t, or nil when t has none.
func stringFieldIndex(t reflect.Type, name string) []int {
	f, ok := t.FieldByName(name)
	if !ok || f.Type.Kind() != reflect.String {
		return nil
	}
	return f.Index
}

// canSendShardSelector reports whether this build's apimachinery has
// ListOptions.ShardSelector, so that a selector can reach the server.
func canSendShardSelector() bool { return listOptionsShardSelector != nil }

// setShardSelector sets options.ShardSelector to selector and reports
// whether it could: false when this build's apimachinery lacks the field.
func setShardSelector(options *metav1.ListOptions, selector string) bool {
	if !canSendShardSelector() {
		return false
	}
	reflect.ValueOf(options).Elem().FieldByIndex(listOptionsShardSelector).SetString(selector)
	return true
}

// shardSelectorOf returns options.ShardSelector, or "" when this build's
// apimachinery lacks the field.
func shardSelectorOf(options metav1.ListOptions) string {
	if !canSendShardSelector() {
		return ""
	}
	return reflect.ValueOf(options).FieldByIndex(listOptionsShardSelector).String()
}

// shardInfoOf returns the selector a list response says was applied
// (ListMeta.ShardInfo.Selector), and whether it says so at all.
func shardInfoOf(list runtime.Object) (string, bool) {
	if u, ok := list.(*unstructured.UnstructuredList); ok {
		sel, found, err := unstructured.NestedString(u.Object, "metadata", "shardInfo", "selector")
		return sel, found && err == nil
	}
	if sel, ok := echoedShardSelector(list); ok {
		return sel, true
	}
	lm, err := meta.ListAccessor(list)
	if err != nil {
		return "", false
	}
	return echoedShardSelector(lm)
}

// echoedShardSelector calls x's GetShardInfo, the accessor apimachinery
// v0.36 gives ListMeta, and returns the Selector of the ShardInfo it
// returns. It reports false when x has no such method or it returns nil.
func echoedShardSelector(x any) (string, bool) {
	applied, echoed, _ := shardfilter.ShardInfo(x)
	return applied, echoed
}

// Client-go's contract (the overlay of v0.38).
//
// client-go v0.38 has a sharded ListerWatcher of its own,
// NewShardedListWatch(lw, sharding.Selector), which an informer's
// SetShardSelector puts around its ListerWatcher. In the overlay of v0.38
// that name is a ShardedListerWatcher in strict mode (the overlay's
// adapter file calls newStrictShardedListerWatcher), so it keeps
// client-go's contract where kcache's own differs:
//   - a ListOptions.ShardSelector the caller set to another selector is an
//     error ("conflicting shard selector"), not replaced;
//   - a list whose ShardInfo names another selector is an error, and a list
//     type without ShardInfo is one too;
//   - without ShardInfo the items are filtered on the client with the
//     selector's own Matches, whose errors fail the list; the list's
//     remaining item count is cleared; the first fallback (in a list, or a
//     watch event outside the shard) is logged once, at V(2);
//   - watch events are matched whatever their type, but bookmarks and
//     errors; an object that cannot be matched is dropped and reported to
//     utilruntime.HandleErrorWithContext;
//   - no one-object probe precedes a streaming list, and mode changes are
//     not logged (the gauge of a ShardModeMetricsProvider still moves).
//
// Everything else is the engine's: SetShard moves it to another shard with
// the relist and MovedOutOfShard deletions described above, an addition
// client-go does not have.

// strictShard is the state of strict mode.
type strictShard struct {
	// fallback logs the one line of the client-side fallback.
	fallback shardfilter.Fallback
}

// filter is spec's shard under client-go's contract (internal/shardfilter,
// shared with the clientgo bridge).
func (st *strictShard) filter(spec *shardSpec) shardfilter.Shard {
	return shardfilter.Shard{Text: spec.text, Matches: spec.matches, Fallback: &st.fallback}
}

// newStrictShardedListerWatcher returns lw restricted to the selector
// whose text and matcher are given, in strict mode. The caller (client-go
// v0.38's NewShardedListWatch) has already returned lw itself for an empty
// selector.
func newStrictShardedListerWatcher(lw ListerWatcher, text string, matches func(runtime.Object) (bool, error)) *ShardedListerWatcher {
	s := &ShardedListerWatcher{
		inner:   ToListerWatcherWithContext(lw),
		parent:  lw,
		watches: map[*shardWatch]struct{}{},
		strict:  &strictShard{},
	}
	s.spec.Store(newForeignShardSpec(text, matches, firstShardGen))
	s.listedGen.Store(firstShardGen)
	return s
}

// listStrict is ListWithContext in strict mode, for a page of spec's shard.
func (s *ShardedListerWatcher) listStrict(ctx context.Context, options metav1.ListOptions, spec *shardSpec) (runtime.Object, error) {
	shard := s.strict.filter(spec)
	if _, err := shard.Ask(&options); err != nil {
		return nil, err
	}
	list, err := s.inner.ListWithContext(ctx, options)
	if err != nil {
		return nil, err
	}
	if s.spec.Load() != spec {
		return nil, errShardMoved("the shard selector changed while a list page was read")
	}
	serverFiltered, err := shard.FilterList(ctx, list)
	if err != nil {
		return nil, err
	}
	if serverFiltered {
		s.setMode(klog.FromContext(ctx), ShardModeServer, "the list response echoes the selector")
	} else {
		s.setMode(klog.FromContext(ctx), ShardModeClient, "the list response has no shardInfo")
	}
	s.endListPage(list, spec)
	return list, nil
}
