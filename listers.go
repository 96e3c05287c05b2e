package cache

import (
	"reflect"
	goruntime "runtime"
	"sync"

	"k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/klog/v2"
)

// AppendFunc receives each object a listing selects, typically to append
// it to the caller's slice. The object is the stored one: read-only.
type AppendFunc func(interface{})

// ListAll calls appendFn with every object of store whose labels match
// selector. Selecting everything looks at no labels, so it works on any
// stored value; otherwise each object must have object metadata, and the
// first one without it ends the listing with an error (objects already
// passed to appendFn stay passed). A nil selector selects everything.
func ListAll(store Store, selector labels.Selector, appendFn AppendFunc) error {
	if selectsNothing(selector) {
		return nil
	}
	return appendMatchingStored(store, selector, appendFn)
}

// objectAppender is an optional capability of a Store: appendObjects
// appends every stored object to dst, as List would return them, and
// returns the extended slice. Listings use it to copy the objects into a
// reused buffer instead of a slice allocated per call.
type objectAppender interface {
	appendObjects(dst []interface{}) []interface{}
}

// listBuffers holds the buffers of appendMatchingStored. A buffer is
// cleared before it is put back, so that it keeps no object alive.
var listBuffers = sync.Pool{New: func() any { return new([]interface{}) }}

// appendMatchingStored is appendMatching over every object of store, read
// into a pooled buffer when the store is an objectAppender.
func appendMatchingStored(store Store, selector labels.Selector, appendFn AppendFunc) error {
	appender, ok := store.(objectAppender)
	if !ok {
		return appendMatching(store.List(), selector, appendFn)
	}
	buf := takeListBuffer()
	items := appender.appendObjects(*buf)
	defer returnListBuffer(buf, items)
	return appendMatching(items, selector, appendFn)
}

// indexAppender is an optional capability of an Indexer: appendIndexed
// appends the objects ByIndex would return to dst.
type indexAppender interface {
	appendIndexed(dst []interface{}, indexName, indexedValue string) ([]interface{}, error)
}

// appendMatchingIndexed is appendMatching over ByIndex(indexName, value),
// read into a pooled buffer when the indexer is an indexAppender. found is
// false, and nothing was passed to appendFn, when the lookup failed.
func appendMatchingIndexed(indexer Indexer, indexName, value string, selector labels.Selector, appendFn AppendFunc) (found bool, err error) {
	appender, ok := indexer.(indexAppender)
	if !ok {
		items, err := indexer.ByIndex(indexName, value)
		if err != nil {
			return false, err
		}
		return true, appendMatching(items, selector, appendFn)
	}
	buf := takeListBuffer()
	items, err := appender.appendIndexed(*buf, indexName, value)
	defer returnListBuffer(buf, items)
	if err != nil {
		return false, err
	}
	return true, appendMatching(items, selector, appendFn)
}

// takeListBuffer lends an empty buffer from the pool.
func takeListBuffer() *[]interface{} {
	buf := listBuffers.Get().(*[]interface{})
	*buf = (*buf)[:0]
	return buf
}

// returnListBuffer gives buf back holding items, the slice filled from it
// (perhaps grown), cleared so that the pool keeps no object alive.
func returnListBuffer(buf *[]interface{}, items []interface{}) {
	clear(items)
	*buf = items[:0]
	listBuffers.Put(buf)
}

// ListAllByNamespace is ListAll restricted to one namespace, where
// metav1.NamespaceAll ("") means every namespace. It looks the namespace up
// in the indexer's NamespaceIndex; an indexer without that index is
// scanned instead, which is slower, and then every object must have object
// metadata. When the index function is MetaNamespaceIndexFunc the
// namespace is looked up directly (ByIndex); any other function is given,
// as generated listers expect, an ObjectMeta carrying only the namespace
// (Index).
func ListAllByNamespace(indexer Indexer, namespace string, selector labels.Selector, appendFn AppendFunc) error {
	if selectsNothing(selector) {
		return nil
	}
	if namespace == metav1.NamespaceAll {
		return appendMatchingStored(indexer, selector, appendFn)
	}
	if indexesByMetaNamespace(indexer) {
		if found, err := appendMatchingIndexed(indexer, NamespaceIndex, namespace, selector, appendFn); found {
			return err
		}
	}
	items, err := indexer.Index(NamespaceIndex, &metav1.ObjectMeta{Namespace: namespace})
	if err != nil {
		klog.Background().Info("Warning: can not retrieve list of objects using index", "err", err)
		return scanNamespace(indexer.List(), namespace, selector, appendFn)
	}
	return appendMatching(items, selector, appendFn)
}

// indexesByMetaNamespace reports whether indexer's NamespaceIndex is
// computed by MetaNamespaceIndexFunc, so that the index values are the
// namespaces themselves.
func indexesByMetaNamespace(indexer Indexer) bool {
	return isMetaNamespaceIndexFunc(indexer.GetIndexers()[NamespaceIndex])
}

// selectsEverything reports whether selector selects every object without
// looking at labels.
func selectsEverything(selector labels.Selector) bool {
	return selector == nil || selector.Empty()
}

// selectsNothing reports whether selector is known to select no object.
func selectsNothing(selector labels.Selector) bool {
	return selector != nil && labels.MatchesNothing(selector)
}

// appendMatching passes the objects of items whose labels match selector
// to appendFn, in order; selecting everything passes them all without
// reading labels.
func appendMatching(items []interface{}, selector labels.Selector, appendFn AppendFunc) error {
	if selectsEverything(selector) {
		for i, obj := range items {
			yieldEvery(tuning.listCopyStretch, i)
			appendFn(obj)
		}
		return nil
	}
	matcher := newLabelMatcher(selector)
	var block labelBlock
	for done := 0; len(items) > 0; done += labelBlockSize {
		yieldEvery(tuning.listMatchStretch, done)
		objs := items[:min(len(items), labelBlockSize)]
		items = items[len(objs):]
		read, err := block.load(objs)
		block.appendMatching(objs[:read], &matcher, appendFn)
		if err != nil {
			return err
		}
	}
	return nil
}

// yieldEvery yields the processor when done, the number of objects a
// listing has gone through, completes a stretch. A listing of a big cache
// is a long run of CPU outside any lock; several goroutines looping over
// such listings would otherwise keep the informer's goroutines (which take
// the store's write lock and feed the handlers) waiting for whole
// scheduling slices.
func yieldEvery(stretch, done int) {
	if done > 0 && done%stretch == 0 {
		goruntime.Gosched()
	}
}

// labelBlockSize is how many objects a labelBlock holds.
const labelBlockSize = 32

// labelBlock holds the labels of a few consecutive objects of a listing.
// Listing reads the labels of a whole block before testing any of them:
// in a cache whose objects were replaced over time, every object, label
// map and map header is a likely cache miss, and loads that do not depend
// on each other let the processor wait for a block's misses together
// instead of one after the other (BenchmarkListAll/shuffled measures the
// gain on churned pods; BenchmarkListAll with objects in listing order,
// that it costs nothing there).
type labelBlock struct {
	sets  [labelBlockSize]map[string]string
	sizes [labelBlockSize]int
}

// load reads the labels of objs, at most labelBlockSize of them, in two
// passes: the objects, then the label maps' headers. It stops at the first
// object without metadata, returning how many it read and the error.
func (b *labelBlock) load(objs []interface{}) (int, error) {
	read := len(objs)
	var err error
	for i, obj := range objs {
		b.sets[i], err = objectLabels(obj)
		if err != nil {
			read = i
			break
		}
	}
	for i := range read {
		b.sizes[i] = len(b.sets[i])
	}
	return read, err
}

// appendMatching passes to appendFn the objects of objs, whose labels the
// block holds, that matcher selects.
func (b *labelBlock) appendMatching(objs []interface{}, matcher *labelMatcher, appendFn AppendFunc) {
	for i, obj := range objs {
		if matcher.matches(b.sets[i], b.sizes[i]) {
			appendFn(obj)
		}
	}
}

// scanNamespace passes the objects of items that are in namespace and whose
// labels match selector to appendFn.
func scanNamespace(items []interface{}, namespace string, selector labels.Selector, appendFn AppendFunc) error {
	everything := selectsEverything(selector)
	var matcher labelMatcher
	if !everything {
		matcher = newLabelMatcher(selector)
	}
	for _, obj := range items {
		accessor, err := meta.Accessor(obj)
		if err != nil {
			return err
		}
		if accessor.GetNamespace() != namespace {
			continue
		}
		if lbls := accessor.GetLabels(); everything || matcher.matches(lbls, len(lbls)) {
			appendFn(obj)
		}
	}
	return nil
}

// GenericLister reads objects of one resource from an Indexer, across
// namespaces. Returned objects are the stored ones: treat them as
// read-only.
type GenericLister interface {
	// List returns the objects matching selector, in every namespace.
	List(selector labels.Selector) (ret []runtime.Object, err error)
	// Get returns the object whose store key is name: a cluster-scoped
	// object, or "namespace/name". A missing object is a NotFound error.
	Get(name string) (runtime.Object, error)
	// ByNamespace returns a lister for one namespace.
	ByNamespace(namespace string) GenericNamespaceLister
}

// GenericNamespaceLister reads objects of one resource in one namespace
// from an Indexer. Returned objects are the stored ones: treat them as
// read-only.
type GenericNamespaceLister interface {
	// List returns the objects of the namespace matching selector.
	List(selector labels.Selector) (ret []runtime.Object, err error)
	// Get returns the object called name in the namespace. A missing
	// object is a NotFound error.
	Get(name string) (runtime.Object, error)
}

// NewGenericLister returns a GenericLister over indexer, whose NotFound
// errors name resource. Objects of the indexer must be runtime.Objects;
// any other value is reported as an error, never a panic.
func NewGenericLister(indexer Indexer, resource schema.GroupResource) GenericLister {
	return &genericLister{indexer: indexer, resource: resource}
}

// genericLister is the GenericLister of NewGenericLister.
type genericLister struct {
	indexer  Indexer
	resource schema.GroupResource
}

// List returns the objects of every namespace that match selector.
func (l *genericLister) List(selector labels.Selector) ([]runtime.Object, error) {
	var c runtimeObjectCollector
	err := ListAll(l.indexer, selector, c.add)
	return c.result(err)
}

// Get returns the object stored under the key name.
func (l *genericLister) Get(name string) (runtime.Object, error) {
	return getRuntimeObject(l.indexer, name, name, l.resource)
}

// ByNamespace returns a lister for namespace.
func (l *genericLister) ByNamespace(namespace string) GenericNamespaceLister {
	return &genericNamespaceLister{indexer: l.indexer, namespace: namespace, resource: l.resource}
}

// genericNamespaceLister is the GenericNamespaceLister of
// genericLister.ByNamespace.
type genericNamespaceLister struct {
	indexer   Indexer
	namespace string
	resource  schema.GroupResource
}

// List returns the objects of the namespace that match selector.
func (l *genericNamespaceLister) List(selector labels.Selector) ([]runtime.Object, error) {
	var c runtimeObjectCollector
	err := ListAllByNamespace(l.indexer, l.namespace, selector, c.add)
	return c.result(err)
}

// Get returns the object called name in the namespace: the one stored
// under "namespace/name". (For NamespaceAll that key is "/name", which a
// MetaNamespaceKeyFunc store never holds.)
func (l *genericNamespaceLister) Get(name string) (runtime.Object, error) {
	return getRuntimeObject(l.indexer, l.namespace+"/"+name, name, l.resource)
}

// getRuntimeObject returns the runtime.Object stored under key, or a
// NotFound error for name in resource.
func getRuntimeObject(indexer Indexer, key, name string, resource schema.GroupResource) (runtime.Object, error) {
	obj, exists, err := indexer.GetByKey(key)
	if err != nil {
		return nil, err
	}
	if !exists {
		return nil, errors.NewNotFound(resource, name)
	}
	// A stored value that is not a runtime.Object panics, as in client-go.
	return obj.(runtime.Object), nil
}

// runtimeObjectCollector gathers listed runtime.Objects.
type runtimeObjectCollector struct {
	objects []runtime.Object
}

// add is the AppendFunc of the collector. A value that is not a
// runtime.Object panics, as in client-go.
func (c *runtimeObjectCollector) add(obj interface{}) {
	c.objects = append(c.objects, obj.(runtime.Object))
}

// result returns the collected objects with listErr.
func (c *runtimeObjectCollector) result(listErr error) ([]runtime.Object, error) {
	return c.objects, listErr
}

// maxCompiledRequirements bounds the requirements a labelMatcher holds
// inline, so that compiling a selector allocates nothing; selectors with
// more are matched through the selector itself.
const maxCompiledRequirements = 8

// apimachinerySelectorType is the dynamic type of the selectors the labels
// package builds (Parse, SelectorFromSet, NewSelector().Add...). Only those
// are compiled: their Matches is known to be the conjunction of their
// Requirements, which another Selector implementation need not promise.
var apimachinerySelectorType = reflect.TypeOf(labels.NewSelector())

// labelMatcher is a label selector taken apart once per listing, so that
// testing one object costs a few map lookups instead of interface calls
// through the selector and each of its requirements.
//
// Invariant: when compiled is false, selector is not nil and decides alone;
// otherwise reqs[:n] decide, and an object matches when it meets them all,
// and matchesNoLabels is their answer for an empty label set.
type labelMatcher struct {
	selector        labels.Selector
	compiled        bool
	matchesNoLabels bool
	n               int
	reqs            [maxCompiledRequirements]labelCheck
}

// labelCheck is one requirement of a compiled selector.
type labelCheck struct {
	kind  labelCheckKind
	key   string
	value string
	// req is the requirement itself, for kind checkByRequirement.
	req *labels.Requirement
}

// labelCheckKind says how a labelCheck tests a label set.
type labelCheckKind uint8

const (
	// checkEquals: key is present with exactly value (=, == and a
	// one-value in).
	checkEquals labelCheckKind = iota
	// checkExists: key is present, whatever its value.
	checkExists
	// checkAbsent: key is not present.
	checkAbsent
	// checkByRequirement: req.Matches decides (!=, notin, in with several
	// values, gt, lt and operators this file does not know). Their values
	// cannot be read from a Requirement without copying them, so they are
	// left to it; it is still called directly, not through the selector.
	checkByRequirement
)

// newLabelMatcher compiles selector, which must not be nil. It allocates
// nothing: values are read through RequiresExactMatch, which returns the
// selector's own strings.
func newLabelMatcher(selector labels.Selector) labelMatcher {
	m := labelMatcher{selector: selector}
	if reflect.TypeOf(selector) != apimachinerySelectorType {
		return m
	}
	reqs, selectable := selector.Requirements()
	if !selectable || len(reqs) > maxCompiledRequirements {
		return m
	}
	m.matchesNoLabels = true
	for i := range reqs {
		m.reqs[i] = compileRequirement(selector, reqs, i)
		m.matchesNoLabels = m.matchesNoLabels && m.reqs[i].matchesNoLabels()
	}
	m.n, m.compiled = len(reqs), true
	return m
}

// compileRequirement turns reqs[i], a requirement of selector, into a
// labelCheck.
func compileRequirement(selector labels.Selector, reqs labels.Requirements, i int) labelCheck {
	r := &reqs[i]
	key := r.Key()
	switch r.Operator() {
	case selection.Exists:
		return labelCheck{kind: checkExists, key: key}
	case selection.DoesNotExist:
		return labelCheck{kind: checkAbsent, key: key}
	case selection.Equals, selection.DoubleEquals, selection.In:
		// RequiresExactMatch reports the first requirement on key, so its
		// answer is about r only when no earlier one has the same key.
		if !keyRepeatsBefore(reqs, i) {
			if value, ok := selector.RequiresExactMatch(key); ok {
				return labelCheck{kind: checkEquals, key: key, value: value}
			}
		}
	}
	return labelCheck{kind: checkByRequirement, key: key, req: r}
}

// keyRepeatsBefore reports whether a requirement before reqs[i] has its key.
func keyRepeatsBefore(reqs labels.Requirements, i int) bool {
	key := reqs[i].Key()
	for j := range i {
		if reqs[j].Key() == key {
			return true
		}
	}
	return false
}

// matches reports whether the label set lbls, which holds size labels,
// satisfies the selector. It is the one call per object of a listing, so
// the checks are evaluated here rather than through a method per check.
func (m *labelMatcher) matches(lbls map[string]string, size int) bool {
	if !m.compiled {
		return m.selector.Matches(labels.Set(lbls))
	}
	if size == 0 {
		return m.matchesNoLabels
	}
	for i := range m.n {
		c := &m.reqs[i]
		switch c.kind {
		case checkEquals:
			if value, ok := lbls[c.key]; !ok || value != c.value {
				return false
			}
		case checkExists:
			if _, ok := lbls[c.key]; !ok {
				return false
			}
		case checkAbsent:
			if _, ok := lbls[c.key]; ok {
				return false
			}
		default:
			if !c.req.Matches(labels.Set(lbls)) {
				return false
			}
		}
	}
	return true
}

// matchesNoLabels reports whether an empty label set meets the check.
func (c *labelCheck) matchesNoLabels() bool {
	switch c.kind {
	case checkEquals, checkExists:
		return false
	case checkAbsent:
		return true
	default:
		return c.req.Matches(labels.Set(nil))
	}
}

// objectLabels returns the labels of obj, which must have object metadata
// (metav1.Object, or a metav1.ObjectMetaAccessor with metadata); the error
// is meta.Accessor's.
func objectLabels(obj interface{}) (map[string]string, error) {
	if object, ok := obj.(metav1.Object); ok {
		return object.GetLabels(), nil
	}
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	return accessor.GetLabels(), nil
}
