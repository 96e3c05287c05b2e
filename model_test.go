package cache

import (
	"fmt"
	"math/rand"
	"os"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
)

// testSeed returns the seed from $SEED, or a fresh one; either way it is
// logged so that a failure can be replayed.
func testSeed(t testing.TB) int64 {
	seed := time.Now().UnixNano()
	if s := os.Getenv("SEED"); s != "" {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("bad SEED %q: %v", s, err)
		}
		seed = v
	}
	t.Logf("seed %d (rerun with SEED=%d)", seed, seed)
	return seed
}

// indexModel is the naive truth an Indexer is compared with: a plain map,
// with every index answer computed by scanning it.
type indexModel struct {
	objs     map[string]*v1.Pod
	indexers Indexers
}

func (m *indexModel) byIndex(name, value string) []string {
	var keys []string
	for key, obj := range m.objs {
		vals, _ := m.indexers[name](obj)
		for _, v := range vals {
			if v == value {
				keys = append(keys, key)
				break
			}
		}
	}
	sort.Strings(keys)
	if keys == nil {
		keys = []string{}
	}
	return keys
}

func (m *indexModel) values(name string) []string {
	seen := map[string]bool{}
	for _, obj := range m.objs {
		vals, _ := m.indexers[name](obj)
		for _, v := range vals {
			seen[v] = true
		}
	}
	out := []string{}
	for v := range seen {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

// modelPod draws a pod from a small universe so operations collide.
func modelPod(r *rand.Rand, rv int) *v1.Pod {
	p := podOnNode(fmt.Sprint("ns", r.Intn(3)), fmt.Sprint("p", r.Intn(20)), fmt.Sprint("n", r.Intn(4)), rv)
	if r.Intn(5) == 0 {
		p.Spec.NodeName = ""
	}
	p.Labels = map[string]string{"app": fmt.Sprint("app", r.Intn(3))}
	if r.Intn(3) == 0 {
		p.Labels["tier"] = fmt.Sprint("t", r.Intn(2))
	}
	return p
}

func TestIndexer_MatchesNaiveModelUnderRandomOperations(t *testing.T) {
	r := rand.New(rand.NewSource(testSeed(t)))
	all := Indexers{"node": byNodeIndex, NamespaceIndex: MetaNamespaceIndexFunc, "labels": byLabelValues}
	for run := 0; run < 20; run++ {
		s := NewIndexer(MetaNamespaceKeyFunc, Indexers{"node": byNodeIndex})
		m := &indexModel{objs: map[string]*v1.Pod{}, indexers: Indexers{"node": byNodeIndex}}
		for step := 0; step < 300; step++ {
			desc := applyRandomOp(t, r, s, m, all, step)
			compareWithModel(t, s, m, fmt.Sprintf("run %d step %d (%s)", run, step, desc))
			if t.Failed() {
				return
			}
		}
	}
}

func applyRandomOp(t *testing.T, r *rand.Rand, s Indexer, m *indexModel, all Indexers, rv int) string {
	switch op := r.Intn(20); {
	case op < 8:
		p := modelPod(r, rv)
		key, _ := MetaNamespaceKeyFunc(p)
		if err := s.Add(p); err != nil {
			t.Fatal(err)
		}
		m.objs[key] = p
		return "add " + key
	case op < 14:
		p := modelPod(r, rv)
		key, _ := MetaNamespaceKeyFunc(p)
		if err := s.Update(p); err != nil {
			t.Fatal(err)
		}
		m.objs[key] = p
		return "update " + key
	case op < 18:
		p := modelPod(r, rv)
		key, _ := MetaNamespaceKeyFunc(p)
		if err := s.Delete(p); err != nil {
			t.Fatal(err)
		}
		delete(m.objs, key)
		return "delete " + key
	case op < 19:
		n := r.Intn(15)
		list := make([]interface{}, 0, n)
		m.objs = map[string]*v1.Pod{}
		for i := 0; i < n; i++ {
			p := modelPod(r, rv)
			key, _ := MetaNamespaceKeyFunc(p)
			m.objs[key] = p
			list = append(list, p)
		}
		if err := s.Replace(list, strconv.Itoa(rv)); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("replace with %d", n)
	default:
		for name, fn := range all {
			if _, have := m.indexers[name]; !have {
				if err := s.AddIndexers(Indexers{name: fn}); err != nil {
					t.Fatal(err)
				}
				m.indexers[name] = fn
				return "add indexer " + name
			}
		}
		if err := s.AddIndexers(Indexers{"node": byNodeIndex}); err == nil {
			t.Fatal("re-adding an indexer name must fail")
		}
		return "re-add indexer (refused)"
	}
}

func compareWithModel(t *testing.T, s Indexer, m *indexModel, where string) {
	t.Helper()
	want := []string{}
	for key := range m.objs {
		want = append(want, key)
	}
	sort.Strings(want)
	if diff := cmp.Diff(want, sorted(s.ListKeys())); diff != "" {
		t.Fatalf("%s: ListKeys (-model +store):\n%s", where, diff)
	}
	if diff := cmp.Diff(want, keysOf(s.List())); diff != "" {
		t.Fatalf("%s: List (-model +store):\n%s", where, diff)
	}
	for key, p := range m.objs {
		got, ok, err := s.GetByKey(key)
		if err != nil || !ok || got != p {
			t.Fatalf("%s: GetByKey(%s) = %v, %v, %v", where, key, got, ok, err)
		}
	}
	for name := range m.indexers {
		values := m.values(name)
		if diff := cmp.Diff(values, sorted(s.ListIndexFuncValues(name))); diff != "" {
			t.Fatalf("%s: ListIndexFuncValues(%s) (-model +store):\n%s", where, name, diff)
		}
		for _, v := range values {
			wantKeys := m.byIndex(name, v)
			keys, err := s.IndexKeys(name, v)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(wantKeys, sorted(keys)); diff != "" {
				t.Fatalf("%s: IndexKeys(%s, %s) (-model +store):\n%s", where, name, v, diff)
			}
			objs, err := s.ByIndex(name, v)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(wantKeys, keysOf(objs)); diff != "" {
				t.Fatalf("%s: ByIndex(%s, %s) (-model +store):\n%s", where, name, v, diff)
			}
		}
	}
}
