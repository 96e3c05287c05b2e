package cache

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// This file fuzzes index maintenance: the fuzzer's bytes become a sequence
// of store operations (adds, updates, deletes by object and by tombstone,
// replaces, transactions, new indexes, objects without a key), applied to
// an Indexer and to the naive model of model_test.go, which are compared
// after every step. Some index functions fail: one returns an error for
// pods on node n3, one panics for pods named p7 or p17; an object is then
// stored but left out of that index, and the model's index answers skip it
// the same way.

// fuzzIndexers are the indexes an operation may add, by name.
var fuzzIndexers = Indexers{
	"node":         byNodeIndex,
	"labels":       byLabelValues,
	"picky":        pickyIndex,
	"panicky":      panickyIndex,
	NamespaceIndex: MetaNamespaceIndexFunc,
}

// fuzzIndexNames fixes the order in which an operation picks an index.
var fuzzIndexNames = []string{"node", "labels", "picky", "panicky", NamespaceIndex}

// pickyIndex indexes by app label but refuses pods on node n3.
func pickyIndex(obj interface{}) ([]string, error) {
	p := obj.(*v1.Pod)
	if p.Spec.NodeName == "n3" {
		return nil, errors.New("picky index refuses node n3")
	}
	return []string{p.Labels["app"]}, nil
}

// panickyIndex indexes by name but panics on names ending in 7.
func panickyIndex(obj interface{}) ([]string, error) {
	p := obj.(*v1.Pod)
	if strings.HasSuffix(p.Name, "7") {
		panic("panicky index: " + p.Name)
	}
	return []string{p.Name}, nil
}

// safeIndex is fn for the model: a panic counts as a failure.
func safeIndex(fn IndexFunc) IndexFunc {
	return func(obj interface{}) (vals []string, err error) {
		defer func() {
			if r := recover(); r != nil {
				vals, err = nil, fmt.Errorf("panic: %v", r)
			}
		}()
		return fn(obj)
	}
}

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

// indexFailsFor reports whether some index of the model fails on obj.
func (m *indexModel) indexFailsFor(obj interface{}) bool {
	for _, fn := range m.indexers {
		if _, err := fn(obj); err != nil {
			return true
		}
	}
	return false
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
	// checkWrite accepts an index failure only when an index fails on obj.
	checkWrite := func(op string, obj interface{}, err error) {
		t.Helper()
		switch {
		case err == nil:
		case isIndexFailure(err) && m.indexFailsFor(obj):
		default:
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
		checkWrite(name, p, write(p))
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
		fails := false
		m.objs = map[string]*v1.Pod{}
		for range n {
			p := in.pod(rv)
			key, _ := MetaNamespaceKeyFunc(p)
			m.objs[key] = p
			list = append(list, p)
			fails = fails || m.indexFailsFor(p)
		}
		if err := s.Replace(list, strconv.Itoa(rv)); err != nil && !(fails && isIndexFailure(err)) {
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
// a name it has, and an index whose function fails on a stored object.
func applyFuzzIndexerAddition(t *testing.T, in *fuzzBytes, s Indexer, m *indexModel) string {
	t.Helper()
	name := fuzzIndexNames[in.next()%len(fuzzIndexNames)]
	fn := safeIndex(fuzzIndexers[name])
	_, exists := m.indexers[name]
	refused := exists
	for _, p := range m.objs {
		if _, err := fn(p); err != nil {
			refused = true
		}
	}
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
		if terr != nil && !isIndexFailure(terr.Errors[len(terr.Errors)-1]) {
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
