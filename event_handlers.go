package cache

import (
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ResourceEventHandler receives the changes an informer observes. Objects
// passed to it are shared with the informer's cache and with every other
// handler: they are read-only.
//
// One registration's methods are called one at a time, in the order the
// changes happened, never concurrently with each other.
//
//   - OnAdd reports an object that appeared. isInInitialList is true when the
//     object belongs to the state the informer found at start (or that an
//     informer already held when the handler joined it), false when it
//     appeared later.
//   - OnUpdate reports an object that changed. oldObj is the state the
//     cache held before, which is not necessarily the previous revision:
//     several changes may have been merged. A relist or a periodic resync
//     also calls OnUpdate, with an unchanged object.
//   - OnDelete reports an object that went away. obj is the last state the
//     cache knew, or a DeletedFinalStateUnknown when the deletion was only
//     noticed by a relist; its Obj may then be stale.
type ResourceEventHandler interface {
	OnAdd(obj interface{}, isInInitialList bool)
	OnUpdate(oldObj, newObj interface{})
	OnDelete(obj interface{})
}

// ResourceEventHandlerFuncs is a ResourceEventHandler made of optional
// functions: a nil function ignores its kind of event. AddFunc does not learn
// whether an object came with the initial list; use
// ResourceEventHandlerDetailedFuncs for that. The objects are read-only.
type ResourceEventHandlerFuncs struct {
	AddFunc    func(obj interface{})
	UpdateFunc func(oldObj, newObj interface{})
	DeleteFunc func(obj interface{})
}

var _ ResourceEventHandler = ResourceEventHandlerFuncs{}

// OnAdd calls AddFunc, if set.
func (r ResourceEventHandlerFuncs) OnAdd(obj interface{}, isInInitialList bool) {
	if r.AddFunc != nil {
		r.AddFunc(obj)
	}
}

// OnUpdate calls UpdateFunc, if set.
func (r ResourceEventHandlerFuncs) OnUpdate(oldObj, newObj interface{}) {
	if r.UpdateFunc != nil {
		r.UpdateFunc(oldObj, newObj)
	}
}

// OnDelete calls DeleteFunc, if set.
func (r ResourceEventHandlerFuncs) OnDelete(obj interface{}) {
	if r.DeleteFunc != nil {
		r.DeleteFunc(obj)
	}
}

// eventFuncs lists the held functions, for naming the handler in logs.
func (r ResourceEventHandlerFuncs) eventFuncs() []any {
	return []any{r.AddFunc, r.UpdateFunc, r.DeleteFunc}
}

// ResourceEventHandlerDetailedFuncs is ResourceEventHandlerFuncs whose
// AddFunc also receives isInInitialList, which a handler needs to tell when
// it has seen the whole initial state. A nil function ignores its kind of
// event. The objects are read-only.
type ResourceEventHandlerDetailedFuncs struct {
	AddFunc    func(obj interface{}, isInInitialList bool)
	UpdateFunc func(oldObj, newObj interface{})
	DeleteFunc func(obj interface{})
}

var _ ResourceEventHandler = ResourceEventHandlerDetailedFuncs{}

// OnAdd calls AddFunc, if set.
func (r ResourceEventHandlerDetailedFuncs) OnAdd(obj interface{}, isInInitialList bool) {
	if r.AddFunc != nil {
		r.AddFunc(obj, isInInitialList)
	}
}

// OnUpdate calls UpdateFunc, if set.
func (r ResourceEventHandlerDetailedFuncs) OnUpdate(oldObj, newObj interface{}) {
	if r.UpdateFunc != nil {
		r.UpdateFunc(oldObj, newObj)
	}
}

// OnDelete calls DeleteFunc, if set.
func (r ResourceEventHandlerDetailedFuncs) OnDelete(obj interface{}) {
	if r.DeleteFunc != nil {
		r.DeleteFunc(obj)
	}
}

// eventFuncs lists the held functions, for naming the handler in logs.
func (r ResourceEventHandlerDetailedFuncs) eventFuncs() []any {
	return []any{r.AddFunc, r.UpdateFunc, r.DeleteFunc}
}

// FilteringResourceEventHandler forwards to Handler only the events about
// objects FilterFunc accepts, so that Handler sees the filtered set as if it
// were the whole collection:
//
//   - an add or a delete goes through when FilterFunc accepts its object;
//   - an update whose old and new objects are both accepted stays an update;
//   - an update to an object that starts being accepted becomes
//     OnAdd(newObj, false);
//   - an update to an object that stops being accepted becomes
//     OnDelete(oldObj);
//   - an update where neither object is accepted is dropped.
//
// FilterFunc must not modify the objects and should be cheap: it runs on
// every event, twice for updates. A nil FilterFunc accepts everything; a nil
// Handler drops everything.
type FilteringResourceEventHandler struct {
	FilterFunc func(obj interface{}) bool
	Handler    ResourceEventHandler
}

var _ ResourceEventHandler = FilteringResourceEventHandler{}

// OnAdd forwards the add if FilterFunc accepts obj.
func (r FilteringResourceEventHandler) OnAdd(obj interface{}, isInInitialList bool) {
	if r.Handler != nil && r.accepts(obj) {
		r.Handler.OnAdd(obj, isInInitialList)
	}
}

// OnUpdate forwards the update as an update, an add or a delete, depending
// on which of the two objects FilterFunc accepts.
func (r FilteringResourceEventHandler) OnUpdate(oldObj, newObj interface{}) {
	if r.Handler == nil {
		return
	}
	switch filteredUpdate(r.accepts(oldObj), r.accepts(newObj)) {
	case updateStays:
		r.Handler.OnUpdate(oldObj, newObj)
	case updateBecomesAdd:
		r.Handler.OnAdd(newObj, false)
	case updateBecomesDelete:
		r.Handler.OnDelete(oldObj)
	}
}

// OnDelete forwards the delete if FilterFunc accepts obj, which may be a
// DeletedFinalStateUnknown.
func (r FilteringResourceEventHandler) OnDelete(obj interface{}) {
	if r.Handler != nil && r.accepts(obj) {
		r.Handler.OnDelete(obj)
	}
}

func (r FilteringResourceEventHandler) accepts(obj interface{}) bool {
	return r.FilterFunc == nil || r.FilterFunc(obj)
}

// wrappedHandler returns the handler events are forwarded to, for naming
// this handler in logs after it.
func (r FilteringResourceEventHandler) wrappedHandler() any {
	return r.Handler
}

// updateOutcome is what a filtering handler makes of an update.
type updateOutcome int

const (
	updateDropped updateOutcome = iota
	updateStays
	updateBecomesAdd
	updateBecomesDelete
)

// filteredUpdate decides what an update turns into once a filter has been
// applied to the object's old and new states. Both filtering handlers share
// it, so the untyped and typed forms cannot drift apart.
func filteredUpdate(oldAccepted, newAccepted bool) updateOutcome {
	switch {
	case oldAccepted && newAccepted:
		return updateStays
	case newAccepted:
		return updateBecomesAdd
	case oldAccepted:
		return updateBecomesDelete
	default:
		return updateDropped
	}
}

// Object is what a typed handler needs from T: a name and a namespace (empty
// for cluster-scoped objects), like every Kubernetes API type has through its
// ObjectMeta. T is comparable so that its zero value (a nil pointer, for API
// types) can stand for "no object".
type Object interface {
	comparable

	GetName() string
	GetNamespace() string
}

// DeletedObject describes a deleted object to a typed handler.
//
// FinalStateUnknown is nil when OptionalObj is the object's last state as
// the informer saw it deleted. It is set when the deletion was only inferred
// from a relist: its Key is then the one reliable fact, and OptionalObj is
// the last state the cache knew (possibly stale) or, if none of type T was
// known, the zero value of T.
//
// GetKey, GetObjectName, GetName and GetNamespace work in every case, so a
// handler can log a DeletedObject with klog.KObj or key a work queue with
// it without looking at which fields are set. OptionalObj is read-only.
type DeletedObject[T Object] struct {
	OptionalObj T

	FinalStateUnknown *DeletedFinalStateUnknown
}

// GetObjectName returns the namespace and name of the deleted object. With a
// tombstone they come from its Key: the part before the first slash is the
// namespace, all the rest is the name, and a key without a slash is a
// cluster-scoped name. Without a tombstone they come from OptionalObj; a
// zero OptionalObj yields an empty ObjectName.
func (d DeletedObject[T]) GetObjectName() ObjectName {
	if d.FinalStateUnknown != nil {
		return objectNameFromKey(d.FinalStateUnknown.Key)
	}
	return typedObjectName(d.OptionalObj)
}

// GetName returns the name part of GetObjectName.
func (d DeletedObject[T]) GetName() string {
	return d.GetObjectName().Name
}

// GetNamespace returns the namespace part of GetObjectName, empty for a
// cluster-scoped object.
func (d DeletedObject[T]) GetNamespace() string {
	return d.GetObjectName().Namespace
}

// GetKey returns the key the informer's store filed the object under: the
// tombstone's Key when there is one, otherwise the MetaNamespaceKeyFunc form
// of OptionalObj ("namespace/name" or "name"), or "" for a zero OptionalObj.
func (d DeletedObject[T]) GetKey() string {
	if d.FinalStateUnknown != nil {
		return d.FinalStateUnknown.Key
	}
	return typedObjectName(d.OptionalObj).String()
}

// objectNameFromKey parses a store key without failing: extra slashes stay
// in the name, which is the most a typed handler can do with a tombstone
// key it did not choose.
func objectNameFromKey(key string) ObjectName {
	namespace, name, found := strings.Cut(key, "/")
	if !found {
		return ObjectName{Name: key}
	}
	return ObjectName{Namespace: namespace, Name: name}
}

// typedObjectName reads obj's namespace and name. The zero T yields an empty
// ObjectName without calling obj's methods. A nil pointer hidden inside a
// non-nil interface T passes that test; if its methods panic, the panic is
// recovered and the name left empty, since a deletion must still reach the
// handler.
func typedObjectName[T Object](obj T) (name ObjectName) {
	var zero T
	if obj == zero {
		return ObjectName{}
	}
	defer func() {
		if recover() != nil {
			name = ObjectName{}
		}
	}()
	return ObjectName{Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

// TypedResourceEventHandler is ResourceEventHandler for objects of type T,
// with deletions described by DeletedObject. The contract is the same:
// events arrive in order, one at a time, and objects are read-only.
type TypedResourceEventHandler[T Object] interface {
	OnAdd(obj T, isInInitialList bool)
	OnUpdate(oldObj, newObj T)
	OnDelete(obj DeletedObject[T])
}

// TypedResourceEventHandlerFuncs is ResourceEventHandlerFuncs for objects of
// type T: a nil function ignores its kind of event.
type TypedResourceEventHandlerFuncs[T Object] struct {
	AddFunc    func(obj T)
	UpdateFunc func(oldObj, newObj T)
	DeleteFunc func(obj DeletedObject[T])
}

var _ TypedResourceEventHandler[*metav1.ObjectMeta] = TypedResourceEventHandlerFuncs[*metav1.ObjectMeta]{}

// OnAdd calls AddFunc, if set.
func (r TypedResourceEventHandlerFuncs[T]) OnAdd(obj T, isInInitialList bool) {
	if r.AddFunc != nil {
		r.AddFunc(obj)
	}
}

// OnUpdate calls UpdateFunc, if set.
func (r TypedResourceEventHandlerFuncs[T]) OnUpdate(oldObj, newObj T) {
	if r.UpdateFunc != nil {
		r.UpdateFunc(oldObj, newObj)
	}
}

// OnDelete calls DeleteFunc, if set.
func (r TypedResourceEventHandlerFuncs[T]) OnDelete(obj DeletedObject[T]) {
	if r.DeleteFunc != nil {
		r.DeleteFunc(obj)
	}
}

// eventFuncs lists the held functions, for naming the handler in logs.
func (r TypedResourceEventHandlerFuncs[T]) eventFuncs() []any {
	return []any{r.AddFunc, r.UpdateFunc, r.DeleteFunc}
}

// TypedResourceEventHandlerDetailedFuncs is ResourceEventHandlerDetailedFuncs
// for objects of type T: AddFunc also receives isInInitialList, and a nil
// function ignores its kind of event.
type TypedResourceEventHandlerDetailedFuncs[T Object] struct {
	AddFunc    func(obj T, isInInitialList bool)
	UpdateFunc func(oldObj, newObj T)
	DeleteFunc func(obj DeletedObject[T])
}

var _ TypedResourceEventHandler[*metav1.ObjectMeta] = TypedResourceEventHandlerDetailedFuncs[*metav1.ObjectMeta]{}

// OnAdd calls AddFunc, if set.
func (r TypedResourceEventHandlerDetailedFuncs[T]) OnAdd(obj T, isInInitialList bool) {
	if r.AddFunc != nil {
		r.AddFunc(obj, isInInitialList)
	}
}

// OnUpdate calls UpdateFunc, if set.
func (r TypedResourceEventHandlerDetailedFuncs[T]) OnUpdate(oldObj, newObj T) {
	if r.UpdateFunc != nil {
		r.UpdateFunc(oldObj, newObj)
	}
}

// OnDelete calls DeleteFunc, if set.
func (r TypedResourceEventHandlerDetailedFuncs[T]) OnDelete(obj DeletedObject[T]) {
	if r.DeleteFunc != nil {
		r.DeleteFunc(obj)
	}
}

// eventFuncs lists the held functions, for naming the handler in logs.
func (r TypedResourceEventHandlerDetailedFuncs[T]) eventFuncs() []any {
	return []any{r.AddFunc, r.UpdateFunc, r.DeleteFunc}
}

// TypedFilteringResourceEventHandler is FilteringResourceEventHandler for
// objects of type T, with the same rules for turning updates into adds and
// deletes. An update that becomes a delete carries the old object in
// OptionalObj and no tombstone.
//
// For a deletion FilterFunc sees DeletedObject.OptionalObj, which is the zero
// T when the informer only knew the deleted object's key; a FilterFunc must
// cope with that. A nil FilterFunc accepts everything; a nil Handler drops
// everything.
type TypedFilteringResourceEventHandler[T Object] struct {
	FilterFunc func(obj T) bool
	Handler    TypedResourceEventHandler[T]
}

var _ TypedResourceEventHandler[*metav1.ObjectMeta] = TypedFilteringResourceEventHandler[*metav1.ObjectMeta]{}

// OnAdd forwards the add if FilterFunc accepts obj.
func (r TypedFilteringResourceEventHandler[T]) OnAdd(obj T, isInInitialList bool) {
	if r.Handler != nil && r.accepts(obj) {
		r.Handler.OnAdd(obj, isInInitialList)
	}
}

// OnUpdate forwards the update as an update, an add or a delete, depending
// on which of the two objects FilterFunc accepts.
func (r TypedFilteringResourceEventHandler[T]) OnUpdate(oldObj, newObj T) {
	if r.Handler == nil {
		return
	}
	switch filteredUpdate(r.accepts(oldObj), r.accepts(newObj)) {
	case updateStays:
		r.Handler.OnUpdate(oldObj, newObj)
	case updateBecomesAdd:
		r.Handler.OnAdd(newObj, false)
	case updateBecomesDelete:
		r.Handler.OnDelete(DeletedObject[T]{OptionalObj: oldObj})
	}
}

// OnDelete forwards the delete if FilterFunc accepts obj.OptionalObj.
func (r TypedFilteringResourceEventHandler[T]) OnDelete(obj DeletedObject[T]) {
	if r.Handler != nil && r.accepts(obj.OptionalObj) {
		r.Handler.OnDelete(obj)
	}
}

func (r TypedFilteringResourceEventHandler[T]) accepts(obj T) bool {
	return r.FilterFunc == nil || r.FilterFunc(obj)
}

// wrappedHandler returns the handler events are forwarded to, for naming
// this handler in logs after it.
func (r TypedFilteringResourceEventHandler[T]) wrappedHandler() any {
	return r.Handler
}

// typedHandlerAdapter lets an untyped event source, such as a shared
// informer's processor, drive a TypedResourceEventHandler[T]: objects are
// asserted to T and tombstones become DeletedObject[T] with
// FinalStateUnknown set.
//
// As in client-go, an object that is not a T (a mismatch between the
// informer's object type and T), and a nil handler, panic in the assertion
// or the call; the caller runs handlers under utilruntime.HandleCrash*. A
// tombstone without an object delivers the deletion with only the key.
type typedHandlerAdapter[T Object] struct {
	handler TypedResourceEventHandler[T]
}

var _ ResourceEventHandler = (*typedHandlerAdapter[*metav1.ObjectMeta])(nil)

// newTypedHandlerAdapter wraps handler.
func newTypedHandlerAdapter[T Object](handler TypedResourceEventHandler[T]) *typedHandlerAdapter[T] {
	return &typedHandlerAdapter[T]{handler: handler}
}

// OnAdd delivers obj, which must be a T.
func (a *typedHandlerAdapter[T]) OnAdd(obj interface{}, isInInitialList bool) {
	a.handler.OnAdd(obj.(T), isInInitialList)
}

// OnUpdate delivers the update; both objects must be T.
func (a *typedHandlerAdapter[T]) OnUpdate(oldObj, newObj interface{}) {
	a.handler.OnUpdate(oldObj.(T), newObj.(T))
}

// OnDelete delivers obj as a DeletedObject[T]: a T fills OptionalObj, a
// tombstone fills FinalStateUnknown (and OptionalObj from its Obj, which must
// then be a T). A MovedOutOfShard fills OptionalObj from its Obj and
// FinalStateUnknown with a tombstone carrying the MovedOutOfShard.
func (a *typedHandlerAdapter[T]) OnDelete(obj interface{}) {
	if moved, ok := obj.(MovedOutOfShard); ok {
		// A sharded informer's move: FinalStateUnknown carries the marker
		// (IsMovedOutOfShard tells), OptionalObj the last state.
		deleted := DeletedObject[T]{FinalStateUnknown: &DeletedFinalStateUnknown{Key: moved.Key, Obj: moved}}
		if moved.Obj != nil {
			deleted.OptionalObj = moved.Obj.(T)
		}
		a.handler.OnDelete(deleted)
		return
	}
	tombstone, isTombstone := obj.(DeletedFinalStateUnknown)
	if !isTombstone {
		a.handler.OnDelete(DeletedObject[T]{OptionalObj: obj.(T)})
		return
	}
	deleted := DeletedObject[T]{FinalStateUnknown: &tombstone}
	if tombstone.Obj != nil {
		deleted.OptionalObj = tombstone.Obj.(T)
	}
	a.handler.OnDelete(deleted)
}

// wrappedHandler returns the typed handler, for naming this adapter in logs
// after it.
func (a *typedHandlerAdapter[T]) wrappedHandler() any {
	return a.handler
}

// What follows is the seam between the controller and whatever it reports to:
// the notifications handed on to handlers.
// The controller applies each popped change to the cache and then describes
// what happened as a notification; a changeSink receives it. The shared
// informer is one sink (it fans notifications out to its listeners), and a
// plain ResourceEventHandler, as NewInformer takes, is another. Listeners
// use the same notification type for their pending work, so the one switch
// that turns a notification into a handler call lives here.

// notificationKind tells which handler method a notification calls.
type notificationKind uint8

const (
	notifyAdd notificationKind = iota + 1
	notifyUpdate
	notifyDelete
)

// notification is one call to make on a handler: OnAdd(newObj,
// initialList), OnUpdate(oldObj, newObj) or OnDelete(oldObj).
type notification struct {
	oldObj      interface{}
	newObj      interface{}
	kind        notificationKind
	initialList bool
	// relist says, for an update, whether a relist made it and how.
	relist relistOrigin
}

// relistOrigin tells which kind of relist made an update notification.
type relistOrigin uint8

const (
	// notRelisted: a watch event, a resync, or a change of the caller's.
	notRelisted relistOrigin = iota
	// relistedAll: a relist that replaced the store's content at once
	// (a ReplacedAll change).
	relistedAll
	// relistedOne: one object of a relist reconciled by the queue (a
	// Replaced change).
	relistedOne
)

func addNotification(obj interface{}, initialList bool) notification {
	return notification{kind: notifyAdd, newObj: obj, initialList: initialList}
}

func updateNotification(oldObj, newObj interface{}) notification {
	return notification{kind: notifyUpdate, oldObj: oldObj, newObj: newObj}
}

func deleteNotification(obj interface{}) notification {
	return notification{kind: notifyDelete, oldObj: obj}
}

// changeSink receives the changes the controller applied to the cache, in
// the order it applied them.
type changeSink interface {
	notify(n notification)
}

// handlerSink hands each change straight to a ResourceEventHandler.
type handlerSink struct{ handler ResourceEventHandler }

func (s handlerSink) notify(n notification) { n.callOn(s.handler) }

// callOn makes the handler call n describes.
func (n notification) callOn(h ResourceEventHandler) {
	switch n.kind {
	case notifyAdd:
		h.OnAdd(n.newObj, n.initialList)
	case notifyUpdate:
		h.OnUpdate(n.oldObj, n.newObj)
	case notifyDelete:
		h.OnDelete(n.oldObj)
	}
}

// sameResourceVersion reports whether both objects have metadata and the
// same resource version.
func sameResourceVersion(oldObj, newObj interface{}) bool {
	newMeta, err := meta.Accessor(newObj)
	if err != nil {
		return false
	}
	oldMeta, err := meta.Accessor(oldObj)
	if err != nil {
		return false
	}
	return newMeta.GetResourceVersion() == oldMeta.GetResourceVersion()
}
