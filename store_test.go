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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// storeOp is one step of a table test against an Indexer.
type storeOp func(Indexer) error

func add(obj interface{}) storeOp    { return func(s Indexer) error { return s.Add(obj) } }
func update(obj interface{}) storeOp { return func(s Indexer) error { return s.Update(obj) } }
func del(obj interface{}) storeOp    { return func(s Indexer) error { return s.Delete(obj) } }
func replace(rv string, objs ...interface{}) storeOp {
	return func(s Indexer) error { return s.Replace(objs, rv) }
}

func TestIndexer_Contracts(t *testing.T) {
	tests := map[string]struct {
		ops       []storeOp
		wantKeys  []string
		wantNodes map[string][]string // node -> keys
	}{
		"add stores and indexes": {
			ops:       []storeOp{add(podOnNode("ns", "a", "n1", 1))},
			wantKeys:  []string{"ns/a"},
			wantNodes: map[string][]string{"n1": {"ns/a"}},
		},
		"update moves the object between index values": {
			ops:       []storeOp{add(podOnNode("ns", "a", "n1", 1)), update(podOnNode("ns", "a", "n2", 2))},
			wantKeys:  []string{"ns/a"},
			wantNodes: map[string][]string{"n2": {"ns/a"}},
		},
		"add of an existing key acts as update": {
			ops:       []storeOp{add(podOnNode("ns", "a", "n1", 1)), add(podOnNode("ns", "a", "n2", 2))},
			wantKeys:  []string{"ns/a"},
			wantNodes: map[string][]string{"n2": {"ns/a"}},
		},
		"update of an absent key acts as add": {
			ops:       []storeOp{update(podOnNode("ns", "a", "n1", 1))},
			wantKeys:  []string{"ns/a"},
			wantNodes: map[string][]string{"n1": {"ns/a"}},
		},
		"delete removes from map and index": {
			ops:       []storeOp{add(podOnNode("ns", "a", "n1", 1)), add(podOnNode("ns", "b", "n1", 1)), del(podOnNode("ns", "a", "n1", 1))},
			wantKeys:  []string{"ns/b"},
			wantNodes: map[string][]string{"n1": {"ns/b"}},
		},
		"delete of an absent key is a no-op": {
			ops:       []storeOp{add(podOnNode("ns", "a", "n1", 1)), del(podOnNode("ns", "zz", "n1", 1))},
			wantKeys:  []string{"ns/a"},
			wantNodes: map[string][]string{"n1": {"ns/a"}},
		},
		"delete finds the object by key, whatever the stale copy says": {
			ops:       []storeOp{add(podOnNode("ns", "a", "n1", 1)), del(podOnNode("ns", "a", "elsewhere", 0))},
			wantKeys:  []string{},
			wantNodes: map[string][]string{},
		},
		"replace swaps content and rebuilds indexes": {
			ops: []storeOp{
				add(podOnNode("ns", "a", "n1", 1)),
				replace("9", podOnNode("ns", "b", "n2", 3), podOnNode("ns", "c", "n2", 4)),
			},
			wantKeys:  []string{"ns/b", "ns/c"},
			wantNodes: map[string][]string{"n2": {"ns/b", "ns/c"}},
		},
		"replace with nothing empties": {
			ops:       []storeOp{add(podOnNode("ns", "a", "n1", 1)), replace("9")},
			wantKeys:  []string{},
			wantNodes: map[string][]string{},
		},
		"objects without an index value are not indexed": {
			ops:       []storeOp{add(podOnNode("ns", "a", "", 1))},
			wantKeys:  []string{"ns/a"},
			wantNodes: map[string][]string{},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := NewIndexer(MetaNamespaceKeyFunc, Indexers{"node": byNodeIndex})
			for i, op := range tc.ops {
				if err := op(s); err != nil {
					t.Fatalf("op %d: %v", i, err)
				}
			}
			if diff := cmp.Diff(tc.wantKeys, sorted(s.ListKeys())); diff != "" {
				t.Errorf("ListKeys (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantKeys, keysOf(s.List())); diff != "" {
				t.Errorf("List (-want +got):\n%s", diff)
			}
			gotNodes := map[string][]string{}
			for _, node := range s.ListIndexFuncValues("node") {
				keys, err := s.IndexKeys("node", node)
				if err != nil {
					t.Fatal(err)
				}
				gotNodes[node] = sorted(keys)
				objs, err := s.ByIndex("node", node)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(gotNodes[node], keysOf(objs)); diff != "" {
					t.Errorf("ByIndex(%s) disagrees with IndexKeys:\n%s", node, diff)
				}
			}
			if diff := cmp.Diff(tc.wantNodes, gotNodes); diff != "" {
				t.Errorf("node index (-want +got):\n%s", diff)
			}
		})
	}
}

// byLabelValues indexes a pod under the value of every label: a
// multi-valued index.
func byLabelValues(obj interface{}) ([]string, error) {
	var out []string
	for _, v := range obj.(*v1.Pod).Labels {
		out = append(out, v)
	}
	return out, nil
}

func TestIndexer_IndexReturnsTheUnionWithoutDuplicates(t *testing.T) {
	s := NewIndexer(MetaNamespaceKeyFunc, Indexers{"labels": byLabelValues})
	for _, p := range []*v1.Pod{
		testPod("ns", "a", "1", "x", "red", "y", "blue"),
		testPod("ns", "b", "1", "x", "red"),
		testPod("ns", "c", "1", "x", "blue"),
		testPod("ns", "d", "1", "x", "green"),
	} {
		if err := s.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Index("labels", testPod("", "probe", "", "p", "red", "q", "blue"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"ns/a", "ns/b", "ns/c"}, keysOf(got)); diff != "" {
		t.Errorf("Index (-want +got):\n%s", diff)
	}
	one, err := s.Index("labels", testPod("", "probe", "", "p", "green"))
	if err != nil || len(one) != 1 {
		t.Errorf("single-valued probe: %v, %v", keysOf(one), err)
	}
	if diff := cmp.Diff([]string{"blue", "green", "red"}, sorted(s.ListIndexFuncValues("labels"))); diff != "" {
		t.Errorf("values (-want +got):\n%s", diff)
	}
}

func TestIndexer_UnknownIndexIsAnError(t *testing.T) {
	s := NewIndexer(MetaNamespaceKeyFunc, Indexers{"node": byNodeIndex})
	if _, err := s.ByIndex("nope", "x"); err == nil {
		t.Error("ByIndex: want error")
	}
	if _, err := s.IndexKeys("nope", "x"); err == nil {
		t.Error("IndexKeys: want error")
	}
	if _, err := s.Index("nope", testPod("ns", "a", "1")); err == nil {
		t.Error("Index: want error")
	}
	if got := s.ListIndexFuncValues("nope"); len(got) != 0 {
		t.Errorf("ListIndexFuncValues = %v, want empty", got)
	}
}

func TestIndexer_AddIndexersIndexesExistingObjects(t *testing.T) {
	s := NewIndexer(MetaNamespaceKeyFunc, Indexers{})
	for i := 0; i < 5; i++ {
		if err := s.Add(podOnNode("ns", fmt.Sprint("p", i), fmt.Sprint("n", i%2), i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.AddIndexers(Indexers{"node": byNodeIndex, NamespaceIndex: MetaNamespaceIndexFunc}); err != nil {
		t.Fatal(err)
	}
	keys, _ := s.IndexKeys("node", "n0")
	if diff := cmp.Diff([]string{"ns/p0", "ns/p2", "ns/p4"}, keys); diff != "" { // sorted, as in the reference
		t.Errorf("node n0 (-want +got):\n%s", diff)
	}
	if err := s.AddIndexers(Indexers{"node": byNodeIndex}); err == nil || !strings.Contains(err.Error(), "node") {
		t.Errorf("duplicate name: err = %v, want a conflict naming it", err)
	}
	if got := len(s.GetIndexers()); got != 2 {
		t.Errorf("GetIndexers has %d, want 2", got)
	}
	// Later writes maintain the added index too.
	if err := s.Delete(podOnNode("ns", "p0", "", 0)); err != nil {
		t.Fatal(err)
	}
	keys, _ = s.IndexKeys("node", "n0")
	if diff := cmp.Diff([]string{"ns/p2", "ns/p4"}, sorted(keys)); diff != "" {
		t.Errorf("after delete (-want +got):\n%s", diff)
	}
}

// An index function that fails on a stored object panics AddIndexers with
// client-go's message.
func TestIndexer_AddIndexersFailingOnAStoredObjectPanics(t *testing.T) {
	s := NewIndexer(MetaNamespaceKeyFunc, Indexers{})
	_ = s.Add(testPod("ns", "good", "1"))
	_ = s.Add(testPod("ns", "bad", "1"))
	failing := func(obj interface{}) ([]string, error) {
		if obj.(*v1.Pod).Name == "bad" {
			return nil, errors.New("cannot index bad")
		}
		return []string{"v"}, nil
	}
	p := capturePanic(func() { _ = s.AddIndexers(Indexers{"failing": failing}) })
	const want = `unable to calculate an index entry for key "ns/bad" on index "failing": cannot index bad`
	if fmt.Sprint(p) != want {
		t.Fatalf("AddIndexers panicked with %v, want %q", p, want)
	}
}

func TestStore_BadInputGivesKeyErrors(t *testing.T) {
	s := NewIndexer(MetaNamespaceKeyFunc, Indexers{NamespaceIndex: MetaNamespaceIndexFunc})
	for name, obj := range map[string]interface{}{
		"nil":         nil,
		"no metadata": "a string",
	} {
		t.Run(name, func(t *testing.T) {
			var ke KeyError
			for op, err := range map[string]error{
				"add":    s.Add(obj),
				"update": s.Update(obj),
				"delete": s.Delete(obj),
			} {
				if !errors.As(err, &ke) {
					t.Errorf("%s: err = %v, want KeyError", op, err)
				}
			}
			if _, _, err := s.Get(obj); !errors.As(err, &ke) {
				t.Errorf("get: err = %v, want KeyError", err)
			}
			if err := s.Replace([]interface{}{testPod("ns", "a", "1"), obj}, "1"); !errors.As(err, &ke) {
				t.Errorf("replace: err = %v, want KeyError", err)
			}
			if len(s.ListKeys()) != 0 {
				t.Errorf("store changed: %v", s.ListKeys())
			}
		})
	}
}

// A nil pointer of a type with metadata is not a key error: the key
// function panics on it, in client-go as here.
func TestStore_NilPointerPanicsTheKeyFunction(t *testing.T) {
	s := NewStore(MetaNamespaceKeyFunc)
	for op, call := range map[string]func(){
		"add":    func() { _ = s.Add((*v1.Pod)(nil)) },
		"update": func() { _ = s.Update((*v1.Pod)(nil)) },
		"delete": func() { _ = s.Delete((*v1.Pod)(nil)) },
		"get":    func() { _, _, _ = s.Get((*v1.Pod)(nil)) },
	} {
		if p := capturePanic(call); fmt.Sprint(p) != nilDereference {
			t.Errorf("%s panicked with %v, want %q", op, p, nilDereference)
		}
	}
}

// A panicking key function panics the store's call, as in client-go.
func TestStore_KeyFuncPanicPropagates(t *testing.T) {
	s := NewStore(func(interface{}) (string, error) { panic("bad key func") })
	if p := capturePanic(func() { _ = s.Add(testPod("ns", "a", "1")) }); p != "bad key func" {
		t.Fatalf("Add panicked with %v, want the key function's panic", p)
	}
}

// An index function that fails makes Add, Update, Replace and Transaction
// panic, naming the key and the index in client-go's words; a panicking
// one panics with its own value. The indexer is still usable afterwards.
func TestIndexer_FailingIndexFuncPanicsTheWrite(t *testing.T) {
	flaky := func(obj interface{}) ([]string, error) {
		switch obj.(*v1.Pod).Labels["mode"] {
		case "error":
			return nil, errors.New("index says no")
		case "panic":
			panic("index function exploded")
		}
		return []string{obj.(*v1.Pod).Labels["team"]}, nil
	}
	const errText = `unable to calculate an index entry for key "ns/a" on index "team": index says no`
	writes := map[string]func(s Indexer, p *v1.Pod){
		"add":    func(s Indexer, p *v1.Pod) { _ = s.Add(p) },
		"update": func(s Indexer, p *v1.Pod) { _ = s.Update(p) },
		"replace": func(s Indexer, p *v1.Pod) {
			_ = s.Replace([]interface{}{p}, "2")
		},
		"transaction": func(s Indexer, p *v1.Pod) {
			_ = s.(TransactionStore).Transaction(Transaction{Type: TransactionTypeUpdate, Object: p})
		},
	}
	modes := map[string]string{"error": errText, "panic": "index function exploded"}
	for wname, write := range writes {
		for mode, want := range modes {
			t.Run(wname+"/"+mode, func(t *testing.T) {
				s := NewIndexer(MetaNamespaceKeyFunc, Indexers{"team": flaky, NamespaceIndex: MetaNamespaceIndexFunc})
				mustOK(t, s.Add(testPod("ns", "a", "1", "team", "red")))
				p := capturePanic(func() { write(s, testPod("ns", "a", "2", "team", "blue", "mode", mode)) })
				if fmt.Sprint(p) != want {
					t.Fatalf("panic = %v, want %q", p, want)
				}
				// client-go stores the object before indexing it: the new
				// version is stored and in the healthy index; the failing
				// index keeps the old entry, except after a Replace, which
				// rebuilds every index.
				if obj, ok, _ := s.GetByKey("ns/a"); !ok || obj.(*v1.Pod).ResourceVersion != "2" {
					t.Errorf("after the panic the store holds %v", obj)
				}
				wantTeam := map[string][]string{"red": {"ns/a"}, "blue": nil}
				if wname == "replace" {
					wantTeam["red"] = nil
				}
				checkIndexKeys(t, s, "team", wantTeam)
				checkIndexKeys(t, s, NamespaceIndex, map[string][]string{"ns": {"ns/a"}})

				mustOK(t, s.Update(testPod("ns", "a", "3", "team", "green")))
				checkIndexKeys(t, s, "team", map[string][]string{"green": {"ns/a"}, "red": nil, "blue": nil})
				mustOK(t, s.Delete(testPod("ns", "a", "3")))
				checkIndexKeys(t, s, "team", map[string][]string{"green": nil, "red": nil})
				checkIndexKeys(t, s, NamespaceIndex, map[string][]string{"ns": nil})
			})
		}
	}
}

// checkIndexKeys checks the keys filed under each value of the named index.
func checkIndexKeys(t *testing.T, s Indexer, index string, want map[string][]string) {
	t.Helper()
	for value, keys := range want {
		got, err := s.IndexKeys(index, value)
		if err != nil {
			t.Errorf("IndexKeys(%s, %s): %v", index, value, err)
			continue
		}
		if len(got) == 0 && len(keys) == 0 {
			continue
		}
		if !slices.Equal(sorted(got), keys) {
			t.Errorf("IndexKeys(%s, %s) = %v, want %v", index, value, got, keys)
		}
	}
}

// AddIndexers with a function that fails on stored objects adds the
// indexes all the same and then panics, as client-go's does: the first
// failing object is filed in the new indexes that succeeded on it, the
// later ones in none, and the names are taken.
func TestIndexer_AddIndexersFailingOnStoredObjects(t *testing.T) {
	team := func(obj interface{}) ([]string, error) {
		if obj.(*v1.Pod).Labels["mode"] == "error" {
			return nil, errors.New("index says no")
		}
		return []string{obj.(*v1.Pod).Labels["team"]}, nil
	}
	zone := func(obj interface{}) ([]string, error) { return []string{"z1"}, nil }
	s := NewIndexer(MetaNamespaceKeyFunc, Indexers{})
	mustOK(t, s.Add(testPod("ns", "a", "1", "team", "red")))
	mustOK(t, s.Add(testPod("ns", "b", "1", "team", "red", "mode", "error")))
	mustOK(t, s.Add(testPod("ns", "c", "1", "team", "red", "mode", "error")))
	p := capturePanic(func() { _ = s.AddIndexers(Indexers{"team": team, "zone": zone}) })
	if want := `unable to calculate an index entry for key "ns/b" on index "team": index says no`; fmt.Sprint(p) != want {
		t.Fatalf("panic = %v, want %q", p, want)
	}
	checkIndexKeys(t, s, "team", map[string][]string{"red": {"ns/a"}})
	checkIndexKeys(t, s, "zone", map[string][]string{"z1": {"ns/a", "ns/b"}})
	if err := s.AddIndexers(Indexers{"zone": zone}); err == nil {
		t.Error("adding zone again: no error, want the name to be taken")
	}
}

func TestIndexer_IndexFuncThatFailsOnlyOnOldObjectStillMoves(t *testing.T) {
	calls := 0
	// Succeeds the first time it sees the object, fails afterwards: the
	// store must still unfile the old value when the object changes.
	fickle := func(obj interface{}) ([]string, error) {
		p := obj.(*v1.Pod)
		if p.ResourceVersion == "1" {
			calls++
			if calls > 1 {
				return nil, errors.New("changed its mind")
			}
		}
		return []string{p.Labels["team"]}, nil
	}
	s := NewIndexer(MetaNamespaceKeyFunc, Indexers{"team": fickle})
	_ = s.Add(testPod("ns", "a", "1", "team", "red"))
	if err := s.Update(testPod("ns", "a", "2", "team", "blue")); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"blue"}, s.ListIndexFuncValues("team")); diff != "" {
		t.Errorf("stale value left behind (-want +got):\n%s", diff)
	}
}

func TestStore_WithTransformerStoresTheTransformedObject(t *testing.T) {
	stripLabels := func(obj interface{}) (interface{}, error) {
		p := obj.(*v1.Pod).DeepCopy()
		p.Labels = nil
		return p, nil
	}
	s := NewStore(MetaNamespaceKeyFunc, WithTransformer(stripLabels))
	_ = s.Add(testPod("ns", "a", "1", "k", "v"))
	_ = s.Replace([]interface{}{testPod("ns", "b", "1", "k", "v")}, "5")
	_ = s.Update(testPod("ns", "b", "2", "k", "v"))
	for _, obj := range s.List() {
		if obj.(*v1.Pod).Labels != nil {
			t.Errorf("%s kept its labels", obj.(*v1.Pod).Name)
		}
	}

	failing := NewStore(MetaNamespaceKeyFunc, WithTransformer(func(interface{}) (interface{}, error) {
		return nil, errors.New("no")
	}))
	if err := failing.Add(testPod("ns", "a", "1")); errText(err) != "transforming: no" {
		t.Errorf("err = %v, want client-go's %q", err, "transforming: no")
	}
	panicking := NewStore(MetaNamespaceKeyFunc, WithTransformer(func(interface{}) (interface{}, error) {
		panic("transform exploded")
	}))
	if p := capturePanic(func() { _ = panicking.Replace([]interface{}{testPod("ns", "a", "1")}, "1") }); p != "transform exploded" {
		t.Errorf("panicking transform: panic %v, want the transform's", p)
	}
	if len(failing.List())+len(panicking.List()) != 0 {
		t.Error("failed transforms stored something")
	}
}

func TestStore_LastStoreSyncResourceVersionFollowsWritesAndBookmarks(t *testing.T) {
	steps := []struct {
		name string
		do   func(Store)
		want string
	}{
		{"replace", func(s Store) { _ = s.Replace([]interface{}{testPod("ns", "a", "5")}, "10") }, "10"},
		{"add", func(s Store) { _ = s.Add(testPod("ns", "b", "11")) }, "11"},
		{"bookmark", func(s Store) { s.Bookmark("15") }, "15"},
		{"delete carries the object's version", func(s Store) { _ = s.Delete(testPod("ns", "b", "16")) }, "16"},
		{"explicit-key delete has no version", func(s Store) { _ = s.Delete(ExplicitKey("ns/a")) }, "16"},
	}
	s := NewStore(MetaNamespaceKeyFunc)
	for _, step := range steps {
		step.do(s)
		if got := s.LastStoreSyncResourceVersion(); got != step.want {
			t.Errorf("after %s: rv = %q, want %q", step.name, got, step.want)
		}
	}
}

func TestStore_LastStoreSyncResourceVersionIsEmptyWithoutAtomicFIFO(t *testing.T) {
	defer setFeatureForTesting(featureAtomicFIFO, false)()
	s := NewStore(MetaNamespaceKeyFunc)
	_ = s.Replace(nil, "10")
	if got := s.LastStoreSyncResourceVersion(); got != "" {
		t.Errorf("rv = %q, want empty with the gate off", got)
	}
}

func TestStore_TransactionAppliesTheGoodAndReportsTheBad(t *testing.T) {
	s := NewIndexer(MetaNamespaceKeyFunc, Indexers{"node": byNodeIndex})
	_ = s.Add(podOnNode("ns", "old", "n1", 1))
	txs := s.(TransactionStore)
	terr := txs.Transaction(
		Transaction{Type: TransactionTypeAdd, Object: podOnNode("ns", "a", "n1", 2)},
		Transaction{Type: TransactionTypeUpdate, Object: "no metadata"},
		Transaction{Type: TransactionTypeDelete, Object: podOnNode("ns", "old", "n1", 3)},
		Transaction{Type: TransactionTypeUpdate, Object: podOnNode("ns", "a", "n2", 4)},
	)
	if terr == nil {
		t.Fatal("want a TransactionError")
	}
	if diff := cmp.Diff([]int{0, 2, 3}, terr.SuccessfulIndices); diff != "" {
		t.Errorf("SuccessfulIndices (-want +got):\n%s", diff)
	}
	if terr.TotalTransactions != 4 || len(terr.Errors) != 1 || terr.Error() == "" {
		t.Errorf("TransactionError = %+v", terr)
	}
	if diff := cmp.Diff([]string{"ns/a"}, sorted(s.ListKeys())); diff != "" {
		t.Errorf("keys (-want +got):\n%s", diff)
	}
	keys, _ := s.IndexKeys("node", "n2")
	if diff := cmp.Diff([]string{"ns/a"}, keys); diff != "" {
		t.Errorf("node n2 (-want +got):\n%s", diff)
	}
	if got := s.LastStoreSyncResourceVersion(); got != "4" {
		t.Errorf("rv = %q, want the last transaction's 4", got)
	}
	if err := txs.Transaction(Transaction{Type: TransactionTypeAdd, Object: testPod("ns", "b", "5")}); err != nil {
		t.Errorf("clean transaction: %v", err)
	}
}

func TestThreadSafeStore_UsesCallerKeys(t *testing.T) {
	s := NewThreadSafeStore(Indexers{"node": byNodeIndex}, Indices{})
	s.Add("k1", podOnNode("ns", "a", "n1", 1))
	s.Update("k1", podOnNode("ns", "a", "n2", 2))
	s.Add("k2", podOnNode("ns", "b", "n2", 3))
	if obj, ok := s.Get("k1"); !ok || obj.(*v1.Pod).Spec.NodeName != "n2" {
		t.Errorf("Get(k1) = %v, %v", obj, ok)
	}
	keys, _ := s.IndexKeys("node", "n2")
	if diff := cmp.Diff([]string{"k1", "k2"}, sorted(keys)); diff != "" {
		t.Errorf("n2 (-want +got):\n%s", diff)
	}
	s.DeleteWithObject("k1", podOnNode("ns", "a", "n2", 7))
	s.Delete("missing")
	if got := s.LastStoreSyncResourceVersion(); got != "7" {
		t.Errorf("rv = %q, want 7", got)
	}
	s.Replace(map[string]interface{}{"k9": podOnNode("ns", "z", "n9", 9)}, "20")
	if diff := cmp.Diff([]string{"n9"}, s.ListIndexFuncValues("node")); diff != "" {
		t.Errorf("after replace (-want +got):\n%s", diff)
	}
	if err := s.Resync(); err != nil {
		t.Error(err)
	}
	// Add and Update have no error result: a failing index panics, with
	// client-go's message.
	s2 := NewThreadSafeStore(Indexers{"bad": func(interface{}) ([]string, error) { return nil, errors.New("x") }}, nil)
	p := capturePanic(func() { s2.Add("k", testPod("ns", "a", "1")) })
	if want := `unable to calculate an index entry for key "k" on index "bad": x`; fmt.Sprint(p) != want {
		t.Errorf("Add panicked with %v, want %q", p, want)
	}
}

// recordingGauge remembers the last value set.
type recordingGauge struct{ last float64 }

func (g *recordingGauge) Set(v float64) { g.last = v }

type rvOnlyProvider struct {
	noopInformerMetricsProvider
	gauge *recordingGauge
}

func (p rvOnlyProvider) NewStoreResourceVersionMetric(InformerNameAndResource) GaugeMetric {
	return p.gauge
}

func TestStore_WithStoreMetricsPublishesNumericResourceVersions(t *testing.T) {
	defer ResetInformerNamesForTesting()
	name, err := NewInformerName("store-metrics-test")
	if err != nil {
		t.Fatal(err)
	}
	g := &recordingGauge{}
	s := NewStore(MetaNamespaceKeyFunc, WithStoreMetrics(name.WithResource(podsGVR), rvOnlyProvider{gauge: g}))
	_ = s.Add(testPod("ns", "a", "42"))
	if g.last != 42 {
		t.Errorf("gauge = %v, want 42", g.last)
	}
	s.Bookmark("not-a-number")
	if g.last != 42 {
		t.Errorf("gauge = %v after a non-numeric version, want it unchanged", g.last)
	}
}

// undeltaPod returns a pod whose Spec.NodeName tells versions apart.
func undeltaPod(name, node string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Spec:       v1.PodSpec{NodeName: node},
	}
}

// undeltaSnapshot renders a pushed snapshot as sorted "name@node" strings.
func undeltaSnapshot(list []interface{}) []string {
	out := make([]string, 0, len(list))
	for _, obj := range list {
		p := obj.(*v1.Pod)
		out = append(out, p.Name+"@"+p.Spec.NodeName)
	}
	sort.Strings(out)
	return out
}

func TestUndeltaStore_PushesTheCompleteStateAfterEachChange(t *testing.T) {
	cases := map[string]struct {
		ops        func(u *UndeltaStore) []error
		wantErrs   []bool
		wantPushes [][]string
	}{
		"add, update, delete": {
			ops: func(u *UndeltaStore) []error {
				return []error{
					u.Add(undeltaPod("a", "n1")),
					u.Add(undeltaPod("b", "n1")),
					u.Update(undeltaPod("a", "n2")),
					u.Delete(undeltaPod("b", "")),
				}
			},
			wantErrs: []bool{false, false, false, false},
			wantPushes: [][]string{
				{"a@n1"},
				{"a@n1", "b@n1"},
				{"a@n2", "b@n1"},
				{"a@n2"},
			},
		},
		"replace pushes the new content": {
			ops: func(u *UndeltaStore) []error {
				return []error{
					u.Add(undeltaPod("a", "n1")),
					u.Replace([]interface{}{undeltaPod("b", "n1"), undeltaPod("c", "n1")}, "10"),
					u.Replace(nil, "11"),
				}
			},
			wantErrs:   []bool{false, false, false},
			wantPushes: [][]string{{"a@n1"}, {"b@n1", "c@n1"}, {}},
		},
		"deleting an absent key still pushes": {
			ops: func(u *UndeltaStore) []error {
				return []error{u.Delete(undeltaPod("zz", ""))}
			},
			wantErrs:   []bool{false},
			wantPushes: [][]string{{}},
		},
		"failed changes push nothing": {
			ops: func(u *UndeltaStore) []error {
				return []error{
					u.Add("no metadata"),
					u.Update(42),
					u.Delete(struct{}{}),
					u.Replace([]interface{}{undeltaPod("a", "n1"), "no metadata"}, "5"),
				}
			},
			wantErrs: []bool{true, true, true, true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var pushes [][]string
			u := NewUndeltaStore(func(list []interface{}) {
				pushes = append(pushes, undeltaSnapshot(list))
			}, MetaNamespaceKeyFunc)
			var gotErrs []bool
			for _, err := range tc.ops(u) {
				gotErrs = append(gotErrs, err != nil)
			}
			if diff := cmp.Diff(tc.wantErrs, gotErrs); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantPushes, pushes); diff != "" {
				t.Errorf("pushes (-want +got):\n%s", diff)
			}
		})
	}
}

func TestUndeltaStore_ReadsGoToTheUnderlyingStore(t *testing.T) {
	u := NewUndeltaStore(nil, MetaNamespaceKeyFunc) // nil PushFunc: changes still work
	a := undeltaPod("a", "n1")
	if err := u.Add(a); err != nil {
		t.Fatal(err)
	}
	got, ok, err := u.Get(undeltaPod("a", ""))
	if err != nil || !ok || got != a {
		t.Errorf("Get = %v, %v, %v; want the stored pod", got, ok, err)
	}
	if diff := cmp.Diff([]string{"ns/a"}, u.ListKeys()); diff != "" {
		t.Errorf("ListKeys (-want +got):\n%s", diff)
	}
}

func TestUndeltaStore_ConcurrentChangesPushOncePerChange(t *testing.T) {
	const writers, perWriter = 4, 50
	var mu sync.Mutex
	pushes := 0
	u := NewUndeltaStore(func([]interface{}) {
		mu.Lock()
		defer mu.Unlock()
		pushes++
	}, MetaNamespaceKeyFunc)

	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range perWriter {
				if err := u.Add(undeltaPod(fmt.Sprintf("w%d-%d", w, i), "n")); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if pushes != writers*perWriter {
		t.Errorf("got %d pushes, want one per change: %d", pushes, writers*perWriter)
	}
	if got := len(u.List()); got != writers*perWriter {
		t.Errorf("store holds %d objects, want %d", got, writers*perWriter)
	}
}

// recordingCustomStore returns a FakeCustomStore whose functions append
// "Method(args)" to calls and return the given error, pod and key list.
func recordingCustomStore(calls *[]string, err error, pod *v1.Pod) *FakeCustomStore {
	record := func(format string, args ...interface{}) {
		*calls = append(*calls, fmt.Sprintf(format, args...))
	}
	name := func(obj interface{}) string { return obj.(*v1.Pod).Name }
	return &FakeCustomStore{
		AddFunc:    func(obj interface{}) error { record("Add(%s)", name(obj)); return err },
		UpdateFunc: func(obj interface{}) error { record("Update(%s)", name(obj)); return err },
		DeleteFunc: func(obj interface{}) error { record("Delete(%s)", name(obj)); return err },
		ListFunc:   func() []interface{} { record("List()"); return []interface{}{pod} },
		ListKeysFunc: func() []string {
			record("ListKeys()")
			return []string{pod.Name}
		},
		GetFunc: func(obj interface{}) (interface{}, bool, error) {
			record("Get(%s)", name(obj))
			return pod, true, err
		},
		GetByKeyFunc: func(key string) (interface{}, bool, error) {
			record("GetByKey(%s)", key)
			return pod, true, err
		},
		ReplaceFunc: func(list []interface{}, rv string) error {
			record("Replace(%d,%s)", len(list), rv)
			return err
		},
		ResyncFunc:   func() error { record("Resync()"); return err },
		BookmarkFunc: func(rv string) { record("Bookmark(%s)", rv) },
		LastStoreSyncResourceVersionFunc: func() string {
			record("LastStoreSyncResourceVersion()")
			return "42"
		},
	}
}

// customStoreResults runs every Store method once on s and summarises what
// each returned.
func customStoreResults(s Store, pod *v1.Pod) []string {
	var out []string
	show := func(method string, results ...interface{}) {
		out = append(out, fmt.Sprintf("%s -> %v", method, results))
	}
	show("Add", s.Add(pod))
	show("Update", s.Update(pod))
	show("Delete", s.Delete(pod))
	show("List", len(s.List()))
	show("ListKeys", s.ListKeys())
	item, ok, err := s.Get(pod)
	show("Get", item != nil, ok, err)
	item, ok, err = s.GetByKey("k")
	show("GetByKey", item != nil, ok, err)
	show("Replace", s.Replace([]interface{}{pod, pod}, "7"))
	show("Resync", s.Resync())
	s.Bookmark("8")
	show("LastStoreSyncResourceVersion", s.LastStoreSyncResourceVersion())
	return out
}

func TestFakeCustomStore_DelegatesToSetFunctionsOnly(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	errStore := errors.New("store failed")
	cases := map[string]struct {
		store     func(calls *[]string) *FakeCustomStore
		wantCalls []string
		want      []string
	}{
		"no functions set: zero results": {
			store: func(*[]string) *FakeCustomStore { return &FakeCustomStore{} },
			want: []string{
				"Add -> [<nil>]", "Update -> [<nil>]", "Delete -> [<nil>]",
				"List -> [0]", "ListKeys -> [[]]",
				"Get -> [false false <nil>]", "GetByKey -> [false false <nil>]",
				"Replace -> [<nil>]", "Resync -> [<nil>]",
				"LastStoreSyncResourceVersion -> []",
			},
		},
		"every function set: each is called with the arguments": {
			store: func(calls *[]string) *FakeCustomStore { return recordingCustomStore(calls, errStore, pod) },
			wantCalls: []string{
				"Add(p)", "Update(p)", "Delete(p)", "List()", "ListKeys()",
				"Get(p)", "GetByKey(k)", "Replace(2,7)", "Resync()",
				"Bookmark(8)", "LastStoreSyncResourceVersion()",
			},
			want: []string{
				"Add -> [store failed]", "Update -> [store failed]", "Delete -> [store failed]",
				"List -> [1]", "ListKeys -> [[p]]",
				"Get -> [true true store failed]", "GetByKey -> [true true store failed]",
				"Replace -> [store failed]", "Resync -> [store failed]",
				"LastStoreSyncResourceVersion -> [42]",
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var calls []string
			got := customStoreResults(tc.store(&calls), pod)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("results (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantCalls, calls); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
		})
	}
}
