package cache

import (
	"fmt"
	"math/rand"
	"sort"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
)

// slotPod is a pod of a larger universe than modelPod's, so that tables
// grow past the compaction threshold; its labels give the multi-valued
// "labels" index one to three values, sometimes repeated.
func slotPod(r *rand.Rand, i, rv int) *v1.Pod {
	p := podOnNode(fmt.Sprint("ns", i%7), fmt.Sprint("p", i), fmt.Sprint("n", r.Intn(40)), rv)
	p.Labels = map[string]string{"app": fmt.Sprint("a", r.Intn(30))}
	if r.Intn(3) == 0 {
		p.Labels["tier"] = fmt.Sprint("a", r.Intn(30))
	}
	return p
}

// checkIndexQueries compares Index, probed with an object carrying one
// value, with the model for the namespace and labels indexes.
func checkIndexQueries(t *testing.T, s Indexer, m *indexModel, where string) {
	t.Helper()
	for _, v := range m.values(NamespaceIndex) {
		got, err := s.Index(NamespaceIndex, podOnNode(v, "probe", "", 0))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(m.byIndex(NamespaceIndex, v), keysOf(got)); diff != "" {
			t.Fatalf("%s: Index(namespace, %s) (-model +store):\n%s", where, v, diff)
		}
	}
	for _, v := range m.values("labels") {
		probe := &v1.Pod{}
		probe.Labels = map[string]string{"x": v}
		got, err := s.Index("labels", probe)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(m.byIndex("labels", v), keysOf(got)); diff != "" {
			t.Fatalf("%s: Index(labels, %s) (-model +store):\n%s", where, v, diff)
		}
	}
}

func TestStore_MatchesModelAcrossShrinks(t *testing.T) {
	r := rand.New(rand.NewSource(testSeed(t)))
	indexers := Indexers{"node": byNodeIndex, NamespaceIndex: MetaNamespaceIndexFunc, "labels": byLabelValues}
	s := NewIndexer(MetaNamespaceKeyFunc, indexers)
	m := &indexModel{objs: map[string]*v1.Pod{}, indexers: indexers}
	const universe = 4000
	put := func(i, rv int) {
		p := slotPod(r, i, rv)
		key, _ := MetaNamespaceKeyFunc(p)
		if err := s.Add(p); err != nil {
			t.Fatal(err)
		}
		m.objs[key] = p
	}
	for i := 0; i < universe; i++ {
		put(i, i)
	}
	compareWithModel(t, s, m, "filled")
	tab := &s.(*cache).storage.tab
	capBefore := cap(tab.keys)
	for _, i := range r.Perm(universe)[:universe*9/10] {
		p := podOnNode(fmt.Sprint("ns", i%7), fmt.Sprint("p", i), "", 0)
		key, _ := MetaNamespaceKeyFunc(p)
		if err := s.Delete(p); err != nil {
			t.Fatal(err)
		}
		delete(m.objs, key)
	}
	compareWithModel(t, s, m, "after deleting 90%")
	if after := cap(tab.keys); after >= capBefore/2 {
		t.Fatalf("slot arrays not shrunk: capacity %d before, %d after deleting 90%%", capBefore, after)
	}
	if tab.idsPeak >= universe/2 {
		t.Fatalf("key map not rebuilt: peak %d after deleting 90%% of %d", tab.idsPeak, universe)
	}
	for step := 0; step < 3000; step++ {
		i := r.Intn(universe)
		if r.Intn(3) == 0 {
			p := podOnNode(fmt.Sprint("ns", i%7), fmt.Sprint("p", i), "", 0)
			key, _ := MetaNamespaceKeyFunc(p)
			if err := s.Delete(p); err != nil {
				t.Fatal(err)
			}
			delete(m.objs, key)
			continue
		}
		put(i, universe+step)
	}
	compareWithModel(t, s, m, "after churn")
	checkIndexQueries(t, s, m, "after churn")
}

func TestIndex_UnionOfSeveralValuesListsEachObjectOnce(t *testing.T) {
	s := NewIndexer(MetaNamespaceKeyFunc, Indexers{"labels": byLabelValues})
	for i, labels := range []map[string]string{
		{"app": "x"},
		{"app": "x", "tier": "y"},
		{"app": "y", "tier": "y"},
		{"app": "z"},
	} {
		p := podOnNode("ns", fmt.Sprint("p", i), "n", i)
		p.Labels = labels
		if err := s.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	probe := &v1.Pod{}
	probe.Labels = map[string]string{"a": "x", "b": "y"}
	got, err := s.Index("labels", probe)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"ns/p0", "ns/p1", "ns/p2"}, keysOf(got)); diff != "" {
		t.Errorf("Index over x and y (-want +got):\n%s", diff)
	}
	nothing := &v1.Pod{}
	got, err = s.Index("labels", nothing)
	if err != nil || got == nil || len(got) != 0 {
		t.Errorf("Index with no values = %v, %v; want an empty, non-nil list", got, err)
	}
}

func TestIndexKeys_CachedOrderIsCopiedAndRefreshed(t *testing.T) {
	s := NewIndexer(MetaNamespaceKeyFunc, Indexers{"node": byNodeIndex})
	for _, name := range []string{"c", "a", "b"} {
		if err := s.Add(podOnNode("ns", name, "n1", 1)); err != nil {
			t.Fatal(err)
		}
	}
	first, _ := s.IndexKeys("node", "n1")
	first[0] = "scribbled"
	steps := []struct {
		name   string
		change func() error
		want   []string
	}{
		{"caller's changes do not reach the cache", func() error { return nil }, []string{"ns/a", "ns/b", "ns/c"}},
		{"a new member shows", func() error { return s.Add(podOnNode("ns", "0", "n1", 2)) }, []string{"ns/0", "ns/a", "ns/b", "ns/c"}},
		{"a member moving away leaves", func() error { return s.Update(podOnNode("ns", "a", "n2", 3)) }, []string{"ns/0", "ns/b", "ns/c"}},
		{"an update in place keeps the list", func() error { return s.Update(podOnNode("ns", "b", "n1", 4)) }, []string{"ns/0", "ns/b", "ns/c"}},
		{"a deleted member leaves", func() error { return s.Delete(podOnNode("ns", "c", "n1", 5)) }, []string{"ns/0", "ns/b"}},
	}
	for _, step := range steps {
		if err := step.change(); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		got, err := s.IndexKeys("node", "n1")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(step.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", step.name, diff)
		}
	}
}

// countingIndex counts its calls, to see which objects a store indexes.
type countingIndex struct{ calls atomic.Int64 }

func (c *countingIndex) fn(obj interface{}) ([]string, error) {
	c.calls.Add(1)
	return byNodeIndex(obj)
}

func TestReplace_DiffsAgainstTheStoredObjects(t *testing.T) {
	pods := make([]*v1.Pod, 6)
	for i := range pods {
		pods[i] = podOnNode("ns", fmt.Sprint("p", i), fmt.Sprint("n", i%2), i)
	}
	moved := podOnNode("ns", "p1", "n9", 10)
	fresh := podOnNode("ns", "p9", "n1", 11)
	tests := []struct {
		name      string
		list      []interface{}
		wantCalls int64
		wantKeys  []string
		wantNodes map[string][]string
	}{
		{
			name:      "the very same objects index nothing",
			list:      []interface{}{pods[0], pods[1], pods[2], pods[3], pods[4], pods[5]},
			wantCalls: 0,
			wantKeys:  []string{"ns/p0", "ns/p1", "ns/p2", "ns/p3", "ns/p4", "ns/p5"},
			wantNodes: map[string][]string{"n0": {"ns/p0", "ns/p2", "ns/p4"}, "n1": {"ns/p1", "ns/p3", "ns/p5"}},
		},
		{
			name:      "changed, new and missing objects",
			list:      []interface{}{pods[0], moved, pods[2], fresh},
			wantCalls: 2,
			wantKeys:  []string{"ns/p0", "ns/p1", "ns/p2", "ns/p9"},
			wantNodes: map[string][]string{"n0": {"ns/p0", "ns/p2"}, "n1": {"ns/p9"}, "n9": {"ns/p1"}},
		},
		{
			name:      "a repeated key keeps its last object",
			list:      []interface{}{pods[0], pods[1], moved},
			wantCalls: 1,
			wantKeys:  []string{"ns/p0", "ns/p1"},
			wantNodes: map[string][]string{"n0": {"ns/p0"}, "n9": {"ns/p1"}},
		},
		{
			name:      "an empty list empties the store",
			list:      nil,
			wantCalls: 0,
			wantKeys:  []string{},
			wantNodes: map[string][]string{"n0": {}, "n1": {}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			counter := &countingIndex{}
			s := NewIndexer(MetaNamespaceKeyFunc, Indexers{"node": counter.fn})
			for _, p := range pods {
				if err := s.Add(p); err != nil {
					t.Fatal(err)
				}
			}
			counter.calls.Store(0)
			if err := s.Replace(tt.list, "100"); err != nil {
				t.Fatal(err)
			}
			if got := counter.calls.Load(); got != tt.wantCalls {
				t.Errorf("index function calls = %d, want %d", got, tt.wantCalls)
			}
			if diff := cmp.Diff(tt.wantKeys, sorted(s.ListKeys())); diff != "" {
				t.Errorf("keys (-want +got):\n%s", diff)
			}
			for node, want := range tt.wantNodes {
				got, err := s.IndexKeys("node", node)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("IndexKeys(node, %s) (-want +got):\n%s", node, diff)
				}
			}
			if got := s.ListIndexFuncValues("node"); len(got) != len(nonEmpty(tt.wantNodes)) {
				t.Errorf("ListIndexFuncValues = %v, want the values of %v", got, nonEmpty(tt.wantNodes))
			}
		})
	}
}

func nonEmpty(m map[string][]string) []string {
	var out []string
	for k, v := range m {
		if len(v) > 0 {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func TestSameObject(t *testing.T) {
	p, q := &v1.Pod{}, &v1.Pod{}
	tests := []struct {
		name string
		a, b interface{}
		want bool
	}{
		{"same pointer", p, p, true},
		{"equal pods at different addresses", p, q, false},
		{"nil and nil", nil, nil, true},
		{"pointer and nil", p, nil, false},
		{"equal strings", "a", "a", true},
		{"maps cannot be compared", map[string]int{}, map[string]int{}, false},
		{"slices cannot be compared", []int{1}, []int{1}, false},
		{"different types", 1, "1", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := sameObject(tt.a, tt.b); got != tt.want {
				t.Errorf("sameObject = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestNamespaceIndex_FastPathFailsLikeTheFunction(t *testing.T) {
	tests := []struct {
		name string
		obj  interface{}
		// wantPanic is what the write panics with, formatted; "" wants
		// the object stored and indexed.
		wantPanic string
	}{
		{"a pod", podOnNode("team-a", "p", "n", 1), ""},
		{"a typed nil pod", (*v1.Pod)(nil), "runtime error: invalid memory address or nil pointer dereference"},
		{"a value without metadata", "not an object", `unable to calculate an index entry for key "k" on index "namespace": object has no meta: object does not implement the Object interfaces`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, via := range []string{"fast path", "function"} {
				fn := MetaNamespaceIndexFunc
				if via == "function" {
					// A different function value under another name
					// takes the general path.
					fn = func(obj interface{}) ([]string, error) { return MetaNamespaceIndexFunc(obj) }
				}
				name := NamespaceIndex
				s := newThreadSafeMap(Indexers{name: fn}, nil)
				p := capturePanic(func() { s.put("k", tt.obj) })
				if got := fmt.Sprint(p); (p != nil || tt.wantPanic != "") && got != tt.wantPanic {
					t.Fatalf("%s: panic = %q, want %q", via, got, tt.wantPanic)
				}
				if tt.wantPanic != "" {
					continue
				}
				got, _ := s.IndexKeys(name, "team-a")
				if diff := cmp.Diff([]string{"k"}, got); diff != "" {
					t.Errorf("%s: IndexKeys (-want +got):\n%s", via, diff)
				}
			}
		})
	}
}

func TestAddIndexers_AfterMostObjectsLeft(t *testing.T) {
	s := NewIndexer(MetaNamespaceKeyFunc, Indexers{})
	for i := 0; i < 3000; i++ {
		if err := s.Add(podOnNode("ns", strconv.Itoa(i), fmt.Sprint("n", i%3), i)); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 3000; i += 4 {
		for j := i; j < i+3; j++ {
			if err := s.Delete(podOnNode("ns", strconv.Itoa(j), "", 0)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := s.AddIndexers(Indexers{"node": byNodeIndex}); err != nil {
		t.Fatal(err)
	}
	m := &indexModel{objs: map[string]*v1.Pod{}, indexers: Indexers{"node": byNodeIndex}}
	for _, obj := range s.List() {
		p := obj.(*v1.Pod)
		m.objs["ns/"+p.Name] = p
	}
	if len(m.objs) != 750 {
		t.Fatalf("%d objects left, want 750", len(m.objs))
	}
	compareWithModel(t, s, m, "after AddIndexers")
}

func TestAppendIndexed_AppendsWhatByIndexReturns(t *testing.T) {
	s := NewIndexer(MetaNamespaceKeyFunc, Indexers{"node": byNodeIndex}).(*cache)
	for i, node := range []string{"n1", "n2", "n1"} {
		if err := s.Add(podOnNode("ns", fmt.Sprint("p", i), node, i)); err != nil {
			t.Fatal(err)
		}
	}
	prefix := []interface{}{"kept"}
	tests := []struct {
		name, index, value string
		wantKeys           []string
		wantErr            bool
	}{
		{"a value with objects", "node", "n1", []string{"ns/p0", "ns/p2"}, false},
		{"a value without objects", "node", "n9", []string{}, false},
		{"an unknown index", "zone", "a", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.appendIndexed(append([]interface{}(nil), prefix...), tt.index, tt.value)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error = %v, want error %v", err, tt.wantErr)
			}
			if len(got) == 0 || got[0] != "kept" {
				t.Fatalf("the prefix was not kept: %v", got)
			}
			if tt.wantErr {
				return
			}
			if diff := cmp.Diff(tt.wantKeys, keysOf(got[1:])); diff != "" {
				t.Errorf("appended (-want +got):\n%s", diff)
			}
			byIndex, _ := s.ByIndex(tt.index, tt.value)
			if diff := cmp.Diff(keysOf(byIndex), keysOf(got[1:])); diff != "" {
				t.Errorf("differs from ByIndex (-ByIndex +appendIndexed):\n%s", diff)
			}
		})
	}
}
