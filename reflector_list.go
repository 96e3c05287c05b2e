package cache

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

// defaultListPageSize is the page size of a list when nothing else decides.
const defaultListPageSize = 500

// listPager reads a LIST page by page. Each page's items are copied out of
// the page as it arrives (meta.EachListItemWithAlloc), so a page is garbage
// once read: no stored object keeps a whole response alive. With inPage,
// each item is prepared where it lies in the page instead, and only what
// prepare returns as it was given is copied out: an item that prepare
// rebuilds (value sharing) or replaces (the cached copy) is not copied
// twice.
type listPager struct {
	// pageSize is the Limit of each request; zero asks for everything at
	// once.
	pageSize int64
	// fetch requests one page.
	fetch func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error)
	// prepare, if set, turns each item into what is collected, as the
	// item is read (see listIntake); its error ends the list.
	prepare func(obj interface{}) (interface{}, error)
	// inPage says prepare keeps no reference to the item it is given
	// other than by returning it (listPreparer.preparesInPage).
	inPage bool
	// typeDescription names the listed type in errors.
	typeDescription string
}

// listedItems is a whole LIST as read by listPager.
type listedItems struct {
	// items are the listed objects, each a runtime.Object.
	items []interface{}
	// resourceVersion is the list's resource version: that of its first
	// page.
	resourceVersion string
	// paginated records that the server split the list into several pages.
	paginated bool
}

// collect reads the whole list opts describes. When a continue token
// expires half-way, the pages read so far are dropped and the list is
// requested again in one piece, at the resource version first asked for.
func (p listPager) collect(ctx context.Context, opts metav1.ListOptions) (listedItems, error) {
	if opts.Limit == 0 {
		opts.Limit = p.pageSize
	}
	first := opts
	var out listedItems
	for {
		if err := ctx.Err(); err != nil {
			return listedItems{}, err
		}
		page, err := p.fetch(ctx, opts)
		if err != nil {
			if opts.Continue != "" && apierrors.IsResourceExpired(err) {
				return p.collectWhole(ctx, first)
			}
			return listedItems{}, err
		}
		next, err := out.addPage(ctx, page, opts.Continue == "", p)
		if err != nil {
			return listedItems{}, err
		}
		if next == "" {
			return out, nil
		}
		out.paginated = true
		// A continue token carries its own snapshot: the server refuses a
		// resource version alongside it.
		opts.Continue, opts.ResourceVersion, opts.ResourceVersionMatch = next, "", ""
	}
}

// collectWhole reads the list of opts in one request, after paging failed.
func (p listPager) collectWhole(ctx context.Context, opts metav1.ListOptions) (listedItems, error) {
	opts.Limit, opts.Continue = 0, ""
	page, err := p.fetch(ctx, opts)
	if err != nil {
		return listedItems{}, err
	}
	out := listedItems{paginated: true}
	if _, err := out.addPage(ctx, page, true, p); err != nil {
		return listedItems{}, err
	}
	return out, nil
}

// addPage appends the items of one page, each through prepare unless it is
// nil, and returns its continue token. The first page sets the resource
// version and sizes the item slice, using the server's count of remaining
// items when it gives one. An error of prepare is returned as a
// listPrepareError. Once ctx is canceled no item is prepared any more
// (prepare runs user code, and the list's result is dropped anyway): the
// context's error is returned.
func (l *listedItems) addPage(ctx context.Context, page runtime.Object, first bool, p listPager) (string, error) {
	prepare := p.prepare
	if table, gvk := isUnsupportedTableListObject(page); table {
		return "", fmt.Errorf("unsupported list gvk: %v, type: %v", gvk, p.typeDescription)
	}
	// client-go's pager checks every page this way, before the reflector
	// looks at the list; a nil pointer of a list type passes and panics
	// when its metadata is read, as it does there.
	m, err := meta.ListAccessor(page)
	if err != nil {
		return "", fmt.Errorf("returned object must be a list: %v", err)
	}
	if first {
		l.resourceVersion = m.GetResourceVersion()
		size := meta.LenList(page)
		if rest := m.GetRemainingItemCount(); rest != nil && *rest > 0 && *rest < 1<<24 {
			size += int(*rest)
		}
		l.items = make([]interface{}, 0, size)
	}
	var prepareErr error
	each := meta.EachListItemWithAlloc
	inPage := p.inPage && prepare != nil
	if inPage {
		each = meta.EachListItem
	}
	err = each(page, func(item runtime.Object) error {
		if prepare == nil {
			l.items = append(l.items, item)
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		obj, err := prepare(item)
		if err != nil {
			prepareErr = err
			return err
		}
		if inPage && sameObject(obj, item) {
			obj = copiedOut(item)
		}
		l.items = append(l.items, obj)
		return nil
	})
	if prepareErr != nil {
		return "", listPrepareError{err: prepareErr}
	}
	if ctxErr := ctx.Err(); ctxErr != nil && errors.Is(err, ctxErr) {
		return "", err
	}
	if err != nil {
		return "", listResultError{fmt.Errorf("unable to understand list result %#v (%v)", page, err)}
	}
	return m.GetContinue(), nil
}

// copiedOut returns a shallow copy of the object item points at, as
// meta.EachListItemWithAlloc makes one, so that it does not keep its page
// alive; an item that is not a pointer is its own copy already.
func copiedOut(item runtime.Object) runtime.Object {
	v := reflect.ValueOf(item)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return item
	}
	c := reflect.New(v.Elem().Type())
	c.Elem().Set(v.Elem())
	return c.Interface().(runtime.Object)
}

// listPrepareError is a listed object the store refused as it was
// prepared: the error its Replace would have returned for that object.
type listPrepareError struct{ err error }

func (e listPrepareError) Error() string { return e.err.Error() }

func (e listPrepareError) Unwrap() error { return e.err }

// listResultError is a list response that is not a list client-go can
// read; as in client-go, it ends the cycle as it is, without the "failed to
// list" prefix.
type listResultError struct{ err error }

func (e listResultError) Error() string { return e.err.Error() }

func (e listResultError) Unwrap() error { return e.err }

// watchListOptions are the options of a streaming list from rv: a watch that
// first sends the state at rv (or newer) as ADDED events, ends it with the
// initial-events-end bookmark, then goes on with live events.
func (r *Reflector) watchListOptions(rv string) metav1.ListOptions {
	timeout := r.watchTimeoutSeconds()
	return metav1.ListOptions{
		ResourceVersion:      rv,
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		SendInitialEvents:    ptr.To(true),
		AllowWatchBookmarks:  true,
		TimeoutSeconds:       &timeout,
	}
}

// stepWatchList is the watchListing state: open a streaming list, collect
// the initial state (see initialEvents and listIntake) until the
// initial-events-end bookmark, replace the reflector's store with it, and
// keep the stream for the watching state.
func (r *Reflector) stepWatchList(ctx context.Context, c *listWatchCycle) stepResult {
	if r.streamsRefused {
		return stepResult{outcome: outcomeFallBackToList, reason: "the client cannot serve streaming lists"}
	}
	from := r.rewatchResourceVersion()
	intake := r.listIntake(true)
	temp := newInitialEvents(intake.prepare)
	start := r.clock.Now()
	w, err := r.openWatch(ctx, r.watchListOptions(from))
	if err != nil {
		return r.watchListFailed(ctx, err)
	}
	kept := false
	defer func() {
		if !kept {
			w.Stop()
		}
	}()
	reader := streamReader{r: r, ctx: ctx, w: w, sink: temp, phase: phaseInitialEvents, start: start, bufferedOnly: isBufferedFakeWatch(w)}
	end, err := reader.run()
	switch end {
	case endInitialEventsDone:
	case endStopped:
		return stepResult{outcome: outcomeCanceled}
	case endFakeCannotStream:
		klog.FromContext(ctx).V(2).Info("The watch is a test fake that cannot serve streaming lists; this reflector will use paginated lists", "reflector", r.name, "type", r.typeDescription, "events", reader.events)
		r.streamsRefused = true
		return stepResult{outcome: outcomeFallBackToList, reason: "fake stream without initial-events-end bookmark"}
	case endNoEndBookmark:
		klog.FromContext(ctx).Info("Warning: streaming list did not complete in time, falling back to a paginated list", "reflector", r.name, "type", r.typeDescription, "err", err)
		return stepResult{outcome: outcomeFallBackToList, reason: "no initial-events-end bookmark"}
	case endClosed:
		if err == nil {
			// As client-go: a stream that delivered something and then
			// closed cleanly is opened again at once, not after a backoff.
			return stepResult{outcome: outcomeRetryNow, reason: "stream closed before the initial state was complete"}
		}
		return r.watchListFailed(ctx, err)
	default:
		return r.watchListFailed(ctx, err)
	}
	r.setListOrigin(originLastSeen)
	rv := reader.lastRV
	items := temp.list()
	r.checkWatchListConsistency(ctx, rv, intake.transform, items)
	if err := settleAndReplace(intake, items, rv); err != nil {
		return stepResult{outcome: outcomeCycleDone, err: fmt.Errorf("unable to sync watch-list result: %w", err), reason: "replace failed"}
	}
	r.setLastSyncResourceVersion(rv)
	c.stream, kept = w, true
	klog.FromContext(ctx).V(2).Info("Caches populated", "type", r.typeDescription, "reflector", r.name)
	return stepResult{outcome: outcomeSynced, reason: "streamed"}
}

// watchListFailed decides what follows a failed streaming list, making
// client-go v0.37.2's choices with its log lines: back off and stream again
// on a refused connection or throttling; stream again at once from the
// newest state when the resource version was unavailable (expired, or newer
// than the server knows); otherwise fall back to a paginated list at once
// (the server may not serve streaming lists at all).
func (r *Reflector) watchListFailed(ctx context.Context, err error) stepResult {
	logger := klog.FromContext(ctx)
	switch {
	case isWatchErrorRetriable(err):
		logger.V(2).Info("watch-list failed - backing off", "reflector", r.name, "type", r.typeDescription, "err", err)
		return stepResult{outcome: outcomeRetryLater, reason: "streaming list refused"}
	case isRVUnavailableError(err):
		r.setListOrigin(originNewest)
		return stepResult{outcome: outcomeRetryNow, reason: "resource version unavailable"}
	default:
		logger.V(4).Info(watchListFallbackMessage, "err", err)
		return stepResult{outcome: outcomeFallBackToList, reason: "streaming list failed"}
	}
}

// watchListFallbackMessage is client-go's log line, at V(4), for a streaming
// list given up for a paginated one.
const watchListFallbackMessage = "Data couldn't be fetched in watchlist mode. Falling back to regular list. This is expected if watchlist is not supported or disabled in kube-apiserver."

// stepList is the listing state: list from relistResourceVersion, once more
// from the newest state if that version is unavailable, then replace the
// store's content with the result.
func (r *Reflector) stepList(ctx context.Context) stepResult {
	from := r.relistResourceVersion()
	intake := r.listIntake(false)
	pager := listPager{pageSize: r.listPageSize(from), fetch: r.listerWatcher.ListWithContext, prepare: intake.prepare, inPage: intake.inPage, typeDescription: r.typeDescription}
	start := r.clock.Now()
	listed, stopped, err := r.listInBackground(ctx, func(ctx context.Context) (listedItems, error) {
		r.metrics.lists.Inc()
		out, err := pager.collect(ctx, metav1.ListOptions{ResourceVersion: from})
		if isRVUnavailableError(err) {
			r.setListOrigin(originNewest)
			out, err = pager.collect(ctx, metav1.ListOptions{ResourceVersion: r.relistResourceVersion()})
		}
		return out, err
	})
	if stopped {
		return stepResult{outcome: outcomeCanceled}
	}
	r.metrics.listDuration.Observe(r.clock.Since(start).Seconds())
	if prepErr := (listPrepareError{}); errors.As(err, &prepErr) {
		r.setListOrigin(originLastSeen)
		return stepResult{outcome: outcomeCycleDone, err: fmt.Errorf("unable to sync list result: %v", prepErr.err), reason: "replace failed"}
	}
	if resErr := (listResultError{}); errors.As(err, &resErr) {
		return stepResult{outcome: outcomeCycleDone, err: resErr.err, reason: "list not understood"}
	}
	if isShardMoved(err) {
		return stepResult{outcome: outcomeRelistNow, reason: "shard moved during the list"}
	}
	if err != nil {
		return stepResult{outcome: outcomeCycleDone, err: fmt.Errorf("failed to list %v: %w", r.typeDescription, err), reason: "list failed"}
	}
	r.metrics.itemsInList.Observe(float64(len(listed.items)))
	if from == "0" && listed.paginated {
		r.paginatedResult = true
	}
	r.setListOrigin(originLastSeen)
	if err := replaceStoreWith(intake.replace, listed.items, listed.resourceVersion); err != nil {
		return stepResult{outcome: outcomeCycleDone, err: fmt.Errorf("unable to sync list result: %v", err), reason: "replace failed"}
	}
	r.setLastSyncResourceVersion(listed.resourceVersion)
	klog.FromContext(ctx).V(2).Info("Caches populated", "type", r.typeDescription, "reflector", r.name)
	return stepResult{outcome: outcomeSynced, reason: "listed"}
}

// listPageSize chooses the page size of a list from rv (see
// WatchListPageSize).
func (r *Reflector) listPageSize(rv string) int64 {
	switch {
	case r.WatchListPageSize != 0:
		return r.WatchListPageSize
	case r.paginatedResult:
		return defaultListPageSize
	case rv != "" && rv != "0":
		// Unpaged, so that the watch cache can serve it.
		return 0
	default:
		return defaultListPageSize
	}
}

// listInBackground runs list on a goroutine of its own, so that a canceled
// ctx ends the listing state at once even when the ListerWatcher ignores
// contexts; the goroutine then ends when the list call returns, and its
// result is dropped. A panicking list panics again on the caller's
// goroutine, as in client-go, so that it reaches the Reflector's
// utilruntime.HandleCrash.
func (r *Reflector) listInBackground(ctx context.Context, list func(context.Context) (listedItems, error)) (listed listedItems, stopped bool, err error) {
	type result struct {
		listed   listedItems
		err      error
		panicked interface{}
	}
	done := make(chan result, 1)
	go func() {
		var res result
		defer func() {
			if p := recover(); p != nil {
				res = result{panicked: p}
			}
			done <- res
		}()
		res.listed, res.err = list(ctx)
	}()
	select {
	case <-ctx.Done():
		return listedItems{}, true, nil
	case res := <-done:
		if res.panicked != nil {
			panic(res.panicked)
		}
		return res.listed, false, res.err
	}
}

// replaceStoreWith calls replace. A panic is not recovered, as in
// client-go.
func replaceStoreWith(replace func([]interface{}, string) error, items []interface{}, rv string) error {
	return replace(items, rv)
}

// settleAndReplace runs the intake's second pass, if any, over a streamed
// list, then hands the list to the store. A failure of the second pass is
// the store's Replace failing: nothing is handed over.
func settleAndReplace(in listIntake, items []interface{}, rv string) error {
	if in.settle != nil {
		if err := in.settle(items); err != nil {
			return err
		}
	}
	return replaceStoreWith(in.replace, items, rv)
}

// What follows is how a Reflector takes in the objects of a list (a paginated
// LIST or the initial events of a streaming list) on their way to its store.
//
// A list decodes a fresh copy of every object, and the store's Replace only
// comes once the whole list is in, so a relist would hold two full copies of
// the resource at its peak: the cached one and the listed one. To avoid
// that, each listed object is, as it arrives, transformed and then matched
// with the object the store's consumer already caches under its key; when
// both are the same version of the same object, the cached pointer is kept
// and the fresh copy becomes garbage at once. Only objects that changed are
// then held twice.
//
// A streaming list through a queue with a transform is the exception. As in
// client-go, its objects are transformed twice: once each as it arrives (the
// reference collects the stream in a temporary store built with the queue's
// transformer), and once more, on that first result, when the list is
// complete (the queue's Replace transforms what it is given). The first
// results must be held until then, since they are the arguments of the
// second calls; the reuse decision comes after the second transform.

// listIntake is how a Reflector hands a list's objects to its store.
type listIntake struct {
	// prepare turns each listed object into the one to collect; nil
	// collects objects as they are.
	prepare func(obj interface{}) (interface{}, error)
	// settle, if set, is a second pass over the complete list, before
	// replace: it turns each collected object into the one to hand over,
	// in place, and fails as the store's Replace would.
	settle func(list []interface{}) error
	// replace hands the collected list to the store.
	replace func(list []interface{}, resourceVersion string) error
	// transform is the transform of a streaming list's objects as they
	// arrive, or nil; the streaming-list consistency check applies it to
	// the objects it lists.
	transform TransformFunc
	// inPage says prepare may be given a paginated list's items where
	// they lie in their page (listPager.inPage).
	inPage bool
}

// listIntake chooses how the objects of a list reach the store. A queue
// prepares each object as it arrives (transform, then reuse of the cached
// object); for a streaming list with a transform, objects are only
// transformed as they arrive, and the queue prepares the results once the
// list is complete. Any other store gets a paginated list as listed, for
// its Replace to transform; a streaming list is collected through the
// store's transformer, and its Replace transforms the results again.
func (r *Reflector) listIntake(streamed bool) listIntake {
	if p, ok := r.store.(listPreparer); ok && p.preparesListed() {
		transform := p.streamTransformer()
		in := listIntake{prepare: p.prepareListed, replace: p.replaceTransformed, transform: transform, inPage: p.preparesInPage()}
		if streamed && transform != nil {
			in.prepare = transformArriving(transform)
			in.settle = func(list []interface{}) error { return prepareAll(p, list) }
		}
		return in
	}
	var transform TransformFunc
	if ts, ok := r.store.(TransformingStore); ok {
		transform = ts.Transformer()
	}
	in := listIntake{replace: r.store.Replace, transform: transform}
	if streamed && transform != nil {
		in.prepare = transformArriving(transform)
	}
	return in
}

// transformArriving is the first transform of a streaming list's objects,
// as client-go's temporary store applies it: a failure is the store's
// "transforming" error, and the object is left out.
func transformArriving(transform TransformFunc) func(obj interface{}) (interface{}, error) {
	return func(obj interface{}) (interface{}, error) {
		out, err := callTransform(transform, obj)
		if err != nil {
			return nil, fmt.Errorf("transforming: %w", err)
		}
		return out, nil
	}
}

// prepareAll replaces each object of list with what p prepares from it, in
// order, so that each first result may become garbage as the walk goes on.
// It stops at the first failure.
func prepareAll(p listPreparer, list []interface{}) error {
	for i, obj := range list {
		out, err := p.prepareListed(obj)
		if err != nil {
			return err
		}
		list[i] = out
	}
	return nil
}

// initialEvents collects the initial state a streaming list delivers, until
// the bookmark that ends it. It is the ReflectorStore the stream is read
// into: Add and Update keep the newest object of each key, Delete drops it.
// Objects go through prepare on the way in; what prepare returns is kept,
// even nil or a nil pointer, for the store's Replace to meet, as client-go's
// temporary store keeps what its transform returns. It keeps arrival order, and holds
// only a slice and an index from key to position: far less than a Store.
//
// An initialEvents belongs to the goroutine reading the stream.
type initialEvents struct {
	prepare func(obj interface{}) (interface{}, error)
	// objs holds the collected objects in arrival order; a deleted one
	// leaves a removedEntry, squeezed out by list.
	objs []interface{}
	// at is the position in objs of each key's object.
	at map[string]int
	// holes counts the removedEntry values in objs.
	holes int
}

// removedEntry marks the place of a deleted object in initialEvents.objs.
type removedEntry struct{}

var _ ReflectorStore = (*initialEvents)(nil)

func newInitialEvents(prepare func(obj interface{}) (interface{}, error)) *initialEvents {
	return &initialEvents{prepare: prepare, at: map[string]int{}}
}

// Add records obj as the state of its key.
func (e *initialEvents) Add(obj interface{}) error { return e.put(obj) }

// Update records obj as the state of its key.
func (e *initialEvents) Update(obj interface{}) error { return e.put(obj) }

func (e *initialEvents) put(obj interface{}) error {
	key, err := DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return KeyError{Obj: obj, Err: err}
	}
	if e.prepare != nil {
		if obj, err = e.prepare(obj); err != nil {
			return err
		}
	}
	if i, ok := e.at[key]; ok {
		e.objs[i] = obj
		return nil
	}
	e.at[key] = len(e.objs)
	e.objs = append(e.objs, obj)
	return nil
}

// Delete forgets the object of obj's key.
func (e *initialEvents) Delete(obj interface{}) error {
	key, err := DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return KeyError{Obj: obj, Err: err}
	}
	if i, ok := e.at[key]; ok {
		e.objs[i] = removedEntry{}
		delete(e.at, key)
		e.holes++
	}
	return nil
}

// Replace starts over from list. A streaming list never calls it; it is
// here to complete the ReflectorStore.
func (e *initialEvents) Replace(list []interface{}, _ string) error {
	e.objs, e.at, e.holes = nil, map[string]int{}, 0
	for _, obj := range list {
		if err := e.put(obj); err != nil {
			return err
		}
	}
	return nil
}

// Resync does nothing: there is nothing downstream to resync.
func (e *initialEvents) Resync() error { return nil }

// list returns the collected objects in arrival order and empties e, so
// that its index is garbage before the list is handed on.
func (e *initialEvents) list() []interface{} {
	objs := e.objs
	if e.holes > 0 {
		kept := objs[:0]
		for _, obj := range objs {
			if _, removed := obj.(removedEntry); !removed {
				kept = append(kept, obj)
			}
		}
		clear(objs[len(kept):])
		objs = kept
	}
	e.objs, e.at, e.holes = nil, nil, 0
	return objs
}
