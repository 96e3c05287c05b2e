package cache

import (
	"errors"
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/api/meta"
)

// Indexer is a Store with secondary indexes: named functions that map each
// object to zero or more values, so objects can be looked up by value.
type Indexer interface {
	Store
	// Index returns the objects that share at least one value of the named
	// index with obj, each once.
	Index(indexName string, obj interface{}) ([]interface{}, error)
	// IndexKeys returns the keys of the objects with indexedValue in the
	// named index.
	IndexKeys(indexName, indexedValue string) ([]string, error)
	// ListIndexFuncValues returns every value the named index holds.
	ListIndexFuncValues(indexName string) []string
	// ByIndex returns the objects with indexedValue in the named index.
	ByIndex(indexName, indexedValue string) ([]interface{}, error)
	// GetIndexers returns the index functions by name. Read-only.
	GetIndexers() Indexers

	// AddIndexers adds index functions and indexes the objects already
	// stored. A name that already exists is an error.
	AddIndexers(newIndexers Indexers) error
}

// IndexFunc computes the values an object is indexed under.
type IndexFunc func(obj interface{}) ([]string, error)

// NamespaceIndex is the conventional name of the index by namespace.
const NamespaceIndex string = "namespace"

// MetaNamespaceIndexFunc indexes an object by its namespace.
func MetaNamespaceIndexFunc(obj interface{}) ([]string, error) {
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return []string{""}, fmt.Errorf("object has no meta: %w", err)
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

// TypedIndexer is an Indexer whose objects are all of type T.
type TypedIndexer[T any] interface {
	Indexer

	// TypedIndex is Index with typed objects.
	TypedIndex(indexName string, obj T) ([]T, error)
	// ByTypedIndex is ByIndex with typed objects.
	ByTypedIndex(indexName, indexedValue string) ([]T, error)
	// AddTypedIndexers is AddIndexers with typed functions.
	AddTypedIndexers(newIndexers TypedIndexers[T]) error
}

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
		f.fns = append(f.fns, f.byName[name])
	}
	return f
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
		sort.Strings(taken)
		return nil, fmt.Errorf("indexer conflict: %v already exist", taken)
	}
	return newIndexFuncs(merged), nil
}

// indexValues is what every function of one indexFuncs said of one object,
// aligned with its names.
type indexValues struct {
	funcs  *indexFuncs
	values [][]string
	// errs is nil when every function succeeded.
	errs []error
}

// computeIndexValues runs every function of f on obj. It needs no lock:
// f is immutable. A nil obj has no values.
func computeIndexValues(f *indexFuncs, obj interface{}) indexValues {
	out := indexValues{funcs: f}
	if obj == nil || len(f.fns) == 0 {
		return out
	}
	out.values = make([][]string, len(f.fns))
	for i, fn := range f.fns {
		vals, err := callIndexFunc(fn, obj)
		if err != nil {
			if out.errs == nil {
				out.errs = make([]error, len(f.fns))
			}
			out.errs[i] = err
			continue
		}
		out.values[i] = vals
	}
	return out
}

// at returns the values of the i-th function, or nil when it failed or the
// object was nil.
func (v *indexValues) at(i int) []string {
	if v.values == nil || (v.errs != nil && v.errs[i] != nil) {
		return nil
	}
	return v.values[i]
}

// err joins every failure, naming the index and the key, as an
// indexFailure; nil if none.
func (v *indexValues) err(key string) error {
	var all []error
	for i, e := range v.errs {
		if e != nil {
			all = append(all, fmt.Errorf("index %q of key %q: %w", v.funcs.names[i], key, e))
		}
	}
	if len(all) == 0 {
		return nil
	}
	return indexFailure{errors.Join(all...)}
}

// indexFailure is the error of a write that stored its object but left it
// out of the indexes whose function failed. The write happened: callers
// that notify others about changes must still do so.
type indexFailure struct{ err error }

func (f indexFailure) Error() string {
	return "object stored without some index values: " + f.err.Error()
}
func (f indexFailure) Unwrap() error { return f.err }

// callIndexFunc runs user code and turns a panic into an error.
func callIndexFunc(fn IndexFunc, obj interface{}) (vals []string, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("index function panicked: %v", r)
		}
	}()
	return fn(obj)
}

// indexSet is the lock-free core of a store's secondary indexes: which keys
// have which value in each index. It does no locking; the owning store
// holds its lock for reading around lookups and for writing around changes.
//
// Invariant: for every function of funcs, a key is filed under value v of
// that function's index exactly when the function returned v for the object
// stored under the key when it was stored. An object whose function failed
// is absent from that one index.
type indexSet struct {
	funcs   *indexFuncs
	indices Indices
}

// newIndexSet builds an indexSet over indexers; indices, if not nil, is
// taken over and emptied so that it only ever holds what the invariant says.
func newIndexSet(indexers Indexers, indices Indices) *indexSet {
	if indices == nil {
		indices = Indices{}
	}
	for name := range indices {
		delete(indices, name)
	}
	return &indexSet{funcs: newIndexFuncs(indexers), indices: indices}
}

// move re-files key from the values of oldObj (the object stored under key
// until now, nil if none) to next (the values of its new object, nil when
// it is deleted). next must have been computed with s.funcs. Old values are
// recomputed; when that fails the key is removed from the whole index.
func (s *indexSet) move(key string, oldObj interface{}, next indexValues) {
	for i, name := range s.funcs.names {
		idx := s.indices[name]
		if idx == nil {
			idx = index{}
			s.indices[name] = idx
		}
		newVals := next.at(i)
		if oldObj == nil {
			idx.addAll(newVals, key)
			continue
		}
		oldVals, err := callIndexFunc(s.funcs.fns[i], oldObj)
		switch {
		case err != nil:
			idx.removeEverywhere(key)
		case sameValues(oldVals, newVals):
			continue
		default:
			for _, v := range oldVals {
				idx.remove(v, key)
			}
		}
		idx.addAll(newVals, key)
	}
}

// fileAll adds key under the values of one new index; used when indexers
// are added to a store that already holds objects.
func (s *indexSet) fileAll(name string, key string, vals []string) {
	idx := s.indices[name]
	if idx == nil {
		idx = index{}
		s.indices[name] = idx
	}
	idx.addAll(vals, key)
}

// sameValues reports whether a and b list the same values in the same
// order: the cheap test that lets most updates skip index maintenance.
func sameValues(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// reset empties every index.
func (s *indexSet) reset() {
	for name := range s.indices {
		delete(s.indices, name)
	}
}

// keysForValues returns the keys filed under any of vals in the named
// index, each once.
func (s *indexSet) keysForValues(indexName string, vals []string) []string {
	idx := s.indices[indexName]
	seen := keySet{}
	var keys []string
	for _, v := range vals {
		for key := range idx[v] {
			if _, dup := seen[key]; !dup {
				seen[key] = struct{}{}
				keys = append(keys, key)
			}
		}
	}
	return keys
}

// keysForValue returns the keys filed under value in the named index. The
// set is shared: use it only while holding the lock and never modify it.
func (s *indexSet) keysForValue(indexName, value string) (keySet, error) {
	if s.funcs.byName[indexName] == nil {
		return nil, fmt.Errorf("index %q does not exist", indexName)
	}
	return s.indices[indexName][value], nil
}

// valuesOf lists every value the named index holds.
func (s *indexSet) valuesOf(indexName string) []string {
	idx := s.indices[indexName]
	out := make([]string, 0, len(idx))
	for v := range idx {
		out = append(out, v)
	}
	return out
}

// addAll files key under every value in vals.
func (idx index) addAll(vals []string, key string) {
	for _, v := range vals {
		set := idx[v]
		if set == nil {
			set = keySet{}
			idx[v] = set
		}
		set[key] = struct{}{}
	}
}

// remove unfiles key from value, dropping the value when no key is left so
// values of deleted objects do not pile up.
func (idx index) remove(value, key string) {
	set := idx[value]
	if set == nil {
		return
	}
	delete(set, key)
	if len(set) == 0 {
		delete(idx, value)
	}
}

// removeEverywhere unfiles key from every value: the slow path for an old
// object whose index function no longer succeeds.
func (idx index) removeEverywhere(key string) {
	for value := range idx {
		idx.remove(value, key)
	}
}

// list copies the set's keys into a new slice.
func (set keySet) list() []string {
	out := make([]string, 0, len(set))
	for key := range set {
		out = append(out, key)
	}
	return out
}
