package cache

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"sync/atomic"

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

// indexSet is the lock-free core of a store's secondary indexes: one
// indexColumn per index function, filing slot numbers of a slotTable. It
// does no locking: the owning store holds its lock for reading around
// lookups and for writing around changes (methods that change it say so).
//
// Invariant: for every function of funcs, slot id is filed under value v
// of that function's index exactly when the function returned v (once,
// however often it returned it) for the object in the slot when it was
// stored. An object whose function failed is absent from that one index.
type indexSet struct {
	funcs *indexFuncs
	// cols is aligned with funcs.names.
	cols []*indexColumn
}

func newIndexSet(funcs *indexFuncs) *indexSet {
	s := &indexSet{funcs: funcs}
	for range funcs.names {
		s.cols = append(s.cols, newIndexColumn())
	}
	return s
}

// column returns the named index, or nil if there is none.
func (s *indexSet) column(name string) *indexColumn {
	if i := s.funcs.index(name); i >= 0 {
		return s.cols[i]
	}
	return nil
}

// fileNew files a slot just added to the end of the table under vals,
// which were computed with s.funcs. Needs the write lock.
func (s *indexSet) fileNew(id int32, vals *indexValues) {
	for i, col := range s.cols {
		col.first = append(col.first, link{bucket: unfiled})
		col.file(id, vals.of(i))
	}
}

// reserve makes room for n slots in all in every index.
func (s *indexSet) reserve(n int) {
	for _, col := range s.cols {
		if n > cap(col.first) {
			col.first = append(make([]link, 0, n), col.first...)
		}
	}
}

// refile moves slot id from the values it is filed under to vals, touching
// only the indexes whose values changed. An index whose function failed
// keeps the slot where it was, as client-go's update leaves the failing
// index untouched. Needs the write lock.
func (s *indexSet) refile(id int32, vals *indexValues) {
	for i, col := range s.cols {
		v := vals.of(i)
		if v.failed() || col.filedAs(id, v) {
			continue
		}
		col.unfile(id)
		col.file(id, v)
	}
}

// removeSlot unfiles slot id, which the table removed, and renumbers the
// slot the table moved into its place (movedFrom, or noSlot). Needs the
// write lock.
func (s *indexSet) removeSlot(id, movedFrom int32) {
	for _, col := range s.cols {
		col.unfile(id)
		if movedFrom != noSlot {
			col.renumber(movedFrom, id)
		}
		col.first = col.first[:len(col.first)-1]
	}
}

// indexColumn is one index: buckets of slot numbers by value, and for
// every slot where it is filed, so that removing a slot or comparing its
// old values with new ones never calls the index function again.
type indexColumn struct {
	byValue map[string]int32
	// buckets is indexed by bucket number; nil entries are free numbers,
	// listed in freeBuckets.
	buckets     []*bucket
	freeBuckets []int32
	// first is, by slot number, where the slot's first value is filed.
	first []link
	// more holds the further filings of slots with several values.
	more map[int32][]link
}

// link says where a slot is filed: in which bucket, at which position.
type link struct{ bucket, pos int32 }

// unfiled is the bucket of a link that files nothing.
const unfiled int32 = -1

// bucket is the slots filed under one value, in no particular order.
type bucket struct {
	value   string
	members []int32
	// sorted caches the members' keys, sorted, for IndexKeys. Readers
	// fill it under the store's read lock; writers clear it when
	// membership changes.
	sorted atomic.Pointer[[]string]
}

func newIndexColumn() *indexColumn {
	return &indexColumn{byValue: map[string]int32{}}
}

// filedAs reports whether slot id is filed under exactly the values of v:
// the cheap test that lets most updates skip index maintenance.
func (c *indexColumn) filedAs(id int32, v *fnValues) bool {
	f := c.first[id]
	if f.bucket == unfiled {
		return v.count == 0
	}
	if v.count == 0 || c.buckets[f.bucket].value != v.at(0) {
		return false
	}
	more := c.more[id]
	if v.count == 1 {
		return more == nil
	}
	if v.count != len(more)+1 {
		return false
	}
	for i, l := range more {
		if c.buckets[l.bucket].value != v.at(i+1) {
			return false
		}
	}
	return true
}

// file files slot id, which is filed nowhere in this index, under every
// value of v, each once.
func (c *indexColumn) file(id int32, v *fnValues) {
	for i := 0; i < v.count; i++ {
		value := v.at(i)
		if i > 0 && repeats(v, i) {
			continue
		}
		l := c.link(id, value)
		if i == 0 {
			c.first[id] = l
			continue
		}
		if c.more == nil {
			c.more = map[int32][]link{}
		}
		c.more[id] = append(c.more[id], l)
	}
}

// repeats reports whether the i-th value of v also comes earlier.
func repeats(v *fnValues, i int) bool {
	return slices.Contains(v.many[:i], v.many[i])
}

// link appends slot id to the bucket of value, creating the bucket if
// needed, and returns where it went.
func (c *indexColumn) link(id int32, value string) link {
	b, ok := c.byValue[value]
	if !ok {
		b = c.newBucket(value)
	}
	bk := c.buckets[b]
	bk.members = append(bk.members, id)
	bk.forgetSorted()
	return link{bucket: b, pos: int32(len(bk.members) - 1)}
}

func (c *indexColumn) newBucket(value string) int32 {
	bk := &bucket{value: value}
	var b int32
	if n := len(c.freeBuckets); n > 0 {
		b = c.freeBuckets[n-1]
		c.freeBuckets = c.freeBuckets[:n-1]
		c.buckets[b] = bk
	} else {
		b = int32(len(c.buckets))
		c.buckets = append(c.buckets, bk)
	}
	c.byValue[value] = b
	return b
}

// unfile removes slot id from every bucket of this index.
func (c *indexColumn) unfile(id int32) {
	if f := c.first[id]; f.bucket != unfiled {
		c.unlink(f)
		c.first[id] = link{bucket: unfiled}
	}
	if more, ok := c.more[id]; ok {
		for _, l := range more {
			c.unlink(l)
		}
		delete(c.more, id)
	}
}

// unlink takes the member at l out of its bucket, moving the bucket's last
// member into the hole, and drops the bucket when it empties.
func (c *indexColumn) unlink(l link) {
	bk := c.buckets[l.bucket]
	last := int32(len(bk.members) - 1)
	if l.pos != last {
		moved := bk.members[last]
		bk.members[l.pos] = moved
		c.setPos(moved, l.bucket, l.pos)
	}
	bk.members = bk.members[:last]
	bk.forgetSorted()
	switch {
	case last == 0:
		c.dropBucket(l.bucket)
	case cap(bk.members) > 64 && len(bk.members) < cap(bk.members)/4:
		bk.members = slices.Clip(slices.Clone(bk.members))
	}
}

// setPos records that slot id now sits at pos in bucket b.
func (c *indexColumn) setPos(id, b, pos int32) {
	if c.first[id].bucket == b {
		c.first[id].pos = pos
		return
	}
	more := c.more[id]
	for i := range more {
		if more[i].bucket == b {
			more[i].pos = pos
			return
		}
	}
}

func (c *indexColumn) dropBucket(b int32) {
	delete(c.byValue, c.buckets[b].value)
	c.buckets[b] = nil
	c.freeBuckets = append(c.freeBuckets, b)
}

// bucketOf returns the bucket of value, or nil.
func (c *indexColumn) bucketOf(value string) *bucket {
	if b, ok := c.byValue[value]; ok {
		return c.buckets[b]
	}
	return nil
}

// values lists every value the index holds.
func (c *indexColumn) values() []string {
	out := make([]string, 0, len(c.byValue))
	for v := range c.byValue {
		out = append(out, v)
	}
	return out
}

// renumber moves the filings of slot from to slot to, whose own filings
// were removed, and leaves from filed nowhere.
func (c *indexColumn) renumber(from, to int32) {
	f := c.first[from]
	c.first[to], c.first[from] = f, link{bucket: unfiled}
	if f.bucket != unfiled {
		c.buckets[f.bucket].members[f.pos] = to
	}
	if more, ok := c.more[from]; ok {
		for _, l := range more {
			c.buckets[l.bucket].members[l.pos] = to
		}
		c.more[to] = more
		delete(c.more, from)
	}
}

// forgetSorted drops the cached sorted keys after a membership change.
// Needs the write lock.
func (bk *bucket) forgetSorted() {
	if bk.sorted.Load() != nil {
		bk.sorted.Store(nil)
	}
}

// sortedKeys returns the keys of the bucket's members, sorted, in a new
// slice. The sorted list is cached until membership changes. Needs the
// read lock.
func (bk *bucket) sortedKeys(tab *slotTable) []string {
	cached := bk.sorted.Load()
	if cached == nil {
		keys := make([]string, len(bk.members))
		for i, id := range bk.members {
			keys[i] = tab.keys[id]
		}
		slices.Sort(keys)
		bk.sorted.Store(&keys)
		cached = &keys
	}
	return slices.Clone(*cached)
}

// slotTable is the lock-free core of a store's primary map: the stored
// objects and their keys sit in two dense parallel arrays, and a map turns
// keys into slot numbers. Indexes file slot numbers, not keys, so reading
// an index bucket never goes back through the map, and List and ListKeys
// are one bulk copy of an array instead of a map iteration.
//
// The arrays stay dense: removing a slot moves the last one into the hole,
// and the caller renumbers that slot in its indexes. The table does no
// locking: the owning store holds its lock for reading around lookups and
// for writing around changes.
type slotTable struct {
	ids  map[string]int32
	keys []string
	objs []interface{}
	// idsPeak is the most keys ids has held since it was made: Go maps
	// never shrink, so ids is rebuilt when it has emptied well below it.
	idsPeak int
}

// noSlot is the slot number of no slot.
const noSlot int32 = -1

func newSlotTable() slotTable {
	return slotTable{ids: map[string]int32{}}
}

// len is the number of stored objects.
func (t *slotTable) len() int { return len(t.keys) }

// lookup returns key's slot.
func (t *slotTable) lookup(key string) (int32, bool) {
	id, ok := t.ids[key]
	return id, ok
}

// get returns the object of key.
func (t *slotTable) get(key string) (interface{}, bool) {
	id, ok := t.ids[key]
	if !ok {
		return nil, false
	}
	return t.objs[id], true
}

// insert puts obj under a key that has no slot yet and returns its slot,
// the last one.
func (t *slotTable) insert(key string, obj interface{}) int32 {
	id := int32(len(t.keys))
	t.keys = append(t.keys, key)
	t.objs = append(t.objs, obj)
	t.ids[key] = id
	t.idsPeak = max(t.idsPeak, len(t.ids))
	return id
}

// reserve makes room for n slots in all, so a bulk insert grows the
// arrays once.
func (t *slotTable) reserve(n int) {
	if n > cap(t.keys) {
		t.keys = append(make([]string, 0, n), t.keys...)
		t.objs = append(make([]interface{}, 0, n), t.objs...)
	}
}

// remove drops slot id and moves the last slot into its place. It returns
// the slot number that moved to id, or noSlot when id was the last.
func (t *slotTable) remove(id int32) (movedFrom int32) {
	delete(t.ids, t.keys[id])
	last := int32(len(t.keys) - 1)
	movedFrom = noSlot
	if id != last {
		t.keys[id], t.objs[id] = t.keys[last], t.objs[last]
		t.ids[t.keys[id]] = id
		movedFrom = last
	}
	// Clear the vacated end so the collector can free what it held.
	t.keys[last], t.objs[last] = "", nil
	t.keys, t.objs = t.keys[:last], t.objs[:last]
	t.shrink()
	return movedFrom
}

// shrink gives memory back after most of the table was removed.
func (t *slotTable) shrink() {
	n := len(t.keys)
	if cap(t.keys) > 1024 && n < cap(t.keys)/4 {
		t.keys = append(make([]string, 0, 2*n), t.keys...)
		t.objs = append(make([]interface{}, 0, 2*n), t.objs...)
	}
	if t.idsPeak > 1024 && len(t.ids) < t.idsPeak/4 {
		ids := make(map[string]int32, len(t.ids))
		for key, id := range t.ids {
			ids[key] = id
		}
		t.ids, t.idsPeak = ids, len(ids)
	}
}

// keyList returns every stored key in a new slice.
func (t *slotTable) keyList() []string {
	out := make([]string, len(t.keys))
	copy(out, t.keys)
	return out
}
