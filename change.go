package cache

import "k8s.io/apimachinery/pkg/api/meta"

// This file is the seam between the controller and whatever it reports to.
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
	// relisted marks the update of an object found again by a relist
	// that replaced the store's content at once (ReplacedAll).
	relisted bool
}

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
