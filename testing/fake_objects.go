package framework

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// Len returns the number of objects the source holds.
func (f *FakeControllerSource) Len() int {
	f.lock.RLock()
	defer f.lock.RUnlock()
	return len(f.Items)
}

// Get returns a copy of the object namespace/name, and whether there is
// one.
func (f *FakeControllerSource) Get(namespace, name string) (runtime.Object, bool) {
	f.lock.RLock()
	defer f.lock.RUnlock()
	return f.getLocked(namespace, name)
}

// Create stores a new object, as a POST to kube-apiserver does, and tells
// the watches. It returns the object as stored: with the next resource
// version and, if it had none, a UID. obj itself is not modified. An
// object of the same namespace and name is an AlreadyExists API error, an
// object without a name a BadRequest.
func (f *FakeControllerSource) Create(obj runtime.Object) (runtime.Object, error) {
	return f.write(func() (runtime.Object, *watch.Broadcaster, watch.Event, error) { return f.createLocked(obj) })
}

// Update replaces an object, as a PUT does, and tells the watches. It
// returns the object as stored. A missing object is a NotFound API error;
// an object whose resource version is set and is not the stored one is a
// Conflict. The stored UID is kept. obj itself is not modified.
func (f *FakeControllerSource) Update(obj runtime.Object) (runtime.Object, error) {
	return f.write(func() (runtime.Object, *watch.Broadcaster, watch.Event, error) { return f.updateLocked(obj) })
}

// Remove deletes the object namespace/name, as a DELETE does, and tells the
// watches; the DELETED event carries the deletion's resource version. A
// missing object is a NotFound API error.
func (f *FakeControllerSource) Remove(namespace, name string) error {
	_, err := f.write(func() (runtime.Object, *watch.Broadcaster, watch.Event, error) {
		return f.removeLocked(namespace, name)
	})
	return err
}

// write runs one checked change under publishMu and lock, then sends its
// event to the watches.
func (f *FakeControllerSource) write(do func() (runtime.Object, *watch.Broadcaster, watch.Event, error)) (runtime.Object, error) {
	f.publishMu.Lock()
	defer f.publishMu.Unlock()
	f.lock.Lock()
	out, b, e, err := do()
	f.lock.Unlock()
	if err != nil {
		return nil, err
	}
	_ = b.Action(e.Type, e.Object)
	return out, nil
}

// Tx makes the changes of an Expire call. Its methods are the source's; it
// is valid only during that call.
type Tx struct{ f *FakeControllerSource }

// Get is FakeControllerSource.Get inside Expire.
func (tx Tx) Get(namespace, name string) (runtime.Object, bool) {
	return tx.f.getLocked(namespace, name)
}

// Create is FakeControllerSource.Create inside Expire.
func (tx Tx) Create(obj runtime.Object) (runtime.Object, error) {
	out, _, _, err := tx.f.createLocked(obj)
	return out, err
}

// Update is FakeControllerSource.Update inside Expire.
func (tx Tx) Update(obj runtime.Object) (runtime.Object, error) {
	out, _, _, err := tx.f.updateLocked(obj)
	return out, err
}

// Remove is FakeControllerSource.Remove inside Expire.
func (tx Tx) Remove(namespace, name string) error {
	_, _, _, err := tx.f.removeLocked(namespace, name)
	return err
}

// Expire simulates etcd compaction while consumers are disconnected: it
// ends every open watch with a 410 Expired ERROR event, applies changes
// (which therefore no watch sees; changes may be nil) and forgets the
// history. The compaction takes a resource version of its own, as writes
// to other resources would on a real server, so every resource version
// and continue token handed out before is now too old: a consumer must
// list again, and only that list shows what changes did. Expire returns
// changes' error, wrapped; the changes made before it are kept.
func (f *FakeControllerSource) Expire(changes func(Tx) error) error {
	f.publishMu.Lock()
	defer f.publishMu.Unlock()
	f.lock.Lock()
	if f.shutDown {
		f.lock.Unlock()
		return errShutDown
	}
	old := f.Broadcaster
	f.Broadcaster = newBroadcaster()
	n := f.forgetWatchesLocked()
	f.lock.Unlock()
	f.stats.watchesEnded.Add(int64(n))
	f.stats.gone.Add(int64(n))
	gone := apierrors.NewResourceExpired("too old resource version: the history was compacted").ErrStatus
	_ = old.Action(watch.Error, &gone)
	old.Shutdown()

	// No watch can open until publishMu is released, so the changes go to
	// an empty broadcaster: nobody sees them.
	f.lock.Lock()
	defer f.lock.Unlock()
	var err error
	if changes != nil {
		err = changes(Tx{f})
	}
	f.lastRV++
	clear(f.changes)
	f.changes = nil
	if err != nil {
		return fmt.Errorf("changes while expiring: %w", err)
	}
	return nil
}

// getLocked is Get. Caller holds lock, in either mode.
func (f *FakeControllerSource) getLocked(namespace, name string) (runtime.Object, bool) {
	key, ok := f.byName[types.NamespacedName{Namespace: namespace, Name: name}]
	if !ok {
		return nil, false
	}
	return f.Items[key].DeepCopyObject(), true
}

// createLocked is Create's change. Caller holds publishMu, and lock for
// writing.
func (f *FakeControllerSource) createLocked(obj runtime.Object) (runtime.Object, *watch.Broadcaster, watch.Event, error) {
	obj = obj.DeepCopyObject()
	m, err := f.usableObjectLocked(obj)
	if err != nil {
		return nil, nil, watch.Event{}, err
	}
	name := types.NamespacedName{Namespace: m.GetNamespace(), Name: m.GetName()}
	if name.Name == "" {
		return nil, nil, watch.Event{}, apierrors.NewBadRequest(fmt.Sprintf("creating a %s: the name is required", resourceOf(obj).Resource))
	}
	if _, ok := f.byName[name]; ok {
		return nil, nil, watch.Event{}, apierrors.NewAlreadyExists(resourceOf(obj), name.String())
	}
	if m.GetUID() == "" {
		m.SetUID(types.UID("uid-" + strconv.Itoa(f.lastRV+1)))
	}
	return f.recordChecked(watch.Added, obj)
}

// updateLocked is Update's change. Caller holds publishMu, and lock for
// writing.
func (f *FakeControllerSource) updateLocked(obj runtime.Object) (runtime.Object, *watch.Broadcaster, watch.Event, error) {
	obj = obj.DeepCopyObject()
	m, err := f.usableObjectLocked(obj)
	if err != nil {
		return nil, nil, watch.Event{}, err
	}
	name := types.NamespacedName{Namespace: m.GetNamespace(), Name: m.GetName()}
	key, ok := f.byName[name]
	if !ok {
		return nil, nil, watch.Event{}, apierrors.NewNotFound(resourceOf(obj), name.String())
	}
	stored, err := meta.Accessor(f.Items[key])
	if err != nil {
		return nil, nil, watch.Event{}, err
	}
	if rv := m.GetResourceVersion(); rv != "" && rv != stored.GetResourceVersion() {
		return nil, nil, watch.Event{}, apierrors.NewConflict(resourceOf(obj), name.String(),
			fmt.Errorf("resource version %s is not the stored %s", rv, stored.GetResourceVersion()))
	}
	m.SetUID(key.uid)
	return f.recordChecked(watch.Modified, obj)
}

// removeLocked is Remove's change. Caller holds publishMu, and lock for
// writing.
func (f *FakeControllerSource) removeLocked(namespace, name string) (runtime.Object, *watch.Broadcaster, watch.Event, error) {
	if err := f.usableLocked(); err != nil {
		return nil, nil, watch.Event{}, err
	}
	nn := types.NamespacedName{Namespace: namespace, Name: name}
	key, ok := f.byName[nn]
	if !ok {
		gr := schema.GroupResource{}
		if f.example != nil {
			gr = resourceOf(f.example)
		}
		return nil, nil, watch.Event{}, apierrors.NewNotFound(gr, nn.String())
	}
	return f.recordChecked(watch.Deleted, f.Items[key].DeepCopyObject())
}

// usableObjectLocked returns obj's metadata if the source can serve
// requests and obj has metadata. Caller holds lock, in either mode.
func (f *FakeControllerSource) usableObjectLocked(obj runtime.Object) (metav1.Object, error) {
	if err := f.usableLocked(); err != nil {
		return nil, err
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("%T has no object metadata: %v", obj, err))
	}
	return m, nil
}

// recordChecked records a change whose checks passed and returns a copy of
// the stored object. Caller holds publishMu, and lock for writing.
func (f *FakeControllerSource) recordChecked(t watch.EventType, obj runtime.Object) (runtime.Object, *watch.Broadcaster, watch.Event, error) {
	b, e, ok := f.recordLocked(watch.Event{Type: t, Object: obj})
	if !ok {
		return nil, nil, watch.Event{}, errShutDown
	}
	return obj.DeepCopyObject(), b, e, nil
}

// resourceOf names obj's resource in API errors, the way kube-apiserver
// would for a built-in type: its kind in lower case and plural ("pods").
func resourceOf(obj runtime.Object) schema.GroupResource {
	gvk := obj.GetObjectKind().GroupVersionKind()
	kind := gvk.Kind
	if kind == "" {
		t := reflect.TypeOf(obj)
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		kind = t.Name()
	}
	return schema.GroupResource{Group: gvk.Group, Resource: strings.ToLower(kind) + "s"}
}
