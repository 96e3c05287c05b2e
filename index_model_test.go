package cache

import (
	"errors"
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

// FuzzIndexer_MatchesModel fuzzes index maintenance: the fuzzer's bytes become a sequence
// of store operations (adds, updates, deletes by object and by tombstone,
// replaces, transactions, new indexes, objects without a key), applied to
// an Indexer and to the naive model above, which are compared
// after every step. Index functions here never fail: a failing one panics
// the write, as in client-go (TestIndexFunctionFailure_Panics pins that).

// fuzzIndexers are the indexes an operation may add, by name.
var fuzzIndexers = Indexers{
	"node":         byNodeIndex,
	"labels":       byLabelValues,
	NamespaceIndex: MetaNamespaceIndexFunc,
}

// fuzzIndexNames fixes the order in which an operation picks an index.
var fuzzIndexNames = []string{"node", "labels", NamespaceIndex}

// fuzzBytes hands out the fuzzer's bytes; past the end it gives zeros.
type fuzzBytes struct{ data []byte }

func (b *fuzzBytes) more() bool { return len(b.data) > 0 }

func (b *fuzzBytes) next() int {
	if len(b.data) == 0 {
		return 0
	}
	v := b.data[0]
	b.data = b.data[1:]
	return int(v)
}

// pod draws a pod from a small universe, so that operations collide.
func (b *fuzzBytes) pod(rv int) *v1.Pod {
	shape := b.next()
	p := podOnNode(fmt.Sprint("ns", shape%3), fmt.Sprint("p", b.next()%20), "", rv)
	if node := (shape / 3) % 5; node < 4 {
		p.Spec.NodeName = fmt.Sprint("n", node)
	}
	p.Labels = map[string]string{"app": fmt.Sprint("app", (shape/15)%3)}
	if shape >= 128 {
		p.Labels["tier"] = fmt.Sprint("app", shape%2) // may repeat the app value
	}
	return p
}

func FuzzIndexer_MatchesModel(f *testing.F) {
	for _, seed := range [][]byte{
		{},
		{0, 1, 2, 0, 4, 5, 1, 1, 2},
		{4, 2, 0, 9, 7, 0, 10, 17, 1, 10, 17, 2, 10, 17},
		{4, 3, 0, 200, 7, 3, 5, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 6, 200, 7},
		{5, 4, 0, 1, 2, 1, 3, 4, 2, 5, 6, 0, 7, 8, 7, 4, 0, 4, 4},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		in := &fuzzBytes{data: data}
		s := NewIndexer(DeletionHandlingMetaNamespaceKeyFunc, Indexers{"node": byNodeIndex})
		m := &indexModel{objs: map[string]*v1.Pod{}, indexers: Indexers{"node": byNodeIndex}}
		for step := 1; in.more() && step <= 300; step++ {
			desc := applyFuzzIndexOp(t, in, s, m, step)
			compareWithModel(t, s, m, fmt.Sprintf("step %d (%s)", step, desc))
		}
	})
}

// applyFuzzIndexOp applies one decoded operation to the store and the
// model, checks its error, and describes it.
func applyFuzzIndexOp(t *testing.T, in *fuzzBytes, s Indexer, m *indexModel, rv int) string {
	t.Helper()
	checkWrite := func(op string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: unexpected error %v", op, err)
		}
	}
	switch op := in.next() % 8; op {
	case 0, 1:
		p := in.pod(rv)
		key, _ := MetaNamespaceKeyFunc(p)
		write, name := s.Add, "add"
		if op == 1 {
			write, name = s.Update, "update"
		}
		checkWrite(name, write(p))
		m.objs[key] = p
		return name + " " + key
	case 2:
		p := in.pod(rv)
		key, _ := MetaNamespaceKeyFunc(p)
		if err := s.Delete(p); err != nil {
			t.Fatalf("delete: %v", err)
		}
		delete(m.objs, key)
		return "delete " + key
	case 3:
		p := in.pod(rv)
		key, _ := MetaNamespaceKeyFunc(p)
		if err := s.Delete(DeletedFinalStateUnknown{Key: key, Obj: p}); err != nil {
			t.Fatalf("delete by tombstone: %v", err)
		}
		delete(m.objs, key)
		return "delete tombstone " + key
	case 4:
		n := in.next() % 12
		list := make([]interface{}, 0, n)
		m.objs = map[string]*v1.Pod{}
		for range n {
			p := in.pod(rv)
			key, _ := MetaNamespaceKeyFunc(p)
			m.objs[key] = p
			list = append(list, p)
		}
		if err := s.Replace(list, strconv.Itoa(rv)); err != nil {
			t.Fatalf("replace: unexpected error %v", err)
		}
		return fmt.Sprintf("replace with %d", n)
	case 5:
		return applyFuzzIndexerAddition(t, in, s, m)
	case 6:
		return applyFuzzTransaction(t, in, s, m, rv)
	default:
		obj := &metaless{Name: "keyless"}
		var keyErr KeyError
		if err := s.Add(obj); !errors.As(err, &keyErr) {
			t.Fatalf("add without a key: got %v, want a KeyError", err)
		}
		return "add without a key"
	}
}

// applyFuzzIndexerAddition adds one of fuzzIndexers. The store must refuse
// a name it has.
func applyFuzzIndexerAddition(t *testing.T, in *fuzzBytes, s Indexer, m *indexModel) string {
	t.Helper()
	name := fuzzIndexNames[in.next()%len(fuzzIndexNames)]
	fn := fuzzIndexers[name]
	_, exists := m.indexers[name]
	refused := exists
	err := s.AddIndexers(Indexers{name: fuzzIndexers[name]})
	switch {
	case refused && err == nil:
		t.Fatalf("add indexer %s: accepted, want refused (exists=%v)", name, exists)
	case !refused && err != nil:
		t.Fatalf("add indexer %s: %v", name, err)
	case !refused:
		m.indexers[name] = fn
		return "add indexer " + name
	}
	return "add indexer " + name + " (refused)"
}

// applyFuzzTransaction applies a batch of up to five adds, updates and
// deletes, one of them possibly without a key.
func applyFuzzTransaction(t *testing.T, in *fuzzBytes, s Indexer, m *indexModel, rv int) string {
	t.Helper()
	ts, ok := s.(TransactionStore)
	if !ok {
		t.Fatalf("%T is not a TransactionStore", s)
	}
	n := 1 + in.next()%5
	txns := make([]Transaction, 0, n)
	var want []int
	for i := range n {
		kind := in.next() % 4
		if kind == 3 {
			txns = append(txns, Transaction{Type: TransactionTypeAdd, Object: &metaless{}})
			continue
		}
		p := in.pod(rv)
		key, _ := MetaNamespaceKeyFunc(p)
		typ := []TransactionType{TransactionTypeAdd, TransactionTypeUpdate, TransactionTypeDelete}[kind]
		txns = append(txns, Transaction{Type: typ, Object: p})
		want = append(want, i)
		if typ == TransactionTypeDelete {
			delete(m.objs, key)
		} else {
			m.objs[key] = p
		}
	}
	terr := ts.Transaction(txns...)
	if len(want) == n {
		if terr != nil {
			t.Fatalf("transaction: unexpected error %v", terr)
		}
		return fmt.Sprintf("transaction of %d", n)
	}
	if terr == nil {
		t.Fatalf("transaction with keyless objects: no error")
	}
	if fmt.Sprint(terr.SuccessfulIndices) != fmt.Sprint(want) {
		t.Fatalf("transaction: applied %v, want %v", terr.SuccessfulIndices, want)
	}
	return fmt.Sprintf("transaction of %d, %d without a key", n, n-len(want))
}
