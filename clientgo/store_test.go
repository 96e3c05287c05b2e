package clientgo

import (
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	toolscache "k8s.io/client-go/tools/cache"

	kcache "github.com/kcache/cache"
)

func labelsEverything() labels.Selector { return labels.Everything() }

// keysOf describes objs, sorted.
func keysOf(objs []interface{}) []string {
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		out = append(out, describe(o))
	}
	sort.Strings(out)
	return out
}

// TestIndexer_Methods runs each client-go Indexer method through the
// adapter over a kcache indexer holding ns1/a, ns1/b and ns2/c, and checks
// the result and what the kcache indexer then holds.
func TestIndexer_Methods(t *testing.T) {
	a, b, c := newPod("ns1", "a"), newPod("ns1", "b"), newPod("ns2", "c")
	tests := map[string]struct {
		do   func(t *testing.T, idx toolscache.Indexer) interface{}
		want interface{}
		// left is what kcache holds afterwards.
		left []string
	}{
		"Add": {
			do:   func(t *testing.T, idx toolscache.Indexer) interface{} { return idx.Add(newPod("ns3", "d")) },
			want: nil, left: []string{"ns1/a", "ns1/b", "ns2/c", "ns3/d"},
		},
		"Update": {
			do: func(t *testing.T, idx toolscache.Indexer) interface{} {
				p := a.DeepCopy()
				p.Labels["app"] = "z"
				if err := idx.Update(p); err != nil {
					return err
				}
				return keysOf(mustList(idx.ByIndex("app", "z")))
			},
			want: []string{"ns1/a"}, left: []string{"ns1/a", "ns1/b", "ns2/c"},
		},
		"Delete object": {
			do:   func(t *testing.T, idx toolscache.Indexer) interface{} { return idx.Delete(a) },
			want: nil, left: []string{"ns1/b", "ns2/c"},
		},
		"Delete client-go tombstone": {
			do: func(t *testing.T, idx toolscache.Indexer) interface{} {
				return idx.Delete(toolscache.DeletedFinalStateUnknown{Key: "ns1/b", Obj: b})
			},
			want: nil, left: []string{"ns1/a", "ns2/c"},
		},
		"Delete client-go ExplicitKey": {
			do: func(t *testing.T, idx toolscache.Indexer) interface{} {
				return idx.Delete(toolscache.ExplicitKey("ns2/c"))
			},
			want: nil, left: []string{"ns1/a", "ns1/b"},
		},
		"Get object": {
			do: func(t *testing.T, idx toolscache.Indexer) interface{} {
				return mustGet(idx.Get(newPod("ns1", "a")))
			},
			want: "ns1/a", left: []string{"ns1/a", "ns1/b", "ns2/c"},
		},
		"Get client-go tombstone": {
			do: func(t *testing.T, idx toolscache.Indexer) interface{} {
				return mustGet(idx.Get(toolscache.DeletedFinalStateUnknown{Key: "ns1/b"}))
			},
			want: "ns1/b", left: []string{"ns1/a", "ns1/b", "ns2/c"},
		},
		"Get client-go ExplicitKey": {
			do: func(t *testing.T, idx toolscache.Indexer) interface{} {
				return mustGet(idx.Get(toolscache.ExplicitKey("ns2/c")))
			},
			want: "ns2/c", left: []string{"ns1/a", "ns1/b", "ns2/c"},
		},
		"GetByKey": {
			do:   func(t *testing.T, idx toolscache.Indexer) interface{} { return mustGet(idx.GetByKey("ns1/a")) },
			want: "ns1/a", left: []string{"ns1/a", "ns1/b", "ns2/c"},
		},
		"GetByKey missing": {
			do:   func(t *testing.T, idx toolscache.Indexer) interface{} { return mustGet(idx.GetByKey("ns9/x")) },
			want: "missing", left: []string{"ns1/a", "ns1/b", "ns2/c"},
		},
		"List": {
			do:   func(t *testing.T, idx toolscache.Indexer) interface{} { return keysOf(idx.List()) },
			want: []string{"ns1/a", "ns1/b", "ns2/c"}, left: []string{"ns1/a", "ns1/b", "ns2/c"},
		},
		"ListKeys": {
			do: func(t *testing.T, idx toolscache.Indexer) interface{} {
				k := idx.ListKeys()
				sort.Strings(k)
				return k
			},
			want: []string{"ns1/a", "ns1/b", "ns2/c"}, left: []string{"ns1/a", "ns1/b", "ns2/c"},
		},
		"Replace": {
			do: func(t *testing.T, idx toolscache.Indexer) interface{} {
				if err := idx.Replace([]interface{}{c, newPod("ns3", "d")}, "9"); err != nil {
					return err
				}
				return idx.(rvStore).LastStoreSyncResourceVersion()
			},
			want: "9", left: []string{"ns2/c", "ns3/d"},
		},
		"Bookmark": {
			do: func(t *testing.T, idx toolscache.Indexer) interface{} {
				idx.(rvStore).Bookmark("42")
				return idx.(rvStore).LastStoreSyncResourceVersion()
			},
			want: "42", left: []string{"ns1/a", "ns1/b", "ns2/c"},
		},
		"Resync": {
			do:   func(t *testing.T, idx toolscache.Indexer) interface{} { return idx.Resync() },
			want: nil, left: []string{"ns1/a", "ns1/b", "ns2/c"},
		},
		"Index": {
			do: func(t *testing.T, idx toolscache.Indexer) interface{} {
				return keysOf(mustList(idx.Index(toolscache.NamespaceIndex, newPod("ns1", "x"))))
			},
			want: []string{"ns1/a", "ns1/b"}, left: []string{"ns1/a", "ns1/b", "ns2/c"},
		},
		"IndexKeys": {
			do: func(t *testing.T, idx toolscache.Indexer) interface{} {
				k, err := idx.IndexKeys(toolscache.NamespaceIndex, "ns1")
				if err != nil {
					return err
				}
				sort.Strings(k)
				return k
			},
			want: []string{"ns1/a", "ns1/b"}, left: []string{"ns1/a", "ns1/b", "ns2/c"},
		},
		"ByIndex": {
			do: func(t *testing.T, idx toolscache.Indexer) interface{} {
				return keysOf(mustList(idx.ByIndex(toolscache.NamespaceIndex, "ns2")))
			},
			want: []string{"ns2/c"}, left: []string{"ns1/a", "ns1/b", "ns2/c"},
		},
		"ByIndex unknown index": {
			do: func(t *testing.T, idx toolscache.Indexer) interface{} {
				_, err := idx.ByIndex("nope", "x")
				return err != nil
			},
			want: true, left: []string{"ns1/a", "ns1/b", "ns2/c"},
		},
		"ListIndexFuncValues": {
			do: func(t *testing.T, idx toolscache.Indexer) interface{} {
				v := idx.ListIndexFuncValues(toolscache.NamespaceIndex)
				sort.Strings(v)
				return v
			},
			want: []string{"ns1", "ns2"}, left: []string{"ns1/a", "ns1/b", "ns2/c"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			kc := kcache.NewIndexer(kcache.DeletionHandlingMetaNamespaceKeyFunc,
				kcache.Indexers{kcache.NamespaceIndex: kcache.MetaNamespaceIndexFunc,
					"app": func(obj interface{}) ([]string, error) { return []string{obj.(*v1.Pod).Labels["app"]}, nil }})
			for _, p := range []*v1.Pod{a, b, c} {
				if err := kc.Add(p); err != nil {
					t.Fatal(err)
				}
			}
			idx := &indexer{kc: kc}
			if diff := cmp.Diff(tc.want, tc.do(t, idx)); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.left, keysOf(kc.List())); diff != "" {
				t.Errorf("kcache holds (-want +got):\n%s", diff)
			}
		})
	}
}

func mustList(objs []interface{}, err error) []interface{} {
	if err != nil {
		return []interface{}{err}
	}
	return objs
}

func mustGet(obj interface{}, ok bool, err error) string {
	switch {
	case err != nil:
		return err.Error()
	case !ok:
		return "missing"
	}
	return describe(obj)
}

// TestIndexer_AddIndexersRoundTrip adds a client-go index function through
// the adapter and reads it back as client-go's type.
func TestIndexer_AddIndexersRoundTrip(t *testing.T) {
	kc := kcache.NewIndexer(kcache.MetaNamespaceKeyFunc, nil)
	idx := &indexer{kc: kc}
	if err := idx.AddIndexers(toolscache.Indexers{"ns": toolscache.MetaNamespaceIndexFunc}); err != nil {
		t.Fatal(err)
	}
	if err := idx.Add(newPod("ns1", "a")); err != nil {
		t.Fatal(err)
	}
	got := idx.GetIndexers()
	if len(got) != 1 || got["ns"] == nil {
		t.Fatalf("GetIndexers = %v, want ns", got)
	}
	if v, err := got["ns"](newPod("x", "y")); err != nil || len(v) != 1 || v[0] != "x" {
		t.Errorf("returned index func gives %v, %v", v, err)
	}
	if keys, err := kc.IndexKeys("ns", "ns1"); err != nil || len(keys) != 1 {
		t.Errorf("kcache index ns1 = %v, %v", keys, err)
	}
	if toKcacheIndexers(nil) != nil || toClientGoIndexers(nil) != nil {
		t.Error("nil indexers did not stay nil")
	}
}

// TestTombstoneTranslation pins both directions of the tombstone and key
// translation.
func TestTombstoneTranslation(t *testing.T) {
	p := newPod("ns", "a")
	tests := map[string]struct {
		in   interface{}
		conv func(interface{}) interface{}
		want interface{}
	}{
		"kcache tombstone to client-go": {
			in: kcache.DeletedFinalStateUnknown{Key: "ns/a", Obj: p}, conv: toClientGoObject,
			want: toolscache.DeletedFinalStateUnknown{Key: "ns/a", Obj: p},
		},
		"object stays": {in: p, conv: toClientGoObject, want: p},
		"client-go tombstone to kcache": {
			in: toolscache.DeletedFinalStateUnknown{Key: "ns/a", Obj: p}, conv: keyInput,
			want: kcache.DeletedFinalStateUnknown{Key: "ns/a", Obj: p},
		},
		"client-go key to kcache": {in: toolscache.ExplicitKey("ns/a"), conv: keyInput, want: kcache.ExplicitKey("ns/a")},
		"object key input stays":  {in: p, conv: keyInput, want: p},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.conv(tc.in)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// rvStore is what client-go v0.36 added to Store; the view has it on every
// minor (on v0.35 client-go's Store interface just does not ask for it).
type rvStore interface {
	Bookmark(rv string)
	LastStoreSyncResourceVersion() string
}
