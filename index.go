package cache

import (
	"fmt"
	"reflect"
	"slices"
	"sort"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// fnValues is what one index function said of one object. A single value
// is held inline, so the namespace index costs no allocation.
type fnValues struct {
	// one is the value when many is nil and count is 1.
	one string
	// many holds the values when the function returned several; it is the
	// function's own slice, never modified.
	many  []string
	count int
	// err is the function's failure; a write panics with it (see
	// indexValues.failure), a query returns it.
	err error
	// panicked is what the function panicked with while a write computed
	// it; the write panics with it again once the object is stored.
	panicked interface{}
}

// failed reports whether the function failed or panicked.
func (v *fnValues) failed() bool { return v.err != nil || v.panicked != nil }

// at returns the i-th value, 0 <= i < count.
func (v *fnValues) at(i int) string {
	if v.many != nil {
		return v.many[i]
	}
	return v.one
}

// setAll records the values a function returned.
func (v *fnValues) setAll(vals []string) {
	switch len(vals) {
	case 0:
	case 1:
		v.one, v.count = vals[0], 1
	default:
		v.many, v.count = vals, len(vals)
	}
}

// indexValues is what every function of one indexFuncs said of one object,
// aligned with its names. The slice may live in a caller's buffer.
type indexValues struct {
	funcs  *indexFuncs
	values []fnValues
}

// computeIndexValues runs every function of f on obj, appending to buf
// (which may be a caller's stack array) so a write needs no allocation of
// its own. It needs no lock: f is immutable. A nil obj has no values.
func computeIndexValues(f *indexFuncs, obj interface{}, buf []fnValues) indexValues {
	out := indexValues{funcs: f, values: buf[:0]}
	if obj == nil {
		return out
	}
	for i, fn := range f.fns {
		out.values = append(out.values, runIndexFuncForWrite(f, i, fn, obj))
	}
	return out
}

// runIndexFuncForWrite is runIndexFunc for a write: a panic of the function
// is kept in the result, so that the write can store the object first and
// panic with it afterwards, as client-go's store does.
func runIndexFuncForWrite(f *indexFuncs, i int, fn IndexFunc, obj interface{}) (v fnValues) {
	defer func() {
		if p := recover(); p != nil {
			v = fnValues{panicked: p}
		}
	}()
	return runIndexFunc(f, i, fn, obj)
}

// runIndexFunc runs the i-th function of f on obj. A failure leaves no
// value, only the error.
func runIndexFunc(f *indexFuncs, i int, fn IndexFunc, obj interface{}) fnValues {
	if f.byNamespace[i] {
		if m, ok := obj.(metav1.Object); ok {
			ns, err := namespaceOf(m)
			if err != nil {
				return fnValues{err: err}
			}
			return fnValues{one: ns, count: 1}
		}
	}
	vals, err := callIndexFunc(fn, obj)
	if err != nil {
		return fnValues{err: err}
	}
	var v fnValues
	v.setAll(vals)
	return v
}

// namespaceOf is MetaNamespaceIndexFunc's single value without the slice:
// the store's fast path for the namespace index. A typed nil object panics
// as it does through the function.
func namespaceOf(m metav1.Object) (ns string, err error) {
	return m.GetNamespace(), nil
}

// of returns what the i-th function said; an object without values (nil,
// or computed for a nil object) has none.
func (v *indexValues) of(i int) *fnValues {
	if i >= len(v.values) {
		return &noValues
	}
	return &v.values[i]
}

// noValues is the empty result.
var noValues fnValues

// failure is what a write panics with, as client-go's store does, when an
// index function failed on the object stored under key: the function's own
// panic, or an error naming the key and the failing index. It is nil when
// every function succeeded. The first failing function decides. A store
// cannot file an object where it cannot index it, and its write methods
// have no error to return.
func (v *indexValues) failure(key string) interface{} {
	for i := range v.values {
		if p := v.values[i].panicked; p != nil {
			return p
		}
		if e := v.values[i].err; e != nil {
			return fmt.Errorf("unable to calculate an index entry for key %q on index %q: %v", key, v.funcs.names[i], e)
		}
	}
	return nil
}

// cleared is v with no values at all: filing under it files a slot
// nowhere.
func (v indexValues) cleared() indexValues { return indexValues{funcs: v.funcs} }

// unfilingFailed is v with the results of the failed functions emptied:
// filing under it takes a slot out of those indexes instead of leaving it
// where it was.
func (v indexValues) unfilingFailed() indexValues {
	out := indexValues{funcs: v.funcs, values: slices.Clone(v.values)}
	for i := range out.values {
		if out.values[i].failed() {
			out.values[i] = fnValues{}
		}
	}
	return out
}

// callIndexFunc runs user code. A panic is not recovered: it reaches the
// goroutine that wrote or queried the store, as in client-go.
func callIndexFunc(fn IndexFunc, obj interface{}) (vals []string, err error) {
	return fn(obj)
}
