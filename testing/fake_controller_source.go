// Package framework provides FakeControllerSource, an in-memory
// ListerWatcher for tests of reflectors, informers and controllers, with the
// API of client-go's k8s.io/client-go/tools/cache/testing.
//
// Beyond that API, the fake serves streaming lists: a Watch whose options
// set SendInitialEvents to true first delivers every current object as an
// ADDED event, then a BOOKMARK annotated "k8s.io/initial-events-end" at the
// current resource version, then live changes, as kube-apiserver does for a
// reflector using the WatchListClient feature. Bookmark sends progress
// bookmarks to the watches that asked for them, and Compact discards the
// change history as etcd's compaction does.
//
// NewFakeControllerSourceWithOptions turns on more of the server:
// paginated lists with continue tokens, a bounded watch cache, label and
// field selectors, typed lists, refusing streaming lists, and cheap object
// hand-out for benchmarks (see FakeControllerSourceOptions). Every source
// also takes checked writes (Create, Update, Remove, Get, with the API
// errors of kube-apiserver), misbehaves on request (DropWatches closes the
// open watches, Expire ends them with 410 and compacts), counts what it
// served (Stats) and can be served over HTTP to a real client
// (HTTPHandler). With FaultyListerWatcher in front for the random failures
// of a real server and network, it is the one simulated API server of this
// module's tests, soak, benchmarks, examples and compatibility tests.
package framework

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"sync"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"
)

// watchQueueLength is the per-watcher buffer of the fake's broadcasters.
// A watcher that falls this far behind blocks further changes until it
// reads (watch.WaitIfChannelFull), so no event is ever lost.
const watchQueueLength = 100

// errShutDown is returned by List and Watch after Shutdown.
var errShutDown = errors.New("fake controller source is shut down")

// nnu identifies a stored object by namespace, name and UID, so that an
// object deleted and recreated under the same name is a different item.
type nnu struct {
	namespace, name string
	uid             types.UID
}

// compareKeys orders keys by namespace, then name, then UID.
func compareKeys(a, b nnu) int {
	return cmp.Or(cmp.Compare(a.namespace, b.namespace), cmp.Compare(a.name, b.name), cmp.Compare(a.uid, b.uid))
}

// FakeControllerSource is an in-memory API server for one resource: it
// keeps a set of objects, numbers every change with a new resource version,
// and serves List and Watch over them. It is safe for concurrent use.
//
// Each change (Add, Modify, Delete, their DropWatch forms, Change) takes the
// next resource version, writes it into the caller's object, stores a deep
// copy and, unless the change is dropped, sends another deep copy to every
// open watch. List and Watch hand out copies too, so neither callers nor
// consumers can alter the fake's state by mutating what they hold. Selectors
// and other list options are ignored.
//
// A Watch from resource version N replays the recorded changes after N
// before live ones; ResetWatch forgets that history (and closes open
// watches), after which a Watch from an older version fails as expired.
//
// Shutdown closes every watch and is final: afterwards List and Watch
// return an error and changes are ignored.
//
// Items, Broadcaster and ListError are exported for compatibility with
// client-go's fake; reading or writing them directly must not race with
// the methods.
type FakeControllerSource struct {
	// publishMu orders publication. Every change and every Watch
	// registration holds it from the state update (or snapshot) until the
	// broadcaster has accepted the event (or the new watcher), so a watch
	// gets each change exactly once: either in its initial snapshot or
	// replay, or live. It is also held while the broadcaster blocks on a
	// watcher that does not read, which is why it is separate from lock:
	// List never takes it, so a consumer can still list while its own watch
	// channel is full. Lock order: publishMu, then lock.
	publishMu sync.Mutex

	// lock guards every field below. Writers also hold publishMu.
	lock sync.RWMutex

	// Items maps each live object's key to the stored copy of its latest
	// state.
	Items map[nnu]runtime.Object

	// Broadcaster fans live events out to the open watches; ResetWatch
	// replaces it.
	Broadcaster *watch.Broadcaster

	// ListError, when not nil, is returned by every List.
	ListError error

	// opts are the options the source was made with; fixed.
	opts FakeControllerSourceOptions

	// changes holds the retained changes since the last ResetWatch or
	// Compact, oldest first, at most opts.WatchCacheSize of them when that
	// is set. Invariant: changes[i] has resource version
	// lastRV-len(changes)+1+i; watches and continue tokens can start from
	// lastRV-len(changes) on.
	changes []change
	// lastRV is the resource version of the newest change, 0 before any.
	lastRV int
	// example is a stored object of the resource's type (the last one
	// changed, or a preset zero value), the template of streaming-list
	// bookmarks. Nil until known.
	example runtime.Object
	// broken records the first change the fake could not apply; List and
	// Watch then fail with it, since Change has no way to report it.
	broken error
	// shutDown is set by Shutdown.
	shutDown bool
	// byName maps each live object's namespace and name to its key in
	// Items (the newest, should two UIDs share a name): what Get, Create,
	// Update and Remove look objects up by.
	byName map[types.NamespacedName]nnu
	// watches are the open watches, so that DropWatches, Expire and
	// ResetWatch can count and forget them and WaitForWatches can see them.
	watches map[*sourceWatch]struct{}
	// watchesChanged is closed, and replaced, whenever a watch opens.
	watchesChanged chan struct{}

	// stats counts what the source served; atomic, so outside lock.
	stats sourceCounters

	// order keeps the sorted keys between the pages of a list; it has a
	// lock of its own, as pages are served under lock's read side.
	order keyOrder
}

// change is one recorded change.
type change struct {
	// event is the change as watches get it, with the stored object.
	event watch.Event
	// prev is the stored state of the object's key before the change, nil
	// if it had none: what undoing the change restores.
	prev runtime.Object
}

// FakePVControllerSource is a FakeControllerSource for PersistentVolumes
// whose List returns a *v1.PersistentVolumeList.
type FakePVControllerSource struct {
	FakeControllerSource
}

// FakePVCControllerSource is a FakeControllerSource for
// PersistentVolumeClaims whose List returns a *v1.PersistentVolumeClaimList.
type FakePVCControllerSource struct {
	FakeControllerSource
}

// NewFakeControllerSource returns an empty source whose List returns a
// *v1.List. Call Shutdown when done: the source runs a goroutine.
func NewFakeControllerSource() *FakeControllerSource {
	f := &FakeControllerSource{}
	f.init(nil)
	return f
}

// NewFakePVControllerSource returns an empty source of PersistentVolumes.
// Call Shutdown when done.
func NewFakePVControllerSource() *FakePVControllerSource {
	f := &FakePVControllerSource{}
	f.init(&v1.PersistentVolume{})
	return f
}

// NewFakePVCControllerSource returns an empty source of
// PersistentVolumeClaims. Call Shutdown when done.
func NewFakePVCControllerSource() *FakePVCControllerSource {
	f := &FakePVCControllerSource{}
	f.init(&v1.PersistentVolumeClaim{})
	return f
}

// init sets up an empty source; example, if not nil, fixes the object type
// of streaming-list bookmarks before any object is added.
func (f *FakeControllerSource) init(example runtime.Object) {
	f.Items = map[nnu]runtime.Object{}
	f.Broadcaster = newBroadcaster()
	f.example = example
	f.byName = map[types.NamespacedName]nnu{}
	f.watches = map[*sourceWatch]struct{}{}
	f.watchesChanged = make(chan struct{})
}

func newBroadcaster() *watch.Broadcaster {
	return watch.NewBroadcaster(watchQueueLength, watch.WaitIfChannelFull)
}

// Add stores obj and tells the watches. obj's resource version is set.
func (f *FakeControllerSource) Add(obj runtime.Object) {
	f.Change(watch.Event{Type: watch.Added, Object: obj}, 1)
}

// Modify stores obj's new state and tells the watches. obj's resource
// version is set.
func (f *FakeControllerSource) Modify(obj runtime.Object) {
	f.Change(watch.Event{Type: watch.Modified, Object: obj}, 1)
}

// Delete removes the object and tells the watches, sending lastValue as its
// final state. lastValue's resource version is set.
func (f *FakeControllerSource) Delete(lastValue runtime.Object) {
	f.Change(watch.Event{Type: watch.Deleted, Object: lastValue}, 1)
}

// AddDropWatch stores obj without telling the open watches, as if their
// event were lost. obj's resource version is set; the change is still
// replayed to later watches and seen by List.
func (f *FakeControllerSource) AddDropWatch(obj runtime.Object) {
	f.Change(watch.Event{Type: watch.Added, Object: obj}, 0)
}

// ModifyDropWatch is Modify without telling the open watches.
func (f *FakeControllerSource) ModifyDropWatch(obj runtime.Object) {
	f.Change(watch.Event{Type: watch.Modified, Object: obj}, 0)
}

// DeleteDropWatch is Delete without telling the open watches.
func (f *FakeControllerSource) DeleteDropWatch(lastValue runtime.Object) {
	f.Change(watch.Event{Type: watch.Deleted, Object: lastValue}, 0)
}

// Change records e under the next resource version, which it writes into
// e.Object: ADDED and MODIFIED store the object, DELETED removes it, other
// types change no object. The open watches get the event with probability
// watchProbability (0: never, 1: always).
//
// Change cannot return an error: an object without metadata is logged and
// recorded, and from then on List and Watch fail with that error so the
// test notices. After Shutdown, Change does nothing.
func (f *FakeControllerSource) Change(e watch.Event, watchProbability float64) {
	f.publishMu.Lock()
	defer f.publishMu.Unlock()
	f.lock.Lock()
	b, sent, ok := f.recordLocked(e)
	f.lock.Unlock()
	if ok && rand.Float64() < watchProbability {
		// An error here means the broadcaster was shut down, and so were
		// all the watches that could have received the event.
		_ = b.Action(sent.Type, sent.Object)
	}
}

// recordLocked applies e to the state and returns the broadcaster to send
// on and the event to send. Caller holds publishMu, and lock for writing.
func (f *FakeControllerSource) recordLocked(e watch.Event) (*watch.Broadcaster, watch.Event, bool) {
	if f.shutDown {
		klog.Background().V(2).Info("Fake controller source is shut down; change ignored", "type", e.Type)
		return nil, watch.Event{}, false
	}
	accessor, err := meta.Accessor(e.Object)
	if err != nil {
		err = fmt.Errorf("fake controller source: recording a %s change of %T: %w", e.Type, e.Object, err)
		klog.Background().Error(err, "Change ignored; List and Watch will fail from now on")
		if f.broken == nil {
			f.broken = err
		}
		return nil, watch.Event{}, false
	}
	f.lastRV++
	setResourceVersion(accessor, f.lastRV)
	stored := watch.Event{Type: e.Type, Object: f.keep(e.Object)}
	f.example = stored.Object
	key := nnu{namespace: accessor.GetNamespace(), name: accessor.GetName(), uid: accessor.GetUID()}
	name := types.NamespacedName{Namespace: key.namespace, Name: key.name}
	f.retainLocked(change{event: stored, prev: f.Items[key]})
	switch e.Type {
	case watch.Added, watch.Modified:
		f.Items[key] = stored.Object
		f.byName[name] = key
	case watch.Deleted:
		delete(f.Items, key)
		if f.byName[name] == key {
			delete(f.byName, name)
		}
	}
	return f.Broadcaster, f.handOutEvent(stored), true
}

// setResourceVersion writes rv into an object's metadata, without
// allocating when it already carries it (as a benchmark's prepared
// objects do).
func setResourceVersion(accessor metav1.Object, rv int) {
	var buf [20]byte
	text := strconv.AppendInt(buf[:0], int64(rv), 10)
	if accessor.GetResourceVersion() != string(text) {
		accessor.SetResourceVersion(string(text))
	}
}

// keep returns what the source stores for obj: a deep copy, or obj itself
// when the source shares objects or hands them out through HandOut.
func (f *FakeControllerSource) keep(obj runtime.Object) runtime.Object {
	if f.opts.ShareObjects || f.opts.HandOut != nil {
		return obj
	}
	return obj.DeepCopyObject()
}

// handOut returns what a list gives out for a stored object: a deep copy,
// the object itself when the source shares objects, or HandOut's result.
func (f *FakeControllerSource) handOut(stored runtime.Object) runtime.Object {
	switch {
	case f.opts.HandOut != nil:
		return f.opts.HandOut(stored)
	case f.opts.ShareObjects:
		return stored
	}
	return stored.DeepCopyObject()
}

// handOutEvent returns e as the source queues it for watches: with a deep
// copy of its object, or with the object itself when the source shares
// objects or applies HandOut as each watch delivers it (see relay).
func (f *FakeControllerSource) handOutEvent(e watch.Event) watch.Event {
	if f.opts.ShareObjects || f.opts.HandOut != nil {
		return e
	}
	return watch.Event{Type: e.Type, Object: e.Object.DeepCopyObject()}
}

// retainLocked appends c to the history and drops what the watch cache
// size no longer keeps. Caller holds lock for writing.
func (f *FakeControllerSource) retainLocked(c change) {
	f.changes = append(f.changes, c)
	if n := f.opts.WatchCacheSize; n > 0 && len(f.changes) > n {
		drop := len(f.changes) - n
		clear(f.changes[:drop])
		f.changes = f.changes[drop:]
	}
}

// oldestLocked is the oldest resource version a watch or a continue token
// can start from: every change after it is retained. Caller holds lock, in
// either mode.
func (f *FakeControllerSource) oldestLocked() int {
	return f.lastRV - len(f.changes)
}

// List returns a *v1.List of copies of the current objects, ordered by
// namespace, name and UID, with the resource version of the newest change.
// It fails with ListError when that is set. options are ignored unless the
// source pages lists or honours selectors (FakeControllerSourceOptions),
// and the list type is FakeControllerSourceOptions.NewList's when set.
func (f *FakeControllerSource) List(options metav1.ListOptions) (runtime.Object, error) {
	if f.opts.NewList != nil {
		return f.listAs(f.opts.NewList(), options)
	}
	return f.listAs(&v1.List{}, options)
}

// List returns a *v1.PersistentVolumeList; see FakeControllerSource.List.
// Unlike client-go's fake, it honours ListError.
func (f *FakePVControllerSource) List(options metav1.ListOptions) (runtime.Object, error) {
	return f.listAs(&v1.PersistentVolumeList{}, options)
}

// List returns a *v1.PersistentVolumeClaimList; see
// FakeControllerSource.List. Unlike client-go's fake, it honours ListError.
func (f *FakePVCControllerSource) List(options metav1.ListOptions) (runtime.Object, error) {
	return f.listAs(&v1.PersistentVolumeClaimList{}, options)
}

// listAs fills list, an empty list object, with copies of the current
// objects and the current resource version, or with the page options ask
// for when the source pages lists.
func (f *FakeControllerSource) listAs(list runtime.Object, options metav1.ListOptions) (runtime.Object, error) {
	sel, err := f.selectorFor(options)
	if err != nil {
		return nil, err
	}
	f.lock.RLock()
	defer f.lock.RUnlock()
	if err := f.usableLocked(); err != nil {
		return nil, fmt.Errorf("listing: %w", err)
	}
	if f.ListError != nil {
		return nil, f.ListError
	}
	f.stats.listPages.Add(1)
	if options.Continue == "" {
		f.stats.lists.Add(1)
	}
	if f.opts.Paging {
		list, err := f.pageLocked(list, options, sel)
		f.stats.countGone(err)
		return list, err
	}
	if err := meta.SetList(list, f.snapshotLocked(sel)); err != nil {
		return nil, fmt.Errorf("listing: %w", err)
	}
	listMeta, err := meta.ListAccessor(list)
	if err != nil {
		return nil, fmt.Errorf("listing: %w", err)
	}
	listMeta.SetResourceVersion(strconv.Itoa(f.lastRV))
	return list, nil
}

// usableLocked reports why the source cannot serve requests, if it cannot.
// Caller holds lock, in either mode.
func (f *FakeControllerSource) usableLocked() error {
	if f.shutDown {
		return errShutDown
	}
	return f.broken
}

// snapshotLocked returns copies of the current objects sel selects, in
// key order. Caller holds lock, in either mode.
func (f *FakeControllerSource) snapshotLocked(sel selector) []runtime.Object {
	keys := sortedKeys(f.Items, sel)
	objs := make([]runtime.Object, len(keys))
	for i, k := range keys {
		objs[i] = f.handOut(f.Items[k])
	}
	return objs
}

// sortedKeys returns the keys of the objects of state that sel selects, in
// key order.
func sortedKeys(state map[nnu]runtime.Object, sel selector) []nnu {
	keys := make([]nnu, 0, len(state))
	for k, obj := range state {
		if sel.matches(obj) {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, compareKeys)
	return keys
}

// Watch opens a watch. With options.SendInitialEvents set to true it serves
// a streaming list (see the package doc); the resource version must then
// be empty, "0" or not newer than the current one, and the request fails if
// the object type is still unknown (no object was ever added to a plain
// source), so that a reflector falls back to List and Watch.
//
// Otherwise options.ResourceVersion must be a number N: changes after N
// recorded since the last ResetWatch are replayed first, then live events
// follow. An N older than that history yields an "expired" API error and an
// N newer than the current version a "too large resource version" API
// error, the errors a reflector reacts to by listing again.
func (f *FakeControllerSource) Watch(options metav1.ListOptions) (watch.Interface, error) {
	sel, err := f.selectorFor(options)
	if err != nil {
		return nil, err
	}
	f.publishMu.Lock()
	defer f.publishMu.Unlock()
	f.lock.RLock()
	b := f.Broadcaster
	prefix, err := f.watchPrefixLocked(options, sel)
	f.lock.RUnlock()
	f.stats.watches.Add(1)
	if err != nil {
		f.stats.countGone(err)
		return nil, err
	}
	w, err := b.WatchWithPrefix(prefix)
	if err != nil {
		return nil, err
	}
	return f.track(f.relay(w, sel)), nil
}

// watchPrefixLocked returns the events a new watch gets before live ones.
// Its API errors are returned unwrapped, as a client would return them.
// Caller holds lock, in either mode, and publishMu.
func (f *FakeControllerSource) watchPrefixLocked(options metav1.ListOptions, sel selector) ([]watch.Event, error) {
	if err := f.usableLocked(); err != nil {
		return nil, fmt.Errorf("watching: %w", err)
	}
	if options.SendInitialEvents != nil && *options.SendInitialEvents {
		if f.opts.RefuseStreamingLists {
			return nil, apierrors.NewBadRequest("this source does not serve streaming lists (sendInitialEvents)")
		}
		return f.initialEventsLocked(options, sel)
	}
	rv, err := strconv.Atoi(options.ResourceVersion)
	if err != nil || rv < 0 {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("resource version %q is not a non-negative number", options.ResourceVersion))
	}
	if rv > f.lastRV {
		return nil, tooLargeResourceVersion(rv, f.lastRV)
	}
	missed := f.lastRV - rv
	if missed > len(f.changes) {
		return nil, apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (oldest kept: %d)", rv, f.oldestLocked()))
	}
	replay := make([]watch.Event, 0, missed)
	for _, c := range f.changes[len(f.changes)-missed:] {
		replay = append(replay, f.handOutEvent(c.event))
	}
	return replay, nil
}

// initialEventsLocked returns the opening of a streaming list: an ADDED
// event per current object, in key order, then the end-of-initial-events
// bookmark. Caller holds lock, in either mode.
func (f *FakeControllerSource) initialEventsLocked(options metav1.ListOptions, sel selector) ([]watch.Event, error) {
	if options.ResourceVersionMatch != "" && options.ResourceVersionMatch != metav1.ResourceVersionMatchNotOlderThan {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("resourceVersionMatch %q cannot be used with sendInitialEvents", options.ResourceVersionMatch))
	}
	if options.ResourceVersion != "" {
		rv, err := strconv.Atoi(options.ResourceVersion)
		if err != nil || rv < 0 {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("resource version %q is not a non-negative number", options.ResourceVersion))
		}
		if rv > f.lastRV {
			return nil, tooLargeResourceVersion(rv, f.lastRV)
		}
	}
	bookmark, err := f.initialEventsEndLocked()
	if err != nil {
		return nil, err
	}
	keys := sortedKeys(f.Items, sel)
	events := make([]watch.Event, 0, len(keys)+1)
	for _, k := range keys {
		events = append(events, f.handOutEvent(watch.Event{Type: watch.Added, Object: f.Items[k]}))
	}
	return append(events, watch.Event{Type: watch.Bookmark, Object: bookmark}), nil
}

// initialEventsEndLocked builds the bookmark closing the initial events: an
// empty object of the resource's type and kind carrying the current
// resource version and the initial-events-end annotation. Caller holds
// lock, in either mode.
func (f *FakeControllerSource) initialEventsEndLocked() (runtime.Object, error) {
	if f.example == nil {
		return nil, errors.New("watching with initial events: the object type is unknown until an object is added")
	}
	obj, err := emptyLike(f.example)
	if err != nil {
		return nil, err
	}
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	accessor.SetResourceVersion(strconv.Itoa(f.lastRV))
	accessor.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
	return obj, nil
}

// emptyLike returns a new zero object of example's type, with example's
// apiVersion and kind (which unstructured objects need to be recognised).
func emptyLike(example runtime.Object) (runtime.Object, error) {
	t := reflect.TypeOf(example)
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("cannot make a bookmark of type %T: not a pointer to a struct", example)
	}
	obj, ok := reflect.New(t.Elem()).Interface().(runtime.Object)
	if !ok {
		return nil, fmt.Errorf("cannot make a bookmark of type %T", example)
	}
	obj.GetObjectKind().SetGroupVersionKind(example.GetObjectKind().GroupVersionKind())
	return obj, nil
}

// tooLargeResourceVersion is the error kube-apiserver returns for a watch
// from a resource version it has not reached yet.
func tooLargeResourceVersion(requested, current int) error {
	err := apierrors.NewTimeoutError(fmt.Sprintf("too large resource version: %d, current: %d", requested, current), 1)
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{
		Type:    metav1.CauseTypeResourceVersionTooLarge,
		Message: "Too large resource version",
	})
	return err
}

// ResetWatch simulates a broken connection: it closes every open watch and
// forgets the change history, so consumers must list again. Later changes
// go to watches opened after it.
func (f *FakeControllerSource) ResetWatch() {
	f.publishMu.Lock()
	defer f.publishMu.Unlock()
	f.lock.Lock()
	old := f.Broadcaster
	if !f.shutDown {
		f.Broadcaster = newBroadcaster()
		f.changes = nil
	}
	f.stats.watchesEnded.Add(int64(f.forgetWatchesLocked()))
	f.lock.Unlock()
	// Outside lock: shutting down waits for queued events to be delivered.
	old.Shutdown()
}

// Shutdown closes every open watch, after the events already sent are
// delivered, and stops the source's goroutine. It is final and idempotent:
// afterwards List and Watch return an error and changes are ignored.
func (f *FakeControllerSource) Shutdown() {
	f.publishMu.Lock()
	defer f.publishMu.Unlock()
	f.lock.Lock()
	f.shutDown = true
	b := f.Broadcaster
	f.forgetWatchesLocked()
	f.lock.Unlock()
	b.Shutdown()
}
