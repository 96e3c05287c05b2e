package framework_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	cache "github.com/kcache/cache"
	framework "github.com/kcache/cache/testing"
)

// The fakes are ListerWatchers, as reflectors and informers need.
var (
	_ cache.ListerWatcher = (*framework.FakeControllerSource)(nil)
	_ cache.ListerWatcher = (*framework.FakePVControllerSource)(nil)
	_ cache.ListerWatcher = (*framework.FakePVCControllerSource)(nil)
)

func pod(name string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)}}
}

// describe summarises an event as "TYPE name@rv", enough to compare
// sequences, or "ERROR code" for an ERROR event.
func describe(t *testing.T, e watch.Event) string {
	t.Helper()
	if status, ok := e.Object.(*metav1.Status); ok {
		return fmt.Sprintf("%s %d", e.Type, status.Code)
	}
	m, err := meta.Accessor(e.Object)
	if err != nil {
		t.Fatalf("event %v has no metadata: %v", e.Type, err)
	}
	return fmt.Sprintf("%s %s@%s", e.Type, m.GetName(), m.GetResourceVersion())
}

// drain returns the events w has ready. Inside a synctest bubble, after
// synctest.Wait, that is every event w will ever get from what happened so
// far.
func drain(t *testing.T, w watch.Interface) []string {
	t.Helper()
	var got []string
	for {
		select {
		case e, ok := <-w.ResultChan():
			if !ok {
				return append(got, "closed")
			}
			got = append(got, describe(t, e))
		default:
			return got
		}
	}
}

// listed summarises a list as its resource version and "name@rv" items.
func listed(t *testing.T, list runtime.Object) []string {
	t.Helper()
	lm, err := meta.ListAccessor(list)
	if err != nil {
		t.Fatalf("%T is not a list: %v", list, err)
	}
	out := []string{"rv=" + lm.GetResourceVersion()}
	items, err := meta.ExtractList(list)
	if err != nil {
		t.Fatalf("extracting %T: %v", list, err)
	}
	for _, item := range items {
		m, err := meta.Accessor(item)
		if err != nil {
			t.Fatalf("list item %T has no metadata: %v", item, err)
		}
		out = append(out, m.GetName()+"@"+m.GetResourceVersion())
	}
	return out
}

// action is one change made to a source in a table test.
type action func(f *framework.FakeControllerSource)

func add(name string) action {
	return func(f *framework.FakeControllerSource) { f.Add(pod(name)) }
}

func modify(name string) action {
	return func(f *framework.FakeControllerSource) { f.Modify(pod(name)) }
}

func del(name string) action {
	return func(f *framework.FakeControllerSource) { f.Delete(pod(name)) }
}

func reset() action {
	return func(f *framework.FakeControllerSource) { f.ResetWatch() }
}

func apply(f *framework.FakeControllerSource, actions []action) {
	for _, a := range actions {
		a(f)
	}
}

func TestFakeControllerSource_EachChangeTakesTheNextResourceVersion(t *testing.T) {
	tests := map[string]struct {
		actions    []action
		wantList   []string
		wantEvents []string
	}{
		"add, modify and delete": {
			actions:    []action{add("a"), add("b"), modify("a"), del("b")},
			wantList:   []string{"rv=4", "a@3"},
			wantEvents: []string{"ADDED a@1", "ADDED b@2", "MODIFIED a@3", "DELETED b@4"},
		},
		"dropped changes are stored but not sent": {
			actions: []action{
				func(f *framework.FakeControllerSource) { f.AddDropWatch(pod("a")) },
				func(f *framework.FakeControllerSource) { f.ModifyDropWatch(pod("a")) },
				add("b"),
				func(f *framework.FakeControllerSource) { f.DeleteDropWatch(pod("b")) },
			},
			wantList:   []string{"rv=4", "a@2"},
			wantEvents: []string{"ADDED b@3"},
		},
		"Change with probability 0 and 1": {
			actions: []action{
				func(f *framework.FakeControllerSource) {
					f.Change(watch.Event{Type: watch.Added, Object: pod("a")}, 0)
				},
				func(f *framework.FakeControllerSource) {
					f.Change(watch.Event{Type: watch.Added, Object: pod("b")}, 1)
				},
			},
			wantList:   []string{"rv=2", "a@1", "b@2"},
			wantEvents: []string{"ADDED b@2"},
		},
		"same name, different UID: two items, listed in UID order": {
			actions: []action{
				add("a"),
				func(f *framework.FakeControllerSource) {
					p := pod("a")
					p.UID = "uid-0"
					f.Add(p)
				},
			},
			wantList:   []string{"rv=2", "a@2", "a@1"},
			wantEvents: []string{"ADDED a@1", "ADDED a@2"},
		},
		"deleting an unknown object still takes a version": {
			actions:    []action{del("ghost")},
			wantList:   []string{"rv=1"},
			wantEvents: []string{"DELETED ghost@1"},
		},
		"a bookmark change stores nothing": {
			actions: []action{func(f *framework.FakeControllerSource) {
				f.Change(watch.Event{Type: watch.Bookmark, Object: pod("mark")}, 1)
			}},
			wantList:   []string{"rv=1"},
			wantEvents: []string{"BOOKMARK mark@1"},
		},
		"items are listed in name order": {
			actions:    []action{add("c"), add("a"), add("b")},
			wantList:   []string{"rv=3", "a@2", "b@3", "c@1"},
			wantEvents: []string{"ADDED c@1", "ADDED a@2", "ADDED b@3"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := framework.NewFakeControllerSource()
				defer f.Shutdown()
				w := watchFromStart(t, f)
				apply(f, tc.actions)
				synctest.Wait()
				if diff := cmp.Diff(tc.wantEvents, drain(t, w)); diff != "" {
					t.Errorf("events (-want +got):\n%s", diff)
				}
				list, err := f.List(metav1.ListOptions{})
				if err != nil {
					t.Fatalf("List: %v", err)
				}
				if _, ok := list.(*v1.List); !ok {
					t.Errorf("List returned %T, want *v1.List", list)
				}
				if diff := cmp.Diff(tc.wantList, listed(t, list)); diff != "" {
					t.Errorf("list (-want +got):\n%s", diff)
				}
			})
		})
	}
}

func TestFakeControllerSource_SetsTheCallersResourceVersion(t *testing.T) {
	f := framework.NewFakeControllerSource()
	defer f.Shutdown()
	a, b := pod("a"), pod("b")
	f.Add(a)
	f.AddDropWatch(b)
	f.Modify(a)
	f.Delete(b)
	got := []string{a.ResourceVersion, b.ResourceVersion}
	if diff := cmp.Diff([]string{"3", "4"}, got); diff != "" {
		t.Errorf("caller's resource versions (-want +got):\n%s", diff)
	}
}

func isTooLarge(err error) bool {
	_, ok := apierrors.StatusCause(err, metav1.CauseTypeResourceVersionTooLarge)
	return ok && apierrors.IsTimeout(err)
}

func TestFakeControllerSource_WatchReplaysChangesAfterItsResourceVersion(t *testing.T) {
	history := []action{add("a"), add("b"), modify("a")} // versions 1..3
	tests := map[string]struct {
		actions []action
		rv      string
		want    []string // replayed events, then the live "ADDED live@N"
		wantErr func(error) bool
	}{
		"from 0: everything":          {actions: history, rv: "0", want: []string{"ADDED a@1", "ADDED b@2", "MODIFIED a@3", "ADDED live@4"}},
		"from 1":                      {actions: history, rv: "1", want: []string{"ADDED b@2", "MODIFIED a@3", "ADDED live@4"}},
		"from the current version":    {actions: history, rv: "3", want: []string{"ADDED live@4"}},
		"from a future version":       {actions: history, rv: "4", wantErr: isTooLarge},
		"empty version":               {actions: history, rv: "", wantErr: apierrors.IsBadRequest},
		"not a number":                {actions: history, rv: "x", wantErr: apierrors.IsBadRequest},
		"negative":                    {actions: history, rv: "-1", wantErr: apierrors.IsBadRequest},
		"after a reset, from before":  {actions: append(history, reset(), add("c")), rv: "2", wantErr: apierrors.IsResourceExpired},
		"after a reset, from reset":   {actions: append(history, reset(), add("c")), rv: "3", want: []string{"ADDED c@4", "ADDED live@5"}},
		"after a reset, current":      {actions: append(history, reset(), add("c")), rv: "4", want: []string{"ADDED live@5"}},
		"reset with nothing after it": {actions: append(history, reset()), rv: "3", want: []string{"ADDED live@4"}},
		"a fresh source from 0":       {rv: "0", want: []string{"ADDED live@1"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := framework.NewFakeControllerSource()
				defer f.Shutdown()
				apply(f, tc.actions)
				w, err := f.Watch(metav1.ListOptions{ResourceVersion: tc.rv})
				if tc.wantErr != nil {
					if err == nil || !tc.wantErr(err) {
						t.Fatalf("Watch error = %v, want the expected API error", err)
					}
					return
				}
				if err != nil {
					t.Fatalf("Watch: %v", err)
				}
				defer w.Stop()
				f.Add(pod("live"))
				synctest.Wait()
				if diff := cmp.Diff(tc.want, drain(t, w)); diff != "" {
					t.Errorf("events (-want +got):\n%s", diff)
				}
			})
		})
	}
}

// bookmark describes a streaming-list bookmark: its Go type, resource
// version and whether it carries the initial-events-end annotation.
func bookmark(t *testing.T, obj runtime.Object) string {
	t.Helper()
	m, err := meta.Accessor(obj)
	if err != nil {
		t.Fatalf("bookmark %T has no metadata: %v", obj, err)
	}
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	return fmt.Sprintf("%T kind=%q name=%q rv=%s end=%s", obj, kind, m.GetName(), m.GetResourceVersion(),
		m.GetAnnotations()[metav1.InitialEventsAnnotationKey])
}

func unstructuredWidget(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("example.com/v1")
	u.SetKind("Widget")
	u.SetNamespace("ns")
	u.SetName(name)
	return u
}

func TestFakeControllerSource_StreamsInitialEventsWhenAsked(t *testing.T) {
	stream := func(rv string) metav1.ListOptions {
		return metav1.ListOptions{
			ResourceVersion:      rv,
			SendInitialEvents:    ptr.To(true),
			ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
			AllowWatchBookmarks:  true,
		}
	}
	history := []action{add("b"), add("a"), add("c"), del("c"), modify("b")} // rv 5, items a@2 b@5
	tests := map[string]struct {
		source       func() *framework.FakeControllerSource
		actions      []action
		options      metav1.ListOptions
		wantInitial  []string
		wantBookmark string
		wantErr      string
		wantAPIErr   func(error) bool
	}{
		"most recent state": {
			actions:      history,
			options:      stream(""),
			wantInitial:  []string{"ADDED a@2", "ADDED b@5"},
			wantBookmark: `*v1.Pod kind="" name="" rv=5 end=true`,
		},
		"any state (0)": {
			actions:      history,
			options:      stream("0"),
			wantInitial:  []string{"ADDED a@2", "ADDED b@5"},
			wantBookmark: `*v1.Pod kind="" name="" rv=5 end=true`,
		},
		"not older than an old version": {
			actions:      history,
			options:      stream("2"),
			wantInitial:  []string{"ADDED a@2", "ADDED b@5"},
			wantBookmark: `*v1.Pod kind="" name="" rv=5 end=true`,
		},
		"without ResourceVersionMatch": {
			actions:      history,
			options:      metav1.ListOptions{SendInitialEvents: ptr.To(true)},
			wantInitial:  []string{"ADDED a@2", "ADDED b@5"},
			wantBookmark: `*v1.Pod kind="" name="" rv=5 end=true`,
		},
		"every object deleted: the type is still known": {
			actions:      []action{add("a"), del("a")},
			options:      stream(""),
			wantBookmark: `*v1.Pod kind="" name="" rv=2 end=true`,
		},
		"after a reset": {
			actions:      append(history, reset()),
			options:      stream("3"),
			wantInitial:  []string{"ADDED a@2", "ADDED b@5"},
			wantBookmark: `*v1.Pod kind="" name="" rv=5 end=true`,
		},
		"unstructured objects keep their kind in the bookmark": {
			actions: []action{func(f *framework.FakeControllerSource) {
				f.Add(unstructuredWidget("w1"))
			}},
			options:      stream(""),
			wantInitial:  []string{"ADDED w1@1"},
			wantBookmark: `*unstructured.Unstructured kind="Widget" name="" rv=1 end=true`,
		},
		"empty PVC source knows its type": {
			source: func() *framework.FakeControllerSource {
				return &framework.NewFakePVCControllerSource().FakeControllerSource
			},
			options:      stream(""),
			wantBookmark: `*v1.PersistentVolumeClaim kind="" name="" rv=0 end=true`,
		},
		"empty PV source knows its type": {
			source: func() *framework.FakeControllerSource {
				return &framework.NewFakePVControllerSource().FakeControllerSource
			},
			options:      stream(""),
			wantBookmark: `*v1.PersistentVolume kind="" name="" rv=0 end=true`,
		},
		"empty plain source cannot name the type": {
			options: stream(""),
			wantErr: "watching with initial events: the object type is unknown until an object is added",
		},
		"a future version": {
			actions:    history,
			options:    stream("6"),
			wantAPIErr: isTooLarge,
		},
		"a version that is not a number": {
			actions:    history,
			options:    stream("abc"),
			wantAPIErr: apierrors.IsBadRequest,
		},
		"exact match is not allowed": {
			actions: history,
			options: metav1.ListOptions{
				ResourceVersion: "5", SendInitialEvents: ptr.To(true),
				ResourceVersionMatch: metav1.ResourceVersionMatchExact,
			},
			wantAPIErr: apierrors.IsBadRequest,
		},
		"SendInitialEvents=false is a plain watch": {
			actions:     history,
			options:     metav1.ListOptions{ResourceVersion: "4", SendInitialEvents: ptr.To(false)},
			wantInitial: []string{"MODIFIED b@5"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := framework.NewFakeControllerSource()
				if tc.source != nil {
					f.Shutdown()
					f = tc.source()
				}
				defer f.Shutdown()
				apply(f, tc.actions)
				w, err := f.Watch(tc.options)
				switch {
				case tc.wantErr != "":
					if err == nil || err.Error() != tc.wantErr {
						t.Fatalf("Watch error = %v, want %q", err, tc.wantErr)
					}
					return
				case tc.wantAPIErr != nil:
					if err == nil || !tc.wantAPIErr(err) {
						t.Fatalf("Watch error = %v, want the expected API error", err)
					}
					return
				case err != nil:
					t.Fatalf("Watch: %v", err)
				}
				defer w.Stop()

				var initial []string
				gotBookmark := ""
				for tc.wantBookmark != "" && gotBookmark == "" {
					e := <-w.ResultChan()
					if e.Type == watch.Bookmark {
						gotBookmark = bookmark(t, e.Object)
						continue
					}
					initial = append(initial, describe(t, e))
				}
				// A live change follows the bookmark, at the next version.
				var wantRest []string
				if strings.Contains(tc.wantBookmark, "*v1.Pod") {
					live := pod("live")
					f.Add(live)
					wantRest = []string{"ADDED live@" + live.ResourceVersion}
				}
				synctest.Wait()
				rest := drain(t, w)
				if tc.wantBookmark == "" {
					initial, rest = rest, nil
				}
				if diff := cmp.Diff(tc.wantInitial, initial); diff != "" {
					t.Errorf("initial events (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(tc.wantBookmark, gotBookmark); diff != "" {
					t.Errorf("bookmark (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(wantRest, rest); diff != "" {
					t.Errorf("events after the bookmark (-want +got):\n%s", diff)
				}
			})
		})
	}
}

func TestFakeControllerSource_StreamingListHasNoGapsOrDuplicatesUnderConcurrentChanges(t *testing.T) {
	const total = 300
	f := framework.NewFakeControllerSource()
	defer f.Shutdown()
	f.Add(pod("seed")) // makes the object type known
	started := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range total {
			if i == total/3 {
				close(started)
			}
			f.Add(pod(fmt.Sprintf("p%03d", i)))
		}
	}()
	<-started
	w, err := f.Watch(metav1.ListOptions{SendInitialEvents: ptr.To(true), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	defer w.Stop()

	seen := map[string]int{}
	lastRV, bookmarkRV := 0, -1
	for lastRV < total+1 {
		e, ok := <-w.ResultChan()
		if !ok {
			t.Fatalf("watch closed at version %d", lastRV)
		}
		m, err := meta.Accessor(e.Object)
		if err != nil {
			t.Fatal(err)
		}
		var rv int
		if _, err := fmt.Sscan(m.GetResourceVersion(), &rv); err != nil {
			t.Fatalf("resource version %q: %v", m.GetResourceVersion(), err)
		}
		switch {
		case e.Type == watch.Bookmark:
			if bookmarkRV >= 0 {
				t.Fatalf("second bookmark at %d", rv)
			}
			bookmarkRV, lastRV = rv, rv
		case bookmarkRV < 0:
			seen[m.GetName()]++ // initial events come in name order, not version order
		default:
			if rv != lastRV+1 {
				t.Fatalf("live event at version %d after %d: a gap or a repeat", rv, lastRV)
			}
			lastRV = rv
			seen[m.GetName()]++
		}
	}
	<-done
	for i := range total {
		name := fmt.Sprintf("p%03d", i)
		if seen[name] != 1 {
			t.Errorf("%s seen %d times, want once", name, seen[name])
		}
	}
	if seen["seed"] != 1 || len(seen) != total+1 {
		t.Errorf("saw %d distinct objects (seed %d times), want %d and once", len(seen), seen["seed"], total+1)
	}
}

func TestFakeControllerSource_ListAnswersWhileAWatcherStallsChanges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := framework.NewFakeControllerSource()
		defer f.Shutdown()
		stalled, err := f.Watch(metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			t.Fatalf("Watch: %v", err)
		}
		const total = 300 // far more than a watcher and the broadcaster buffer
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := range total {
				f.Add(pod(fmt.Sprintf("p%03d", i)))
			}
		}()
		synctest.Wait() // the producer is now blocked on the unread watch
		select {
		case <-done:
			t.Fatal("producer finished although nobody read the watch")
		default:
		}
		list, err := f.List(metav1.ListOptions{})
		if err != nil {
			t.Fatalf("List while a change is blocked: %v", err)
		}
		if got := len(listed(t, list)) - 1; got < 100 || got >= total {
			t.Errorf("listed %d items while blocked, want between the watch buffer (100) and %d", got, total)
		}
		// Reading the watch lets every change through, in order.
		for i := range total {
			e := <-stalled.ResultChan()
			if got, want := describe(t, e), fmt.Sprintf("ADDED p%03d@%d", i, i+1); got != want {
				t.Fatalf("event %d = %s, want %s", i, got, want)
			}
		}
		<-done
		stalled.Stop()
	})
}

func TestFakeControllerSource_ResetWatchClosesWatchesAndForgetsHistory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := framework.NewFakeControllerSource()
		defer f.Shutdown()
		f.Add(pod("a"))
		old, err := f.Watch(metav1.ListOptions{ResourceVersion: "1"})
		if err != nil {
			t.Fatalf("Watch: %v", err)
		}
		f.Add(pod("b"))
		f.ResetWatch()
		f.Add(pod("c"))
		synctest.Wait()
		if diff := cmp.Diff([]string{"ADDED b@2", "closed"}, drain(t, old)); diff != "" {
			t.Errorf("watch opened before the reset (-want +got):\n%s", diff)
		}
		if _, err := f.Watch(metav1.ListOptions{ResourceVersion: "1"}); !apierrors.IsResourceExpired(err) {
			t.Errorf("Watch from before the reset: error = %v, want expired", err)
		}
		list, err := f.List(metav1.ListOptions{})
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		if diff := cmp.Diff([]string{"rv=3", "a@1", "b@2", "c@3"}, listed(t, list)); diff != "" {
			t.Errorf("list after the reset (-want +got):\n%s", diff)
		}
		fresh, err := f.Watch(metav1.ListOptions{ResourceVersion: "3"})
		if err != nil {
			t.Fatalf("Watch after the reset: %v", err)
		}
		defer fresh.Stop()
		f.Modify(pod("c"))
		synctest.Wait()
		if diff := cmp.Diff([]string{"MODIFIED c@4"}, drain(t, fresh)); diff != "" {
			t.Errorf("watch opened after the reset (-want +got):\n%s", diff)
		}
	})
}

func TestFakeControllerSource_ShutdownIsFinal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := framework.NewFakeControllerSource()
		f.Add(pod("a"))
		w, err := f.Watch(metav1.ListOptions{ResourceVersion: "1"})
		if err != nil {
			t.Fatalf("Watch: %v", err)
		}
		f.Add(pod("b"))
		f.Shutdown()
		synctest.Wait()
		if diff := cmp.Diff([]string{"ADDED b@2", "closed"}, drain(t, w)); diff != "" {
			t.Errorf("watch (-want +got):\n%s", diff)
		}
		f.Add(pod("c")) // ignored, must neither block nor panic
		f.ResetWatch()
		f.Shutdown()
		if _, err := f.List(metav1.ListOptions{}); err == nil || err.Error() != "listing: fake controller source is shut down" {
			t.Errorf("List error = %v, want the shut-down error", err)
		}
		if _, err := f.Watch(metav1.ListOptions{ResourceVersion: "2"}); err == nil || err.Error() != "watching: fake controller source is shut down" {
			t.Errorf("Watch error = %v, want the shut-down error", err)
		}
		if got := len(f.Items); got != 2 {
			t.Errorf("%d items after a change following Shutdown, want 2", got)
		}
	})
}

func TestFakeControllerSource_ListTypesAndListError(t *testing.T) {
	pv := func(name string) runtime.Object {
		return &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}}
	}
	pvc := func(name string) runtime.Object {
		return &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
	}
	type source interface {
		Add(runtime.Object)
		List(metav1.ListOptions) (runtime.Object, error)
		Shutdown()
	}
	tests := map[string]struct {
		newSource func() (source, *error)
		object    func(name string) runtime.Object
		wantType  string
	}{
		"plain": {
			newSource: func() (source, *error) { f := framework.NewFakeControllerSource(); return f, &f.ListError },
			object:    func(name string) runtime.Object { return pod(name) },
			wantType:  "*v1.List",
		},
		"PersistentVolume": {
			newSource: func() (source, *error) { f := framework.NewFakePVControllerSource(); return f, &f.ListError },
			object:    pv,
			wantType:  "*v1.PersistentVolumeList",
		},
		"PersistentVolumeClaim": {
			newSource: func() (source, *error) { f := framework.NewFakePVCControllerSource(); return f, &f.ListError },
			object:    pvc,
			wantType:  "*v1.PersistentVolumeClaimList",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f, listError := tc.newSource()
			defer f.Shutdown()
			f.Add(tc.object("y"))
			f.Add(tc.object("x"))
			list, err := f.List(metav1.ListOptions{})
			if err != nil {
				t.Fatalf("List: %v", err)
			}
			if got := fmt.Sprintf("%T", list); got != tc.wantType {
				t.Errorf("List returned %s, want %s", got, tc.wantType)
			}
			if diff := cmp.Diff([]string{"rv=2", "x@2", "y@1"}, listed(t, list)); diff != "" {
				t.Errorf("list (-want +got):\n%s", diff)
			}
			boom := errors.New("boom")
			*listError = boom
			if _, err := f.List(metav1.ListOptions{}); err != boom {
				t.Errorf("List with ListError set: error = %v, want it", err)
			}
		})
	}
}

func TestFakeControllerSource_HandsOutCopies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := framework.NewFakeControllerSource()
		defer f.Shutdown()
		w := watchFromStart(t, f)
		mine := pod("a")
		f.Add(mine)
		mine.Labels = map[string]string{"changed": "by the caller"}

		e := <-w.ResultChan()
		e.Object.(*v1.Pod).Labels = map[string]string{"changed": "by a watcher"}

		list, err := f.List(metav1.ListOptions{})
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		items, _ := meta.ExtractList(list)
		items[0].(*v1.Pod).Labels = map[string]string{"changed": "by a lister"}

		replay, err := f.Watch(metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			t.Fatalf("Watch: %v", err)
		}
		defer replay.Stop()
		replayed := (<-replay.ResultChan()).Object.(*v1.Pod)
		again, _ := f.List(metav1.ListOptions{})
		items, _ = meta.ExtractList(again)
		for what, p := range map[string]*v1.Pod{"replayed": replayed, "listed": items[0].(*v1.Pod)} {
			if p.Labels != nil {
				t.Errorf("%s object has labels %v: the fake shares objects", what, p.Labels)
			}
			if p.ResourceVersion != "1" {
				t.Errorf("%s object has version %q, want 1", what, p.ResourceVersion)
			}
		}
	})
}

func TestFakeControllerSource_ObjectWithoutMetadataFailsListAndWatch(t *testing.T) {
	tests := map[string]runtime.Object{
		"no metadata": &runtime.Unknown{},
		"nil object":  nil,
	}
	for name, obj := range tests {
		t.Run(name, func(t *testing.T) {
			f := framework.NewFakeControllerSource()
			defer f.Shutdown()
			f.Add(pod("a"))
			f.Add(obj) // must not panic
			f.Add(pod("b"))
			_, listErr := f.List(metav1.ListOptions{})
			_, watchErr := f.Watch(metav1.ListOptions{ResourceVersion: "0"})
			for what, err := range map[string]error{"listing: ": listErr, "watching: ": watchErr} {
				want := what + "fake controller source: recording a ADDED change of "
				if err == nil || !strings.HasPrefix(err.Error(), want) {
					t.Errorf("error = %v, want it to start with %q", err, want)
				}
			}
			if got := len(f.Items); got != 2 {
				t.Errorf("%d items, want the 2 valid ones", got)
			}
		})
	}
}

// watchFromStart watches f from resource version "0" (its whole history)
// and stops the watch when the test ends.
func watchFromStart(t *testing.T, f *framework.FakeControllerSource) watch.Interface {
	t.Helper()
	w, err := f.Watch(metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	t.Cleanup(w.Stop)
	return w
}
