package cache

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/klog/v2"
)

// listerPod returns a pod with the given namespace, name and labels.
func listerPod(namespace, name string, lbls map[string]string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: lbls}}
}

// listerFixture is the content of the lister tests: pods in two
// namespaces and one cluster-scoped pod (a stand-in for a cluster-scoped
// resource).
func listerFixture() []interface{} {
	return []interface{}{
		listerPod("a", "web1", map[string]string{"app": "web"}),
		listerPod("a", "db1", map[string]string{"app": "db"}),
		listerPod("b", "web2", map[string]string{"app": "web", "tier": "front"}),
		listerPod("b", "plain", nil),
		listerPod("", "global", map[string]string{"app": "web"}),
	}
}

// listedKeys renders listed objects as sorted store keys; values without
// metadata are rendered with %v.
func listedKeys(objs []interface{}) []string {
	out := make([]string, 0, len(objs))
	for _, obj := range objs {
		key, err := MetaNamespaceKeyFunc(obj)
		if err != nil {
			key = fmt.Sprintf("%v", obj)
		}
		out = append(out, key)
	}
	sort.Strings(out)
	return out
}

// listerCollect returns an AppendFunc that appends to *out.
func listerCollect(out *[]interface{}) AppendFunc {
	return func(obj interface{}) { *out = append(*out, obj) }
}

// listerSelector parses a label selector or fails the test.
func listerSelector(t testing.TB, s string) labels.Selector {
	t.Helper()
	sel, err := labels.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return sel
}

// listerIndexer returns an indexer with the given index functions holding
// objs.
func listerIndexer(t *testing.T, indexers Indexers, objs ...interface{}) Indexer {
	t.Helper()
	idx := NewIndexer(MetaNamespaceKeyFunc, indexers)
	for _, obj := range objs {
		if err := idx.Add(obj); err != nil {
			t.Fatal(err)
		}
	}
	return idx
}

func TestListAll_SelectsByLabels(t *testing.T) {
	cases := map[string]struct {
		selector labels.Selector
		want     []string
	}{
		"everything":      {labels.Everything(), []string{"a/db1", "a/web1", "b/plain", "b/web2", "global"}},
		"nil selects all": {nil, []string{"a/db1", "a/web1", "b/plain", "b/web2", "global"}},
		"nothing":         {labels.Nothing(), nil},
		"equality":        {labels.SelectorFromSet(labels.Set{"app": "web"}), []string{"a/web1", "b/web2", "global"}},
		"set based":       {listerSelector(t, "app in (db, web), tier"), []string{"b/web2"}},
		"absence":         {listerSelector(t, "!app"), []string{"b/plain"}},
		"no match":        {labels.SelectorFromSet(labels.Set{"app": "cache"}), nil},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			store := listerIndexer(t, Indexers{}, listerFixture()...)
			var got []interface{}
			if err := ListAll(store, tc.selector, listerCollect(&got)); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, listedKeys(got), emptyAsNilSlices); diff != "" {
				t.Errorf("listed (-want +got):\n%s", diff)
			}
		})
	}
}

// listerAnyKey files values with metadata under their usual key and anything
// else under its printed form, so a store can hold values without
// metadata.
func listerAnyKey(obj interface{}) (string, error) {
	if key, err := MetaNamespaceKeyFunc(obj); err == nil {
		return key, nil
	}
	return fmt.Sprintf("%v", obj), nil
}

func TestListAll_ValuesWithoutMetadata(t *testing.T) {
	cases := map[string]struct {
		selector labels.Selector
		wantErr  bool
		want     []string
	}{
		"everything lists them without reading labels": {
			selector: labels.Everything(),
			want:     []string{"a/web1", "not an object"},
		},
		"a label selector reports an error": {
			selector: labels.SelectorFromSet(labels.Set{"app": "web"}),
			wantErr:  true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			store := NewStore(listerAnyKey)
			for _, obj := range []interface{}{listerPod("a", "web1", map[string]string{"app": "web"}), "not an object"} {
				if err := store.Add(obj); err != nil {
					t.Fatal(err)
				}
			}
			var got []interface{}
			err := ListAll(store, tc.selector, listerCollect(&got))
			if (err != nil) != tc.wantErr {
				t.Fatalf("error = %v, want error: %v", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			if diff := cmp.Diff(tc.want, listedKeys(got)); diff != "" {
				t.Errorf("listed (-want +got):\n%s", diff)
			}
		})
	}
}

func TestListAllByNamespace_UsesTheIndexOrScans(t *testing.T) {
	podOnlyNamespace := func(obj interface{}) ([]string, error) {
		pod, ok := obj.(*v1.Pod)
		if !ok {
			return nil, fmt.Errorf("not a pod: %T", obj)
		}
		return []string{pod.Namespace}, nil
	}
	prefixedNamespace := func(obj interface{}) ([]string, error) {
		m, err := listerMetaOf(obj)
		if err != nil {
			return nil, err
		}
		return []string{"ns:" + m.GetNamespace()}, nil
	}
	indexers := map[string]Indexers{
		"namespace index":                      {NamespaceIndex: MetaNamespaceIndexFunc},
		"no index: scan":                       {},
		"index that rejects the probe: scan":   {NamespaceIndex: podOnlyNamespace},
		"index with its own value form: probe": {NamespaceIndex: prefixedNamespace},
	}
	cases := map[string]struct {
		namespace string
		selector  labels.Selector
		want      []string
	}{
		"one namespace":              {"a", labels.Everything(), []string{"a/db1", "a/web1"}},
		"one namespace by label":     {"b", labels.SelectorFromSet(labels.Set{"app": "web"}), []string{"b/web2"}},
		"namespace all is every one": {metav1.NamespaceAll, labels.SelectorFromSet(labels.Set{"app": "web"}), []string{"a/web1", "b/web2", "global"}},
		"unknown namespace":          {"zz", labels.Everything(), nil},
		"nothing selector":           {"a", labels.Nothing(), nil},
		"nil selector":               {"b", nil, []string{"b/plain", "b/web2"}},
	}
	for indexName, idx := range indexers {
		for name, tc := range cases {
			t.Run(indexName+"/"+name, func(t *testing.T) {
				indexer := listerIndexer(t, idx, listerFixture()...)
				var got []interface{}
				if err := ListAllByNamespace(indexer, tc.namespace, tc.selector, listerCollect(&got)); err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tc.want, listedKeys(got), emptyAsNilSlices); diff != "" {
					t.Errorf("listed (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// listerMetaOf returns obj's object metadata.
func listerMetaOf(obj interface{}) (metav1.Object, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("no metadata: %T", obj)
	}
	return m, nil
}

func TestListAllByNamespace_ScanReportsValuesWithoutMetadata(t *testing.T) {
	indexer := NewIndexer(listerAnyKey, Indexers{})
	for _, obj := range []interface{}{listerPod("a", "web1", nil), "not an object"} {
		if err := indexer.Add(obj); err != nil {
			t.Fatal(err)
		}
	}
	err := ListAllByNamespace(indexer, "a", labels.Everything(), func(interface{}) {})
	if err == nil {
		t.Fatal("scanning a value without metadata should fail")
	}
}

var listerPodsResource = schema.GroupResource{Resource: "pods"}

func TestGenericLister_ListsAndGets(t *testing.T) {
	lister := NewGenericLister(listerIndexer(t, Indexers{NamespaceIndex: MetaNamespaceIndexFunc}, listerFixture()...), listerPodsResource)
	web := labels.SelectorFromSet(labels.Set{"app": "web"})
	listCases := map[string]struct {
		list func() ([]runtime.Object, error)
		want []string
	}{
		"all namespaces":          {func() ([]runtime.Object, error) { return lister.List(labels.Everything()) }, []string{"a/db1", "a/web1", "b/plain", "b/web2", "global"}},
		"all namespaces by label": {func() ([]runtime.Object, error) { return lister.List(web) }, []string{"a/web1", "b/web2", "global"}},
		"one namespace":           {func() ([]runtime.Object, error) { return lister.ByNamespace("a").List(labels.Everything()) }, []string{"a/db1", "a/web1"}},
		"one namespace by label":  {func() ([]runtime.Object, error) { return lister.ByNamespace("b").List(web) }, []string{"b/web2"}},
		"empty namespace":         {func() ([]runtime.Object, error) { return lister.ByNamespace("zz").List(web) }, nil},
	}
	for name, tc := range listCases {
		t.Run("list/"+name, func(t *testing.T) {
			objs, err := tc.list()
			if err != nil {
				t.Fatal(err)
			}
			asInterfaces := make([]interface{}, len(objs))
			for i, o := range objs {
				asInterfaces[i] = o
			}
			if diff := cmp.Diff(tc.want, listedKeys(asInterfaces), emptyAsNilSlices); diff != "" {
				t.Errorf("listed (-want +got):\n%s", diff)
			}
		})
	}

	getCases := map[string]struct {
		get      func() (runtime.Object, error)
		wantKey  string
		notFound string // name in the NotFound error
	}{
		"cluster scoped":               {get: func() (runtime.Object, error) { return lister.Get("global") }, wantKey: "global"},
		"namespaced key":               {get: func() (runtime.Object, error) { return lister.Get("a/web1") }, wantKey: "a/web1"},
		"in namespace":                 {get: func() (runtime.Object, error) { return lister.ByNamespace("b").Get("web2") }, wantKey: "b/web2"},
		"missing":                      {get: func() (runtime.Object, error) { return lister.Get("nope") }, notFound: "nope"},
		"missing in namespace":         {get: func() (runtime.Object, error) { return lister.ByNamespace("a").Get("web2") }, notFound: "web2"},
		"namespace all never finds":    {get: func() (runtime.Object, error) { return lister.ByNamespace("").Get("global") }, notFound: "global"},
		"wrong namespace for the name": {get: func() (runtime.Object, error) { return lister.ByNamespace("b").Get("web1") }, notFound: "web1"},
	}
	for name, tc := range getCases {
		t.Run("get/"+name, func(t *testing.T) {
			obj, err := tc.get()
			if tc.notFound != "" {
				if !apierrors.IsNotFound(err) {
					t.Fatalf("got %v, %v; want NotFound", obj, err)
				}
				var status apierrors.APIStatus
				if !errors.As(err, &status) {
					t.Fatalf("%v is not an API status", err)
				}
				details := status.Status().Details
				got := []string{details.Name, details.Group, details.Kind}
				if diff := cmp.Diff([]string{tc.notFound, "", "pods"}, got); diff != "" {
					t.Errorf("NotFound details (-want +got):\n%s", diff)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{tc.wantKey}, listedKeys([]interface{}{obj})); diff != "" {
				t.Errorf("got (-want +got):\n%s", diff)
			}
		})
	}
}

// A stored value that is not a runtime.Object panics the generic lister,
// as in client-go.
func TestGenericLister_ValuesThatAreNotRuntimeObjectsPanic(t *testing.T) {
	indexer := NewIndexer(listerAnyKey, Indexers{})
	for _, obj := range []interface{}{listerPod("", "good", nil), "bad"} {
		if err := indexer.Add(obj); err != nil {
			t.Fatal(err)
		}
	}
	lister := NewGenericLister(indexer, listerPodsResource)
	const want = "interface conversion: string is not runtime.Object: missing method DeepCopyObject"
	if p := capturePanic(func() { _, _ = lister.List(labels.Everything()) }); fmt.Sprint(p) != want {
		t.Errorf("List panicked with %v, want %q", p, want)
	}
	if p := capturePanic(func() { _, _ = lister.Get("bad") }); fmt.Sprint(p) != want {
		t.Errorf("Get(bad) panicked with %v, want %q", p, want)
	}
	if obj, err := lister.Get("good"); err != nil || obj == nil {
		t.Errorf("Get(good) = %v, %v", obj, err)
	}
}

// listerSpyIndexer records how ListAllByNamespace reads an indexer; with
// failByIndex its ByIndex fails, as an Indexer whose GetIndexers and
// ByIndex disagree might.
type listerSpyIndexer struct {
	Indexer
	failByIndex bool
	calls       []string
}

func (s *listerSpyIndexer) Index(indexName string, obj interface{}) ([]interface{}, error) {
	m, err := listerMetaOf(obj)
	if err != nil {
		s.calls = append(s.calls, fmt.Sprintf("Index(%s, %T)", indexName, obj))
	} else {
		s.calls = append(s.calls, fmt.Sprintf("Index(%s, %T in %q)", indexName, obj, m.GetNamespace()))
	}
	return s.Indexer.Index(indexName, obj)
}

func (s *listerSpyIndexer) ByIndex(indexName, indexedValue string) ([]interface{}, error) {
	s.calls = append(s.calls, fmt.Sprintf("ByIndex(%s, %q)", indexName, indexedValue))
	if s.failByIndex {
		return nil, errors.New("spy: ByIndex fails")
	}
	return s.Indexer.ByIndex(indexName, indexedValue)
}

func (s *listerSpyIndexer) List() []interface{} {
	s.calls = append(s.calls, "List()")
	return s.Indexer.List()
}

func TestListAllByNamespace_LooksUpTheNamespaceDirectlyOnlyForMetaNamespaceIndexFunc(t *testing.T) {
	wrappedMetaNamespace := func(obj interface{}) ([]string, error) { return MetaNamespaceIndexFunc(obj) }
	cases := map[string]struct {
		indexers    Indexers
		failByIndex bool
		namespace   string
		wantCalls   []string
		wantWarning bool
	}{
		"MetaNamespaceIndexFunc: direct lookup": {
			indexers:  Indexers{NamespaceIndex: MetaNamespaceIndexFunc},
			namespace: "b",
			wantCalls: []string{`ByIndex(namespace, "b")`},
		},
		"another function, even one calling it: probe": {
			indexers:  Indexers{NamespaceIndex: wrappedMetaNamespace},
			namespace: "b",
			wantCalls: []string{`Index(namespace, *v1.ObjectMeta in "b")`},
		},
		"MetaNamespaceIndexFunc under another name: probe, fails, scan": {
			indexers:    Indexers{"ns": MetaNamespaceIndexFunc},
			namespace:   "b",
			wantCalls:   []string{`Index(namespace, *v1.ObjectMeta in "b")`, "List()"},
			wantWarning: true,
		},
		"no index: probe, fails, scan with a warning": {
			indexers:    Indexers{},
			namespace:   "b",
			wantCalls:   []string{`Index(namespace, *v1.ObjectMeta in "b")`, "List()"},
			wantWarning: true,
		},
		"direct lookup failing: probe": {
			indexers:    Indexers{NamespaceIndex: MetaNamespaceIndexFunc},
			failByIndex: true,
			namespace:   "b",
			wantCalls:   []string{`ByIndex(namespace, "b")`, `Index(namespace, *v1.ObjectMeta in "b")`},
		},
		"every namespace: list": {
			indexers:  Indexers{NamespaceIndex: MetaNamespaceIndexFunc},
			namespace: metav1.NamespaceAll,
			wantCalls: []string{"List()"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			logger, logged := newCapturingLogger(t)
			klog.SetLoggerWithOptions(logger, klog.ContextualLogger(true))
			t.Cleanup(klog.ClearLogger)

			spy := &listerSpyIndexer{Indexer: listerIndexer(t, tc.indexers, listerFixture()...), failByIndex: tc.failByIndex}
			var got []interface{}
			if err := ListAllByNamespace(spy, tc.namespace, labels.SelectorFromSet(labels.Set{"app": "web"}), listerCollect(&got)); err != nil {
				t.Fatal(err)
			}
			want := []string{"b/web2"}
			if tc.namespace == metav1.NamespaceAll {
				want = []string{"a/web1", "b/web2", "global"}
			}
			if diff := cmp.Diff(want, listedKeys(got)); diff != "" {
				t.Errorf("listed (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantCalls, spy.calls); diff != "" {
				t.Errorf("indexer calls (-want +got):\n%s", diff)
			}
			var warnings []string
			for _, entry := range logged() {
				warnings = append(warnings, entry.Message)
			}
			var wantWarnings []string
			if tc.wantWarning {
				wantWarnings = []string{"Warning: can not retrieve list of objects using index"}
			}
			if diff := cmp.Diff(wantWarnings, warnings); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

// keysInOrder renders listed pods as their store keys, in listing order.
func keysInOrder(objs []interface{}) []string {
	var out []string
	for _, obj := range objs {
		key, err := MetaNamespaceKeyFunc(obj)
		if err != nil {
			key = fmt.Sprintf("%v", obj)
		}
		out = append(out, key)
	}
	return out
}

// listOneByOne is the plain definition appendMatching must agree with:
// objects in order, stopping at the first one without metadata.
func listOneByOne(items []interface{}, selector labels.Selector) ([]interface{}, bool) {
	var out []interface{}
	for _, obj := range items {
		m, err := listerMetaOf(obj)
		if err != nil {
			return out, true
		}
		if selector.Matches(labels.Set(m.GetLabels())) {
			out = append(out, obj)
		}
	}
	return out, false
}

func TestAppendMatching_AgreesWithListingOneByOne(t *testing.T) {
	// labelCycle gives pod i its labels: several pods have none, so that
	// selectors matching an empty label set are exercised.
	labelCycle := []map[string]string{
		{"app": "web"}, nil, {"app": "db", "tier": "front"}, {}, {"tier": "back"}, {"app": ""},
	}
	selectors := []string{"app=web", "!app", "app!=db", "tier", "app in (web,db),!tier", "app notin (web)"}
	sizes := []int{0, 1, labelBlockSize - 1, labelBlockSize, labelBlockSize + 1, 3*labelBlockSize + 5}
	for _, size := range sizes {
		for _, badAt := range []int{-1, 0, size / 2, size - 1, labelBlockSize, labelBlockSize + 1} {
			if badAt >= size {
				continue
			}
			items := make([]interface{}, size)
			for i := range items {
				items[i] = listerPod("a", fmt.Sprintf("p%03d", i), labelCycle[i%len(labelCycle)])
			}
			if badAt >= 0 {
				items[badAt] = fmt.Sprintf("no metadata at %d", badAt)
			}
			for _, text := range selectors {
				name := fmt.Sprintf("%d objects/bad at %d/%s", size, badAt, text)
				t.Run(name, func(t *testing.T) {
					selector := listerSelector(t, text)
					want, wantErr := listOneByOne(items, selector)
					var got []interface{}
					err := appendMatching(items, selector, listerCollect(&got))
					if (err != nil) != wantErr {
						t.Fatalf("error = %v, want error: %v", err, wantErr)
					}
					if diff := cmp.Diff(keysInOrder(want), keysInOrder(got)); diff != "" {
						t.Errorf("listed (-want +got):\n%s", diff)
					}
				})
			}
		}
	}
}

// listerAppendingStore is a Store with the objectAppender capability; it
// remembers the slices it filled, so tests can see that the listing
// cleared them, and counts calls to List.
type listerAppendingStore struct {
	Store
	filled [][]interface{}
	lists  int
}

func (s *listerAppendingStore) appendObjects(dst []interface{}) []interface{} {
	out := append(dst, s.Store.List()...)
	s.filled = append(s.filled, out)
	return out
}

func (s *listerAppendingStore) List() []interface{} {
	s.lists++
	return s.Store.List()
}

func TestListAll_ReadsIntoAClearedReusedBufferWhenTheStoreCan(t *testing.T) {
	cases := map[string]struct {
		objs     []interface{}
		selector labels.Selector
		want     []string
		wantErr  bool
	}{
		"everything": {
			objs:     listerFixture(),
			selector: labels.Everything(),
			want:     []string{"a/db1", "a/web1", "b/plain", "b/web2", "global"},
		},
		"by label": {
			objs:     listerFixture(),
			selector: labels.SelectorFromSet(labels.Set{"app": "web"}),
			want:     []string{"a/web1", "b/web2", "global"},
		},
		"a value without metadata ends the listing": {
			objs:     []interface{}{"not an object"},
			selector: labels.SelectorFromSet(labels.Set{"app": "web"}),
			wantErr:  true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			store := &listerAppendingStore{Store: NewStore(listerAnyKey)}
			for _, obj := range tc.objs {
				if err := store.Store.Add(obj); err != nil {
					t.Fatal(err)
				}
			}
			for round := range 2 {
				var got []interface{}
				err := ListAll(store, tc.selector, listerCollect(&got))
				if (err != nil) != tc.wantErr {
					t.Fatalf("round %d: error = %v, want error: %v", round, err, tc.wantErr)
				}
				if diff := cmp.Diff(tc.want, listedKeys(got), emptyAsNilSlices); diff != "" {
					t.Errorf("round %d: listed (-want +got):\n%s", round, diff)
				}
			}
			if store.lists != 0 || len(store.filled) != 2 {
				t.Errorf("List called %d times, appendObjects %d; want 0 and 2", store.lists, len(store.filled))
			}
			for i, filled := range store.filled {
				for j, obj := range filled {
					if obj != nil {
						t.Errorf("buffer of listing %d still holds %v at %d", i, obj, j)
					}
				}
			}
		})
	}
}

func TestListAll_ConcurrentListingsDoNotShareBuffers(t *testing.T) {
	base := NewStore(MetaNamespaceKeyFunc)
	const pods = 200
	for i := range pods {
		if err := base.Add(listerPod("a", fmt.Sprintf("p%03d", i), map[string]string{"n": fmt.Sprint(i % 2)})); err != nil {
			t.Fatal(err)
		}
	}
	// appendObjects records what it filled without a lock: give each
	// goroutine its own store sharing the same objects.
	const listers = 4
	counts := make([]int, listers)
	var wg sync.WaitGroup
	for g := range listers {
		own := &listerAppendingStore{Store: base}
		wg.Go(func() {
			for range 50 {
				n := 0
				if err := ListAll(own, listerSelector(t, "n=1"), func(obj interface{}) {
					if obj.(*v1.Pod).Labels["n"] != "1" {
						t.Errorf("listed %v", obj)
					}
					n++
				}); err != nil {
					t.Error(err)
				}
				counts[g] += n
			}
		})
	}
	wg.Wait()
	if diff := cmp.Diff([]int{50 * pods / 2, 50 * pods / 2, 50 * pods / 2, 50 * pods / 2}, counts); diff != "" {
		t.Errorf("objects listed per goroutine (-want +got):\n%s", diff)
	}
}

// labelSets are the label sets every selector of the table tests is tried
// on: absent, empty and present keys with empty, matching and other values.
var labelSets = map[string]map[string]string{
	"nil":           nil,
	"empty":         {},
	"app=web":       {"app": "web"},
	"app=db":        {"app": "db"},
	"app empty":     {"app": ""},
	"tier only":     {"tier": "front"},
	"app=web,tier":  {"app": "web", "tier": "front"},
	"app=db,tier":   {"app": "db", "tier": "back"},
	"app=cache,env": {"app": "cache", "env": "prod", "tier": "front"},
	"numbers":       {"replicas": "3", "app": "web"},
	"not a number":  {"replicas": "three", "app": "web"},
}

// labelMatchWant is the expected answer of a selector on each of labelSets
// (names of the sets it selects).
type labelMatchWant struct {
	selector string
	kinds    []labelCheckKind // compiled form; nil: not compiled
	selects  []string
}

func TestLabelMatcher_Operators(t *testing.T) {
	cases := map[string]labelMatchWant{
		"equals": {
			selector: "app=web", kinds: []labelCheckKind{checkEquals},
			selects: []string{"app=web", "app=web,tier", "numbers", "not a number"},
		},
		"double equals": {
			selector: "app==db", kinds: []labelCheckKind{checkEquals},
			selects: []string{"app=db", "app=db,tier"},
		},
		"equals empty value": {
			selector: "app=", kinds: []labelCheckKind{checkEquals},
			selects: []string{"app empty"},
		},
		"in one value": {
			selector: "app in (web)", kinds: []labelCheckKind{checkEquals},
			selects: []string{"app=web", "app=web,tier", "numbers", "not a number"},
		},
		"in several values": {
			selector: "app in (db,web)", kinds: []labelCheckKind{checkByRequirement},
			selects: []string{"app=web", "app=db", "app=web,tier", "app=db,tier", "numbers", "not a number"},
		},
		"in with the empty value": {
			selector: "app in (,db)", kinds: []labelCheckKind{checkByRequirement},
			selects: []string{"app=db", "app empty", "app=db,tier"},
		},
		"not equals: missing key matches": {
			selector: "app!=web", kinds: []labelCheckKind{checkByRequirement},
			selects: []string{"nil", "empty", "app=db", "app empty", "tier only", "app=db,tier", "app=cache,env"},
		},
		"notin several values": {
			selector: "app notin (web,db)", kinds: []labelCheckKind{checkByRequirement},
			selects: []string{"nil", "empty", "app empty", "tier only", "app=cache,env"},
		},
		"exists": {
			selector: "tier", kinds: []labelCheckKind{checkExists},
			selects: []string{"tier only", "app=web,tier", "app=db,tier", "app=cache,env"},
		},
		"exists with an empty value": {
			selector: "app", kinds: []labelCheckKind{checkExists},
			selects: []string{"app=web", "app=db", "app empty", "app=web,tier", "app=db,tier", "app=cache,env", "numbers", "not a number"},
		},
		"does not exist": {
			selector: "!app", kinds: []labelCheckKind{checkAbsent},
			selects: []string{"nil", "empty", "tier only"},
		},
		"greater than": {
			selector: "replicas>2", kinds: []labelCheckKind{checkByRequirement},
			selects: []string{"numbers"},
		},
		"less than": {
			selector: "replicas<3", kinds: []labelCheckKind{checkByRequirement},
			selects: nil,
		},
		"several requirements": {
			selector: "app in (web,db),tier,!env", kinds: []labelCheckKind{checkByRequirement, checkAbsent, checkExists},
			selects: []string{"app=web,tier", "app=db,tier"},
		},
		"equals and exists": {
			selector: "app=cache,env", kinds: []labelCheckKind{checkEquals, checkExists},
			selects: []string{"app=cache,env"},
		},
		"repeated key: the second one is not the exact match": {
			selector: "app=web,app=db", kinds: []labelCheckKind{checkEquals, checkByRequirement},
			selects: nil,
		},
		"repeated key after a set requirement": {
			selector: "app notin (db),app=web", kinds: []labelCheckKind{checkByRequirement, checkByRequirement},
			selects: []string{"app=web", "app=web,tier", "numbers", "not a number"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			checkLabelMatcher(t, listerSelector(t, tc.selector), tc)
		})
	}
}

// checkLabelMatcher compiles selector, compares the compiled form with
// want.kinds and its answers on labelSets with want.selects and with
// selector.Matches.
func checkLabelMatcher(t *testing.T, selector labels.Selector, want labelMatchWant) {
	t.Helper()
	m := newLabelMatcher(selector)
	if diff := cmp.Diff(want.kinds, compiledKinds(&m)); diff != "" {
		t.Errorf("compiled checks (-want +got):\n%s", diff)
	}
	if m.compiled && m.matchesNoLabels != selector.Matches(labels.Set(nil)) {
		t.Errorf("matchesNoLabels is %v, the selector says %v", m.matchesNoLabels, !m.matchesNoLabels)
	}
	var selects []string
	for name, set := range labelSets {
		got := m.matches(set, len(set))
		if ref := selector.Matches(labels.Set(set)); got != ref {
			t.Errorf("on %s: matcher says %v, selector %v", name, got, ref)
		}
		if got {
			selects = append(selects, name)
		}
	}
	if diff := cmp.Diff(sortedStrings(want.selects), sortedStrings(selects)); diff != "" {
		t.Errorf("selected label sets (-want +got):\n%s", diff)
	}
}

// compiledKinds returns the kinds of m's checks, or nil when m is not
// compiled.
func compiledKinds(m *labelMatcher) []labelCheckKind {
	if !m.compiled {
		return nil
	}
	kinds := make([]labelCheckKind, m.n)
	for i := range m.n {
		kinds[i] = m.reqs[i].kind
	}
	return kinds
}

// sortedStrings returns a sorted copy of s; nil for an empty s.
func sortedStrings(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

// invertedSelector is a Selector of its own whose Matches is the opposite
// of its requirements: a matcher must ask it, not its requirements.
type invertedSelector struct{ labels.Selector }

func (s invertedSelector) Matches(l labels.Labels) bool { return !s.Selector.Matches(l) }

// mustRequirement builds a requirement, even one NewRequirement reports as
// invalid (it still returns it, and callers may use it).
func mustRequirement(key string, op selection.Operator, values ...string) labels.Requirement {
	r, _ := labels.NewRequirement(key, op, values)
	return *r
}

func TestLabelMatcher_SelectorsItDoesNotCompile(t *testing.T) {
	many := make([]string, maxCompiledRequirements+1)
	for i := range many {
		many[i] = "k" + string(rune('a'+i)) + "!=x"
	}
	cases := map[string]struct {
		selector labels.Selector
		want     labelMatchWant
	}{
		"another selector implementation": {
			selector: invertedSelector{listerSelector(t, "app=web")},
			want:     labelMatchWant{selects: []string{"nil", "empty", "app=db", "app empty", "tier only", "app=db,tier", "app=cache,env"}},
		},
		"more requirements than held inline": {
			selector: listerSelector(t, strings.Join(many, ",")+",app=web"),
			want:     labelMatchWant{selects: []string{"app=web", "app=web,tier", "numbers", "not a number"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			checkLabelMatcher(t, tc.selector, tc.want)
		})
	}
}

func TestLabelMatcher_InvalidRequirementsBehaveAsTheSelector(t *testing.T) {
	cases := map[string]struct {
		req  labels.Requirement
		want labelMatchWant
	}{
		"zero requirement matches nothing": {
			req:  labels.Requirement{},
			want: labelMatchWant{kinds: []labelCheckKind{checkByRequirement}},
		},
		"in without values matches nothing": {
			req:  mustRequirement("app", selection.In),
			want: labelMatchWant{kinds: []labelCheckKind{checkByRequirement}},
		},
		"equals with two values is an in": {
			req: mustRequirement("app", selection.Equals, "web", "db"),
			want: labelMatchWant{kinds: []labelCheckKind{checkByRequirement},
				selects: []string{"app=web", "app=db", "app=web,tier", "app=db,tier", "numbers", "not a number"}},
		},
		"not equals without values matches all": {
			req: mustRequirement("app", selection.NotEquals),
			want: labelMatchWant{kinds: []labelCheckKind{checkByRequirement},
				selects: []string{"nil", "empty", "app=web", "app=db", "app empty", "tier only", "app=web,tier", "app=db,tier", "app=cache,env", "numbers", "not a number"}},
		},
		"greater than a word": {
			req:  mustRequirement("replicas", selection.GreaterThan, "two"),
			want: labelMatchWant{kinds: []labelCheckKind{checkByRequirement}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			checkLabelMatcher(t, labels.NewSelector().Add(tc.req), tc.want)
		})
	}
}

// labelsOnly is a value with labels that is not a metav1.Object but gives
// access to one.
type labelsOnly struct{ meta *metav1.ObjectMeta }

func (l labelsOnly) GetObjectMeta() metav1.Object {
	if l.meta == nil {
		return nil
	}
	return l.meta
}

func TestObjectLabels(t *testing.T) {
	cases := map[string]struct {
		obj     interface{}
		want    map[string]string
		wantErr bool
	}{
		"pod":                       {obj: listerPod("a", "p", map[string]string{"app": "web"}), want: map[string]string{"app": "web"}},
		"pod without labels":        {obj: listerPod("a", "p", nil)},
		"object meta accessor":      {obj: labelsOnly{&metav1.ObjectMeta{Labels: map[string]string{"x": "y"}}}, want: map[string]string{"x": "y"}},
		"accessor without metadata": {obj: labelsOnly{}, wantErr: true},
		"value without metadata":    {obj: "nope", wantErr: true},
		"nil":                       {obj: nil, wantErr: true},
		"pod list is not an object": {obj: &v1.PodList{}, wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := objectLabels(tc.obj)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error = %v, want error: %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("labels (-want +got):\n%s", diff)
			}
		})
	}
}

// parseFuzzLabels reads "k=v,k2,k3=" as a label set: an entry without '='
// has the empty value.
func parseFuzzLabels(s string) map[string]string {
	if s == "" {
		return nil
	}
	set := map[string]string{}
	for _, entry := range strings.Split(s, ",") {
		key, value, _ := strings.Cut(entry, "=")
		set[key] = value
	}
	return set
}

func FuzzLabelMatch_AgreesWithSelector(f *testing.F) {
	seeds := [][2]string{
		{"app=web", "app=web,tier=front"},
		{"app==web,tier", "app=web"},
		{"app in (web,db),!env", "app=db,env="},
		{"app notin (web),tier!=back", "tier=back"},
		{"app=,x", "app=,x=1"},
		{"replicas>2,replicas<10", "replicas=5"},
		{"a=1,a=2", "a=1"},
		{"a in (1),a notin (2),!b", "a=1,b"},
		{"", "a=b"},
	}
	for _, s := range seeds {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, selectorText, labelText string) {
		selector, err := labels.Parse(selectorText)
		if err != nil {
			t.Skip()
		}
		set := parseFuzzLabels(labelText)
		m := newLabelMatcher(selector)
		want := selector.Matches(labels.Set(set))
		if got := m.matches(set, len(set)); got != want {
			t.Fatalf("selector %q on %v: matcher says %v, selector %v", selector, set, got, want)
		}
		if m.compiled && m.matchesNoLabels != selector.Matches(labels.Set(nil)) {
			t.Fatalf("selector %q: matchesNoLabels is %v, the selector says %v", selector, m.matchesNoLabels, !m.matchesNoLabels)
		}
	})
}

// BenchmarkLabelMatch compares, on label sets already in cache, the
// selector's own Matches with the compiled matcher, to show the cost of
// matching apart from memory.
func BenchmarkLabelMatch(b *testing.B) {
	sets := make([]map[string]string, 0, 64)
	for i := range cap(sets) {
		sets = append(sets, map[string]string{
			"app":               fmt.Sprintf("app-%d", i%8),
			"tier":              listerBenchTiers[i%len(listerBenchTiers)],
			"pod-template-hash": fmt.Sprintf("h%05d", i),
			"revision":          "v1",
		})
	}
	for _, text := range []string{"tier=web", "tier in (web,api)", "tier!=web", "tier", "app=app-1,tier=web,!canary"} {
		selector := listerSelector(b, text)
		b.Run(text+"/selector", func(b *testing.B) {
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				for _, set := range sets {
					if selector.Matches(labels.Set(set)) {
						n++
					}
				}
			}
		})
		b.Run(text+"/compiled", func(b *testing.B) {
			b.ReportAllocs()
			n := 0
			m := newLabelMatcher(selector)
			for b.Loop() {
				for _, set := range sets {
					if m.matches(set, len(set)) {
						n++
					}
				}
			}
		})
	}
}
