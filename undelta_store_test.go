package cache

import (
	"fmt"
	"sort"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

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
