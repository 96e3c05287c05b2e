package framework_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	framework "github.com/kcache/cache/testing"
)

// labelled returns pod(name) with the label app=app on node node.
func labelled(name, app, node string) *v1.Pod {
	p := pod(name)
	p.Labels = map[string]string{"app": app}
	p.Spec.NodeName = node
	return p
}

// errKind names the API error kinds the write tests expect.
func errKind(err error) string {
	switch {
	case err == nil:
		return ""
	case apierrors.IsAlreadyExists(err):
		return "AlreadyExists"
	case apierrors.IsNotFound(err):
		return "NotFound"
	case apierrors.IsConflict(err):
		return "Conflict"
	case apierrors.IsBadRequest(err):
		return "BadRequest"
	}
	return "other: " + err.Error()
}

func TestFakeControllerSource_WritesCheckLikeAnAPIServer(t *testing.T) {
	withRV := func(p *v1.Pod, rv string) *v1.Pod { p.ResourceVersion = rv; return p }
	noUID := func(p *v1.Pod) *v1.Pod { p.UID = ""; return p }
	type write func(f *framework.FakeControllerSource) (runtime.Object, error)
	create := func(p *v1.Pod) write {
		return func(f *framework.FakeControllerSource) (runtime.Object, error) { return f.Create(p) }
	}
	update := func(p *v1.Pod) write {
		return func(f *framework.FakeControllerSource) (runtime.Object, error) { return f.Update(p) }
	}
	remove := func(name string) write {
		return func(f *framework.FakeControllerSource) (runtime.Object, error) { return nil, f.Remove("ns", name) }
	}
	tests := map[string]struct {
		writes    []write
		wantErrs  []string
		wantList  []string
		wantLast  string // the last write's result, as name@rv/uid
		wantEvent []string
	}{
		"create stores with the next resource version and a UID": {
			writes:    []write{create(noUID(pod("a")))},
			wantErrs:  []string{""},
			wantList:  []string{"rv=1", "a@1"},
			wantLast:  "a@1/uid-1",
			wantEvent: []string{"ADDED a@1"},
		},
		"create keeps a given UID": {
			writes:   []write{create(pod("a"))},
			wantErrs: []string{""},
			wantList: []string{"rv=1", "a@1"},
			wantLast: "a@1/uid-a",
		},
		"create of an existing name": {
			writes:   []write{create(pod("a")), create(noUID(pod("a")))},
			wantErrs: []string{"", "AlreadyExists"},
			wantList: []string{"rv=1", "a@1"},
		},
		"create without a name": {
			writes:   []write{create(pod(""))},
			wantErrs: []string{"BadRequest"},
			wantList: []string{"rv=0"},
		},
		"update keeps the stored UID": {
			writes:    []write{create(pod("a")), update(noUID(pod("a")))},
			wantErrs:  []string{"", ""},
			wantList:  []string{"rv=2", "a@2"},
			wantLast:  "a@2/uid-a",
			wantEvent: []string{"ADDED a@1", "MODIFIED a@2"},
		},
		"update at the stored resource version": {
			writes:   []write{create(pod("a")), update(withRV(pod("a"), "1"))},
			wantErrs: []string{"", ""},
			wantList: []string{"rv=2", "a@2"},
			wantLast: "a@2/uid-a",
		},
		"update at a stale resource version": {
			writes:   []write{create(pod("a")), update(pod("a")), update(withRV(pod("a"), "1"))},
			wantErrs: []string{"", "", "Conflict"},
			wantList: []string{"rv=2", "a@2"},
		},
		"update of a missing object": {
			writes:   []write{update(pod("a"))},
			wantErrs: []string{"NotFound"},
			wantList: []string{"rv=0"},
		},
		"remove sends the deletion's resource version": {
			writes:    []write{create(pod("a")), remove("a")},
			wantErrs:  []string{"", ""},
			wantList:  []string{"rv=2"},
			wantEvent: []string{"ADDED a@1", "DELETED a@2"},
		},
		"remove of a missing object": {
			writes:   []write{remove("a")},
			wantErrs: []string{"NotFound"},
			wantList: []string{"rv=0"},
		},
		"create after remove": {
			writes:   []write{create(pod("a")), remove("a"), create(noUID(pod("a")))},
			wantErrs: []string{"", "", ""},
			wantList: []string{"rv=3", "a@3"},
			wantLast: "a@3/uid-3",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := framework.NewFakeControllerSource()
				defer f.Shutdown()
				w := watchFromStart(t, f)
				var gotErrs []string
				var last runtime.Object
				for _, write := range tc.writes {
					obj, err := write(f)
					gotErrs = append(gotErrs, errKind(err))
					last = obj
				}
				if diff := cmp.Diff(tc.wantErrs, gotErrs); diff != "" {
					t.Errorf("errors (-want +got):\n%s", diff)
				}
				list, err := f.List(metav1.ListOptions{})
				if err != nil {
					t.Fatalf("List: %v", err)
				}
				if diff := cmp.Diff(tc.wantList, listed(t, list)); diff != "" {
					t.Errorf("list (-want +got):\n%s", diff)
				}
				if tc.wantLast != "" {
					m, err := meta.Accessor(last)
					if err != nil {
						t.Fatalf("last write returned %T: %v", last, err)
					}
					if got := fmt.Sprintf("%s@%s/%s", m.GetName(), m.GetResourceVersion(), m.GetUID()); got != tc.wantLast {
						t.Errorf("last write returned %s, want %s", got, tc.wantLast)
					}
				}
				if tc.wantEvent != nil {
					synctest.Wait()
					if diff := cmp.Diff(tc.wantEvent, drain(t, w)); diff != "" {
						t.Errorf("events (-want +got):\n%s", diff)
					}
				}
			})
		})
	}
}

func TestFakeControllerSource_WritesDoNotTouchTheCallersObject(t *testing.T) {
	f := framework.NewFakeControllerSource()
	defer f.Shutdown()
	in := pod("a")
	if _, err := f.Create(in); err != nil {
		t.Fatalf("Create: %v", err)
	}
	if in.ResourceVersion != "" {
		t.Errorf("Create set the caller's resource version to %q", in.ResourceVersion)
	}
	got, ok := f.Get("ns", "a")
	if !ok {
		t.Fatal("Get: not found")
	}
	got.(*v1.Pod).Labels = map[string]string{"mutated": "yes"}
	again, _ := f.Get("ns", "a")
	if again.(*v1.Pod).Labels != nil {
		t.Error("Get handed out the stored object, not a copy")
	}
	if _, ok := f.Get("ns", "missing"); ok {
		t.Error("Get of a missing object reported one")
	}
}

func TestFakeControllerSource_ExpireEndsWatchesWith410AndHidesItsChanges(t *testing.T) {
	tests := map[string]struct {
		changes   func(framework.Tx) error
		wantErr   bool
		wantList  []string
		wantWatch []string
	}{
		"no changes": {
			wantList:  []string{"rv=3", "a@1", "b@2"},
			wantWatch: []string{"ERROR 410", "closed"},
		},
		"changes no watch sees": {
			changes: func(tx framework.Tx) error {
				if err := tx.Remove("ns", "a"); err != nil {
					return err
				}
				p, ok := tx.Get("ns", "b")
				if !ok {
					return fmt.Errorf("b not found")
				}
				if _, err := tx.Update(p); err != nil {
					return err
				}
				_, err := tx.Create(pod("c"))
				return err
			},
			wantList:  []string{"rv=6", "b@4", "c@5"},
			wantWatch: []string{"ERROR 410", "closed"},
		},
		"a failing change keeps those before it": {
			changes: func(tx framework.Tx) error {
				if err := tx.Remove("ns", "a"); err != nil {
					return err
				}
				return tx.Remove("ns", "missing")
			},
			wantErr:   true,
			wantList:  []string{"rv=4", "b@2"},
			wantWatch: []string{"ERROR 410", "closed"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := framework.NewFakeControllerSourceWithOptions(framework.FakeControllerSourceOptions{Paging: true})
				defer f.Shutdown()
				f.Add(pod("a"))
				f.Add(pod("b"))
				page, err := f.List(metav1.ListOptions{Limit: 1})
				if err != nil {
					t.Fatalf("List: %v", err)
				}
				token := page.(*v1.List).Continue
				w, err := f.Watch(metav1.ListOptions{ResourceVersion: "2"})
				if err != nil {
					t.Fatalf("Watch: %v", err)
				}
				defer w.Stop()
				if err := f.Expire(tc.changes); (err != nil) != tc.wantErr {
					t.Errorf("Expire: error = %v, want one: %v", err, tc.wantErr)
				}
				synctest.Wait()
				if diff := cmp.Diff(tc.wantWatch, drain(t, w)); diff != "" {
					t.Errorf("watch open during Expire (-want +got):\n%s", diff)
				}
				if _, err := f.Watch(metav1.ListOptions{ResourceVersion: "2"}); !isExpired(err) {
					t.Errorf("Watch from before Expire: error = %v, want 410", err)
				}
				if _, err := f.List(metav1.ListOptions{Limit: 1, Continue: token}); !isExpired(err) {
					t.Errorf("List with a continue token from before Expire: error = %v, want 410", err)
				}
				list, err := f.List(metav1.ListOptions{})
				if err != nil {
					t.Fatalf("List: %v", err)
				}
				if diff := cmp.Diff(tc.wantList, listed(t, list)); diff != "" {
					t.Errorf("list after Expire (-want +got):\n%s", diff)
				}
				st := f.Stats()
				if st.WatchesEnded != 1 || st.GoneErrors != 3 {
					t.Errorf("stats: %+v, want 1 watch ended and 3 410s (the ERROR event, the watch, the token)", st)
				}
			})
		})
	}
}

func TestFakeControllerSource_DropWatchesKeepsTheHistory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := framework.NewFakeControllerSource()
		defer f.Shutdown()
		f.Add(pod("a"))
		w1, err := f.Watch(metav1.ListOptions{ResourceVersion: "1"})
		if err != nil {
			t.Fatalf("Watch: %v", err)
		}
		defer w1.Stop()
		w2, err := f.Watch(metav1.ListOptions{ResourceVersion: "1"})
		if err != nil {
			t.Fatalf("Watch: %v", err)
		}
		w2.Stop()
		if n := f.DropWatches(); n != 1 {
			t.Errorf("DropWatches = %d, want 1 (the other watch was stopped)", n)
		}
		f.Add(pod("b"))
		synctest.Wait()
		if diff := cmp.Diff([]string{"closed"}, drain(t, w1)); diff != "" {
			t.Errorf("dropped watch (-want +got):\n%s", diff)
		}
		resumed, err := f.Watch(metav1.ListOptions{ResourceVersion: "1"})
		if err != nil {
			t.Fatalf("resuming: %v", err)
		}
		defer resumed.Stop()
		synctest.Wait()
		if diff := cmp.Diff([]string{"ADDED b@2"}, drain(t, resumed)); diff != "" {
			t.Errorf("resumed watch (-want +got):\n%s", diff)
		}
		if st := f.Stats(); st.WatchesEnded != 1 || st.Watches != 3 {
			t.Errorf("stats: %+v, want 3 watches, 1 ended", st)
		}
	})
}

func TestFakeControllerSource_WaitForWatches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := framework.NewFakeControllerSource()
		defer f.Shutdown()
		done := make(chan error, 1)
		go func() { done <- f.WaitForWatches(context.Background(), 2) }()
		w1, err := f.Watch(metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			t.Fatalf("Watch: %v", err)
		}
		defer w1.Stop()
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("WaitForWatches(2) returned %v with one watch open", err)
		default:
		}
		w2, err := f.Watch(metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			t.Fatalf("Watch: %v", err)
		}
		defer w2.Stop()
		if err := <-done; err != nil {
			t.Errorf("WaitForWatches: %v", err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := f.WaitForWatches(ctx, 3); err != context.Canceled {
			t.Errorf("WaitForWatches with a cancelled context = %v, want context.Canceled", err)
		}
	})
}

func TestFakeControllerSource_Selectors(t *testing.T) {
	podFields := func(obj runtime.Object) fields.Set {
		p := obj.(*v1.Pod)
		return fields.Set{"metadata.name": p.Name, "spec.nodeName": p.Spec.NodeName}
	}
	tests := map[string]struct {
		options   framework.FakeControllerSourceOptions
		list      metav1.ListOptions
		wantList  []string
		wantWatch []string
		wantErr   bool
	}{
		"ignored by default, as by client-go's fake": {
			list:      metav1.ListOptions{LabelSelector: "app=web"},
			wantList:  []string{"rv=3", "a@1", "b@2", "c@3"},
			wantWatch: []string{"MODIFIED a@4", "MODIFIED b@5"},
		},
		"label selector": {
			options:   framework.FakeControllerSourceOptions{Selectors: true},
			list:      metav1.ListOptions{LabelSelector: "app=web"},
			wantList:  []string{"rv=3", "a@1", "c@3"},
			wantWatch: []string{"MODIFIED a@4"},
		},
		"metadata field selector": {
			options:   framework.FakeControllerSourceOptions{Selectors: true},
			list:      metav1.ListOptions{FieldSelector: "metadata.name!=a"},
			wantList:  []string{"rv=3", "b@2", "c@3"},
			wantWatch: []string{"MODIFIED b@5"},
		},
		"field selector over FieldsOf": {
			options:   framework.FakeControllerSourceOptions{Selectors: true, FieldsOf: podFields},
			list:      metav1.ListOptions{FieldSelector: "spec.nodeName=n2"},
			wantList:  []string{"rv=3", "b@2"},
			wantWatch: []string{"MODIFIED b@5"},
		},
		"both, paged": {
			options:   framework.FakeControllerSourceOptions{Selectors: true, FieldsOf: podFields, Paging: true},
			list:      metav1.ListOptions{LabelSelector: "app=web", FieldSelector: "spec.nodeName=n1"},
			wantList:  []string{"rv=3", "a@1"},
			wantWatch: []string{"MODIFIED a@4"},
		},
		"a selector that does not parse": {
			options: framework.FakeControllerSourceOptions{Selectors: true},
			list:    metav1.ListOptions{LabelSelector: "app in ("},
			wantErr: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := framework.NewFakeControllerSourceWithOptions(tc.options)
				defer f.Shutdown()
				f.Add(labelled("a", "web", "n1"))
				f.Add(labelled("b", "db", "n2"))
				f.Add(labelled("c", "web", "n3"))
				list, err := f.List(tc.list)
				watchOpts := tc.list
				watchOpts.ResourceVersion = "3"
				w, werr := f.Watch(watchOpts)
				if tc.wantErr {
					if !apierrors.IsBadRequest(err) || !apierrors.IsBadRequest(werr) {
						t.Errorf("List error = %v, Watch error = %v; want 400s", err, werr)
					}
					return
				}
				if err != nil || werr != nil {
					t.Fatalf("List: %v; Watch: %v", err, werr)
				}
				defer w.Stop()
				if diff := cmp.Diff(tc.wantList, listed(t, list)); diff != "" {
					t.Errorf("list (-want +got):\n%s", diff)
				}
				f.Modify(labelled("a", "web", "n1"))
				f.Modify(labelled("b", "db", "n2"))
				synctest.Wait()
				if diff := cmp.Diff(tc.wantWatch, drain(t, w)); diff != "" {
					t.Errorf("watch (-want +got):\n%s", diff)
				}
			})
		})
	}
}

func TestFakeControllerSource_StreamingListHonoursSelectors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := framework.NewFakeControllerSourceWithOptions(framework.FakeControllerSourceOptions{Selectors: true})
		defer f.Shutdown()
		f.Add(labelled("a", "web", "n1"))
		f.Add(labelled("b", "db", "n2"))
		w, err := f.Watch(metav1.ListOptions{
			SendInitialEvents: ptr.To(true), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
			AllowWatchBookmarks: true, LabelSelector: "app=web",
		})
		if err != nil {
			t.Fatalf("Watch: %v", err)
		}
		defer w.Stop()
		var got []string
		for range 2 {
			got = append(got, describe(t, <-w.ResultChan()))
		}
		if diff := cmp.Diff([]string{"ADDED a@1", "BOOKMARK @2"}, got); diff != "" {
			t.Errorf("streaming list (-want +got):\n%s", diff)
		}
	})
}

func TestFakeControllerSource_RefuseStreamingLists(t *testing.T) {
	tests := map[string]struct {
		refuse  bool
		wantErr bool
	}{
		"served by default":    {},
		"refused when told to": {refuse: true, wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f := framework.NewFakeControllerSourceWithOptions(framework.FakeControllerSourceOptions{RefuseStreamingLists: tc.refuse})
			defer f.Shutdown()
			f.Add(pod("a"))
			if got := f.IsWatchListSemanticsUnSupported(); got != tc.refuse {
				t.Errorf("IsWatchListSemanticsUnSupported = %v, want %v", got, tc.refuse)
			}
			w, err := f.Watch(metav1.ListOptions{SendInitialEvents: ptr.To(true), AllowWatchBookmarks: true})
			if tc.wantErr {
				if !apierrors.IsBadRequest(err) {
					t.Errorf("streaming list: error = %v, want 400", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("streaming list: %v", err)
			}
			w.Stop()
		})
	}
}

func TestFakeControllerSource_NewListTypesTheList(t *testing.T) {
	f := framework.NewFakeControllerSourceWithOptions(framework.FakeControllerSourceOptions{
		NewList: func() runtime.Object { return &v1.PodList{} },
	})
	defer f.Shutdown()
	f.Add(pod("a"))
	list, err := f.List(metav1.ListOptions{})
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	pods, ok := list.(*v1.PodList)
	if !ok {
		t.Fatalf("List returned %T, want *v1.PodList", list)
	}
	if diff := cmp.Diff([]string{"rv=1", "a@1"}, listed(t, pods)); diff != "" {
		t.Errorf("list (-want +got):\n%s", diff)
	}
}

func TestFakeControllerSource_ShareObjectsAndHandOut(t *testing.T) {
	// expand models decoding: the source stores a pod without labels and
	// hands out a fresh one with them.
	expand := func(stored runtime.Object) runtime.Object {
		p := stored.(*v1.Pod).DeepCopy()
		p.Labels = map[string]string{"expanded": "true"}
		return p
	}
	tests := map[string]struct {
		options      framework.FakeControllerSourceOptions
		wantSame     bool
		wantExpanded bool
	}{
		"default: copies":                    {},
		"shared: the caller's objects":       {options: framework.FakeControllerSourceOptions{ShareObjects: true}, wantSame: true},
		"handed out: fresh objects built so": {options: framework.FakeControllerSourceOptions{HandOut: expand}, wantExpanded: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := framework.NewFakeControllerSourceWithOptions(tc.options)
				defer f.Shutdown()
				in := pod("a")
				f.Add(in)
				stream, err := f.Watch(metav1.ListOptions{SendInitialEvents: ptr.To(true), AllowWatchBookmarks: true})
				if err != nil {
					t.Fatalf("Watch: %v", err)
				}
				defer stream.Stop()
				changed := pod("a")
				f.Modify(changed)
				list, err := f.List(metav1.ListOptions{})
				if err != nil {
					t.Fatalf("List: %v", err)
				}
				got := map[string]runtime.Object{"listed": list.(*v1.List).Items[0].Object}
				synctest.Wait()
				for range 3 {
					e := <-stream.ResultChan()
					got[string(e.Type)] = e.Object
				}
				if m, _ := meta.Accessor(got[string(watch.Bookmark)]); tc.wantExpanded != (m.GetLabels()["expanded"] == "true") {
					t.Errorf("bookmark built by HandOut = %v, want %v", !tc.wantExpanded, tc.wantExpanded)
				}
				want := map[string]runtime.Object{"listed": changed, string(watch.Added): in, string(watch.Modified): changed}
				for what, obj := range want {
					p := got[what].(*v1.Pod)
					if same := p == obj; same != tc.wantSame {
						t.Errorf("%s: the caller's object itself = %v, want %v", what, same, tc.wantSame)
					}
					if expanded := p.Labels["expanded"] == "true"; expanded != tc.wantExpanded {
						t.Errorf("%s: built by HandOut = %v, want %v", what, expanded, tc.wantExpanded)
					}
				}
			})
		})
	}
}
