package clientgo

import (
	toolscache "k8s.io/client-go/tools/cache"

	kcache "github.com/kcache/cache"
)

// indexer presents a kcache Indexer as client-go's Indexer. It holds no
// state of its own: every call goes to the kcache indexer, which keeps the
// objects; nothing is copied.
//
// Calls that take an object only to find its key (Get, Delete) accept
// client-go's DeletedFinalStateUnknown and ExplicitKey, which kcache's key
// function would not recognise, and translate them. Add, Update and Replace
// store what they are given, as client-go's store does; since the key
// function is kcache's, a client-go tombstone handed to them is refused
// with a KeyError instead of being stored under its key (storing tombstones
// has no use in an informer's cache).
type indexer struct {
	kc kcache.Indexer
}

var _ toolscache.Indexer = (*indexer)(nil)

// Add inserts or replaces obj.
func (i *indexer) Add(obj interface{}) error { return i.kc.Add(obj) }

// Update inserts or replaces obj.
func (i *indexer) Update(obj interface{}) error { return i.kc.Update(obj) }

// Delete removes obj, which may be a client-go tombstone or ExplicitKey.
func (i *indexer) Delete(obj interface{}) error { return i.kc.Delete(keyInput(obj)) }

// List returns every cached object, in no particular order.
func (i *indexer) List() []interface{} { return i.kc.List() }

// ListKeys returns the key of every cached object.
func (i *indexer) ListKeys() []string { return i.kc.ListKeys() }

// LastStoreSyncResourceVersion returns the resource version the cache was
// last synced to.
func (i *indexer) LastStoreSyncResourceVersion() string { return i.kc.LastStoreSyncResourceVersion() }

// Bookmark records rv as the cache's resource version.
func (i *indexer) Bookmark(rv string) { i.kc.Bookmark(rv) }

// Get returns the cached object with obj's key; obj may be a client-go
// tombstone or ExplicitKey.
func (i *indexer) Get(obj interface{}) (item interface{}, exists bool, err error) {
	return i.kc.Get(keyInput(obj))
}

// GetByKey returns the cached object with key.
func (i *indexer) GetByKey(key string) (item interface{}, exists bool, err error) {
	return i.kc.GetByKey(key)
}

// Replace swaps the whole content for list.
func (i *indexer) Replace(list []interface{}, resourceVersion string) error {
	return i.kc.Replace(list, resourceVersion)
}

// Resync does what the kcache indexer's Resync does: nothing to a plain
// store.
func (i *indexer) Resync() error { return i.kc.Resync() }

// Index returns the objects sharing an indexed value with obj.
func (i *indexer) Index(indexName string, obj interface{}) ([]interface{}, error) {
	return i.kc.Index(indexName, obj)
}

// IndexKeys returns the keys of the objects indexed under indexedValue.
func (i *indexer) IndexKeys(indexName, indexedValue string) ([]string, error) {
	return i.kc.IndexKeys(indexName, indexedValue)
}

// ListIndexFuncValues returns every value of the named index.
func (i *indexer) ListIndexFuncValues(indexName string) []string {
	return i.kc.ListIndexFuncValues(indexName)
}

// ByIndex returns the objects indexed under indexedValue.
func (i *indexer) ByIndex(indexName, indexedValue string) ([]interface{}, error) {
	return i.kc.ByIndex(indexName, indexedValue)
}

// GetIndexers returns the index functions, as a new client-go map.
func (i *indexer) GetIndexers() toolscache.Indexers { return toClientGoIndexers(i.kc.GetIndexers()) }

// AddIndexers adds index functions.
func (i *indexer) AddIndexers(newIndexers toolscache.Indexers) error {
	return i.kc.AddIndexers(toKcacheIndexers(newIndexers))
}

// keyInput translates client-go's key-carrying types to kcache's, so that
// kcache's key function finds the key client-go's would. Anything else is
// returned unchanged.
func keyInput(obj interface{}) interface{} {
	switch o := obj.(type) {
	case toolscache.DeletedFinalStateUnknown:
		return kcache.DeletedFinalStateUnknown(o)
	case toolscache.ExplicitKey:
		return kcache.ExplicitKey(o)
	}
	return obj
}

// toClientGoObject translates kcache's tombstone into client-go's, so that
// a type switch on toolscache.DeletedFinalStateUnknown in user code
// matches. Anything else is returned unchanged.
func toClientGoObject(obj interface{}) interface{} {
	if t, ok := obj.(kcache.DeletedFinalStateUnknown); ok {
		return toolscache.DeletedFinalStateUnknown(t)
	}
	return obj
}

// toKcacheIndexers converts an index map; nil stays nil.
func toKcacheIndexers(in toolscache.Indexers) kcache.Indexers {
	if in == nil {
		return nil
	}
	out := make(kcache.Indexers, len(in))
	for name, f := range in {
		out[name] = kcache.IndexFunc(f)
	}
	return out
}

// toClientGoIndexers converts an index map; nil stays nil.
func toClientGoIndexers(in kcache.Indexers) toolscache.Indexers {
	if in == nil {
		return nil
	}
	out := make(toolscache.Indexers, len(in))
	for name, f := range in {
		out[name] = toolscache.IndexFunc(f)
	}
	return out
}
