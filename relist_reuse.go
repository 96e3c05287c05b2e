package cache

import (
	"fmt"
)

// This file is how a Reflector takes in the objects of a list (a paginated
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
		in := listIntake{prepare: p.prepareListed, replace: p.replaceTransformed, transform: transform}
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
