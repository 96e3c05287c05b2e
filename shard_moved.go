package cache

import "k8s.io/apimachinery/pkg/runtime"

// This file is where an informer on a ShardedListerWatcher tells a move from
// a deletion. When the ListerWatcher moves to another shard, the relist
// drops the objects that left it, and the queue reports each as deleted
// with a DeletedFinalStateUnknown, as for any object a relist no longer
// finds. The informer hands those to its handlers as MovedOutOfShard
// instead, so that a controller never runs deletion logic for an object
// that lives on in another replica's shard.

// shardMoveSink stands between the controller and the sink of an informer
// whose ListerWatcher is a ShardedListerWatcher. It turns the tombstones of
// objects outside the shard held now into MovedOutOfShard, and, in the
// first replacement after a move, leaves out the updates of objects that
// stayed unchanged in the shard.
//
// Only the controller's goroutine calls it, so its field needs no lock.
type shardMoveSink struct {
	next  changeSink
	shard *ShardedListerWatcher
	// handledGen is the shard generation whose relist the sink has seen
	// replace the store's content.
	handledGen uint64
}

// newShardMoveSink returns next wrapped for lw's shard moves, or next itself
// when lw is not a ShardedListerWatcher.
func newShardMoveSink(next changeSink, lw ListerWatcher) changeSink {
	shard, ok := lw.(*ShardedListerWatcher)
	if !ok {
		return next
	}
	return &shardMoveSink{next: next, shard: shard, handledGen: shard.listedGen.Load()}
}

func (k *shardMoveSink) notify(n notification) {
	switch n.kind {
	case notifyDelete:
		n.oldObj = k.movedOrDeleted(n.oldObj)
	case notifyUpdate:
		if n.relist == relistedAll && k.handledGen < k.shard.listedGen.Load() && sameResourceVersion(n.oldObj, n.newObj) {
			return
		}
	}
	k.next.notify(n)
}

// movedOrDeleted returns a tombstone whose object lies outside the shard
// held now as a MovedOutOfShard, and anything else as it is.
func (k *shardMoveSink) movedOrDeleted(obj interface{}) interface{} {
	t, ok := obj.(DeletedFinalStateUnknown)
	if !ok {
		return obj
	}
	last, ok := t.Obj.(runtime.Object)
	if !ok || last == nil || isNilPointer(last) || k.shard.inShard(last) {
		return obj
	}
	return MovedOutOfShard(t)
}

// replaced is told when a relist has replaced the store's content.
func (k *shardMoveSink) replaced() { k.handledGen = k.shard.listedGen.Load() }

// replaceObserver is a changeSink that wants to know when a relist has
// replaced the store's content.
type replaceObserver interface {
	replaced()
}

// MovedOutOfShard is what a sharded informer's delete handlers get, instead
// of a DeletedFinalStateUnknown, for an object that left the informer's
// shard when its ShardedListerWatcher moved (SetShard): the object was not
// deleted, another replica holds it now. Key is the object's store key and
// Obj the last state this informer knew.
//
// It is deliberately not a DeletedFinalStateUnknown: code that handles
// deletions (and DeletionHandlingMetaNamespaceKeyFunc) does not take it for
// one. Typed handlers get it as a DeletedObject whose FinalStateUnknown.Obj
// is the MovedOutOfShard; IsMovedOutOfShard recognises both forms.
type MovedOutOfShard struct {
	Key string
	Obj interface{}
}

// IsMovedOutOfShard reports whether obj, as given to a delete handler,
// says the object moved to another shard rather than being deleted: a
// MovedOutOfShard, or a DeletedFinalStateUnknown (or a pointer to one, as
// in a typed DeletedObject's FinalStateUnknown) that carries one.
func IsMovedOutOfShard(obj interface{}) bool {
	switch o := obj.(type) {
	case MovedOutOfShard, *MovedOutOfShard:
		return true
	case DeletedFinalStateUnknown:
		_, moved := o.Obj.(MovedOutOfShard)
		return moved
	case *DeletedFinalStateUnknown:
		if o == nil {
			return false
		}
		_, moved := o.Obj.(MovedOutOfShard)
		return moved
	}
	return false
}
