package cache

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
