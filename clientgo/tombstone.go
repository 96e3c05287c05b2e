package clientgo

import (
	toolscache "k8s.io/client-go/tools/cache"

	kcache "github.com/kcache/cache"
)

// KcacheTombstone returns obj with a client-go tombstone
// (k8s.io/client-go/tools/cache.DeletedFinalStateUnknown) turned into
// kcache's DeletedFinalStateUnknown, with the same Key and Obj; anything
// else, kcache's tombstone included, is returned unchanged.
//
// It is for programs that changed their import to kcache and still run
// informers client-go builds (generated factories, dynamic or metadata
// informers) beside kcache's: the two tombstones are distinct types, so a
// delete handler whose type switch, type assertion or
// DeletionHandlingMetaNamespaceKeyFunc is kcache's does not recognise
// client-go's tombstone. One line at the top of such a handler,
//
//	obj = clientgo.KcacheTombstone(obj)
//
// makes the rest of it see kcache's type whichever informer delivered the
// deletion. Informers built by this package, and every informer of a
// client-go overlay, deliver one type only and need no such line.
func KcacheTombstone(obj interface{}) interface{} {
	if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		return kcache.DeletedFinalStateUnknown(t)
	}
	return obj
}
