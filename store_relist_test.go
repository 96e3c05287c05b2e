package cache

import (
	"errors"
	"iter"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/klog/v2"
)

// pendingChange is one queued change as a relistCase gives it.
type pendingChange struct {
	key string
	pendingState
}

// judged is what relist told of one listed item.
type judged struct {
	Kind relistKind
	Old  interface{}
}

func TestRelist(t *testing.T) {
	a1, a2 := queuePod("a", "1"), queuePod("a", "2")
	b1, b2 := queuePod("b", "1"), queuePod("b", "2")
	c1, d1 := queuePod("c", "1"), queuePod("d", "1")
	reusedA := reusePod("a", "uid-a", "1")
	failKey := errors.New("no key")
	keyOf := func(obj interface{}) (string, error) {
		if obj == nil {
			return "", failKey
		}
		return MetaNamespaceKeyFunc(obj)
	}

	tests := map[string]struct {
		list    []interface{}
		held    []interface{} // what the store holds before; nil: items are not judged
		reuse   bool          // listed objects go through reuseCached against held first
		pending []pendingChange
		known   *fakeKnown // nil: none
		wantErr error
		want    []judged
		wantDFS []DeletedFinalStateUnknown
	}{
		"a key not held is added": {
			list: objs(a1),
			held: []interface{}{},
			want: []judged{{Kind: relistAdded}},
		},
		"a different object under a held key is updated": {
			list: objs(a2),
			held: objs(a1),
			want: []judged{{Kind: relistUpdated, Old: a1}},
		},
		"the very same object is unchanged (reuse)": {
			list: objs(a1),
			held: objs(a1),
			want: []judged{{Kind: relistUnchanged, Old: a1}},
		},
		"the same version, reused, is unchanged": {
			list:  objs(reusePod("a", "uid-a", "1"), reusePod("b", "uid-b", "2")),
			held:  objs(reusedA, reusePod("b", "uid-b", "1")),
			reuse: true,
			want:  []judged{{Kind: relistUnchanged, Old: reusedA}, {Kind: relistUpdated, Old: reusePod("b", "uid-b", "1")}},
		},
		"an equal but distinct object is an update, not unchanged": {
			list: objs(queuePod("a", "1")),
			held: objs(a1),
			want: []judged{{Kind: relistUpdated, Old: a1}},
		},
		"each duplicate is judged against what was held before": {
			list: objs(a1, a2),
			held: objs(a1),
			want: []judged{{Kind: relistUnchanged, Old: a1}, {Kind: relistUpdated, Old: a1}},
		},
		"a duplicate key is listed: no tombstone for it": {
			list:  objs(a1, a2),
			known: newFakeKnown(a1, b1),
			wantDFS: []DeletedFinalStateUnknown{
				tombstone("b", b1),
			},
		},
		"a known key missing from the list is a tombstone with the known object": {
			list:    objs(a2),
			known:   newFakeKnown(a1, b1, c1),
			wantDFS: []DeletedFinalStateUnknown{tombstone("b", b1), tombstone("c", c1)},
		},
		"a known key that vanished or fails its lookup is a tombstone without object": {
			list: objs(),
			known: func() *fakeKnown {
				k := newFakeKnown(a1, b1)
				k.failing[podKey("a")] = true
				k.vanished[podKey("b")] = true
				return k
			}(),
			wantDFS: []DeletedFinalStateUnknown{tombstone("a", nil), tombstone("b", nil)},
		},
		"a pending key missing from the list carries its newest pending object, before known keys": {
			list: objs(),
			pending: []pendingChange{
				{key: podKey("c"), pendingState: pendingState{obj: c1}},
				{key: podKey("b"), pendingState: pendingState{obj: b1}},
				{key: podKey("c"), pendingState: pendingState{obj: queuePod("c", "2")}},
			},
			known: newFakeKnown(a1, b2),
			wantDFS: []DeletedFinalStateUnknown{
				tombstone("c", queuePod("c", "2")),
				tombstone("b", b1), // the queue's state wins over the store's b2
				tombstone("a", a1),
			},
		},
		"a pending key whose newest change is a deletion needs no tombstone": {
			list: objs(),
			pending: []pendingChange{
				{key: podKey("a"), pendingState: pendingState{obj: a1}},
				{key: podKey("a"), pendingState: pendingState{obj: a1, deleted: true}},
			},
			known:   newFakeKnown(a1),
			wantDFS: nil,
		},
		"a pending key whose older change is a deletion gets one": {
			list: objs(),
			pending: []pendingChange{
				{key: podKey("a"), pendingState: pendingState{obj: a1, deleted: true}},
				{key: podKey("a"), pendingState: pendingState{obj: a2}},
			},
			wantDFS: []DeletedFinalStateUnknown{tombstone("a", a2)},
		},
		"listed keys are neither pending nor known tombstones": {
			list:    objs(a2, b2),
			pending: []pendingChange{{key: podKey("a"), pendingState: pendingState{obj: a1}}},
			known:   newFakeKnown(b1, d1),
			wantDFS: []DeletedFinalStateUnknown{tombstone("d", d1)},
		},
		"everything at once": {
			list:    objs(a1, b2, a1),
			held:    objs(a1, b1, c1),
			pending: []pendingChange{{key: podKey("d"), pendingState: pendingState{obj: d1}}},
			known:   newFakeKnown(a1, b1, c1),
			want: []judged{
				{Kind: relistUnchanged, Old: a1},
				{Kind: relistUpdated, Old: b1},
				{Kind: relistUnchanged, Old: a1},
			},
			wantDFS: []DeletedFinalStateUnknown{tombstone("d", d1), tombstone("c", c1)},
		},
		"an object without a key refuses the whole list": {
			list:    objs(a1, nil, b1),
			known:   newFakeKnown(c1),
			wantErr: KeyError{Obj: nil, Err: failKey},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			items, err := keyAll(tc.list, keyOf)
			if err != tc.wantErr {
				t.Fatalf("keyAll: err = %v, want %v", err, tc.wantErr)
			}
			if err != nil {
				if items != nil {
					t.Fatalf("keyAll returned %d items with its error", len(items))
				}
				return
			}
			run := relistRun{items: items, logger: klog.Background()}
			var got []judged
			if tc.held != nil {
				held := newFakeKnown()
				for _, obj := range tc.held {
					held.set(mustKey(t, obj), obj)
				}
				if tc.reuse {
					for i, it := range items {
						items[i].obj = reuseCached(held, it.key, it.obj)
					}
				}
				got = make([]judged, len(items))
				run.held = func(key string) (interface{}, bool) {
					obj, ok, _ := held.GetByKey(key)
					return obj, ok
				}
				run.each = func(i int, kind relistKind, old interface{}) { got[i] = judged{Kind: kind, Old: old} }
			}
			if tc.pending != nil {
				run.pending = pendingSeq(tc.pending)
			}
			if tc.known != nil {
				run.known = tc.known
			}
			dfs := relist(run)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("judged items (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantDFS, dfs); diff != "" {
				t.Errorf("tombstones (-want +got):\n%s", diff)
			}
		})
	}
}

func pendingSeq(changes []pendingChange) iter.Seq2[string, pendingState] {
	return func(yield func(string, pendingState) bool) {
		for _, c := range changes {
			if !yield(c.key, c.pendingState) {
				return
			}
		}
	}
}

func mustKey(t *testing.T, obj interface{}) string {
	t.Helper()
	key, err := MetaNamespaceKeyFunc(obj)
	if err != nil {
		t.Fatal(err)
	}
	return key
}
