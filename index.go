package cache

import (
	"fmt"
	"reflect"
	"sort"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/sets"
)

// IndexFunc computes the values an object is indexed under.
type IndexFunc func(obj interface{}) ([]string, error)

// NamespaceIndex is the conventional name of the index by namespace.
const NamespaceIndex string = "namespace"

// MetaNamespaceIndexFunc indexes an object by its namespace.
func MetaNamespaceIndexFunc(obj interface{}) ([]string, error) {
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return []string{""}, fmt.Errorf("object has no meta: %v", err)
	}
	return []string{accessor.GetNamespace()}, nil
}

// Indexers maps index names to index functions.
type Indexers map[string]IndexFunc

// Indices maps index names to the content of each index.
type Indices map[string]index

// index maps an index value to the keys of the objects that have it.
type index map[string]keySet

// keySet is a set of store keys.
type keySet map[string]struct{}

// TypedIndexFunc is an IndexFunc over a known object type.
type TypedIndexFunc[T any] func(obj T) ([]string, error)

// TypedIndexers maps index names to typed index functions.
type TypedIndexers[T any] map[string]TypedIndexFunc[T]

// TypedIndexerFuncToIndexerFunc adapts a typed index function to an
// IndexFunc. An object that is not a T is an error, not a panic.
func TypedIndexerFuncToIndexerFunc[T any](indexer TypedIndexFunc[T]) IndexFunc {
	return func(obj interface{}) ([]string, error) {
		typed, ok := obj.(T)
		if !ok {
			var want T
			return nil, fmt.Errorf("typed index function expects %T, got %T", want, obj)
		}
		return indexer(typed)
	}
}

// TypedIndexersToIndexers adapts every typed index function.
func TypedIndexersToIndexers[T any](indexers TypedIndexers[T]) Indexers {
	out := make(Indexers, len(indexers))
	for name, fn := range indexers {
		out[name] = TypedIndexerFuncToIndexerFunc(fn)
	}
	return out
}

// indexFuncs is an immutable list of index functions. A store swaps in a new
// one when indexers are added, so a list read once stays valid and index
// values can be computed without holding the store's lock.
type indexFuncs struct {
	// byName is the map GetIndexers returns; it is never modified.
	byName Indexers
	// names and fns are byName in a fixed order.
	names []string
	fns   []IndexFunc
	// byNamespace marks the functions that are MetaNamespaceIndexFunc
	// itself, which computeIndexValues evaluates without allocating.
	byNamespace []bool
}

// newIndexFuncs copies indexers into a fresh immutable list.
func newIndexFuncs(indexers Indexers) *indexFuncs {
	f := &indexFuncs{byName: make(Indexers, len(indexers))}
	for name, fn := range indexers {
		f.byName[name] = fn
		f.names = append(f.names, name)
	}
	sort.Strings(f.names)
	for _, name := range f.names {
		fn := f.byName[name]
		f.fns = append(f.fns, fn)
		f.byNamespace = append(f.byNamespace, isMetaNamespaceIndexFunc(fn))
	}
	return f
}

// metaNamespaceIndexFuncPC identifies MetaNamespaceIndexFunc among the
// functions a store is given.
var metaNamespaceIndexFuncPC = reflect.ValueOf(MetaNamespaceIndexFunc).Pointer()

// isMetaNamespaceIndexFunc reports whether fn is MetaNamespaceIndexFunc.
func isMetaNamespaceIndexFunc(fn IndexFunc) bool {
	return fn != nil && reflect.ValueOf(fn).Pointer() == metaNamespaceIndexFuncPC
}

// index returns the position of the named function, or -1.
func (f *indexFuncs) index(name string) int {
	for i, n := range f.names {
		if n == name {
			return i
		}
	}
	return -1
}

// with returns a new list holding f's functions and extra ones, or an
// error naming every extra name that is already taken.
func (f *indexFuncs) with(extra Indexers) (*indexFuncs, error) {
	var taken []string
	merged := make(Indexers, len(f.byName)+len(extra))
	for name, fn := range f.byName {
		merged[name] = fn
	}
	for name, fn := range extra {
		if _, ok := merged[name]; ok {
			taken = append(taken, name)
		}
		merged[name] = fn
	}
	if len(taken) > 0 {
		// client-go prints the set of taken names, formatted as a map.
		return nil, fmt.Errorf("indexer conflict: %v", sets.New(taken...))
	}
	return newIndexFuncs(merged), nil
}
