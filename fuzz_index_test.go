package cache

import (
	"errors"
	"fmt"
	"strconv"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// This file fuzzes index maintenance: the fuzzer's bytes become a sequence
// of store operations (adds, updates, deletes by object and by tombstone,
// replaces, transactions, new indexes, objects without a key), applied to
// an Indexer and to the naive model of model_test.go, which are compared
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
