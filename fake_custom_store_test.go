package cache

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

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
