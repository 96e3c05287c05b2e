package framework_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	cache "github.com/kcache/cache"
	framework "github.com/kcache/cache/testing"
)

// isExpired reports whether err is the 410 Expired a real API server
// returns for a resource version or continue token it no longer has, which
// a reflector matches with apierrors.IsResourceExpired.
func isExpired(err error) bool {
	var status apierrors.APIStatus
	return apierrors.IsResourceExpired(err) && errors.As(err, &status) && status.Status().Code == http.StatusGone
}

func compact() action {
	return func(f *framework.FakeControllerSource) { f.Compact() }
}

// page summarises a list page: what listed returns, then the remaining
// item count when the page has a continue token.
func page(t *testing.T, list runtime.Object) []string {
	t.Helper()
	out := listed(t, list)
	lm, err := meta.ListAccessor(list)
	if err != nil {
		t.Fatalf("%T is not a list: %v", list, err)
	}
	if lm.GetContinue() != "" {
		remaining := "unset"
		if n := lm.GetRemainingItemCount(); n != nil {
			remaining = fmt.Sprint(*n)
		}
		out = append(out, "remaining="+remaining)
	}
	return out
}

// pageStep is one List call of a paging table test.
type pageStep struct {
	// before are changes applied before the call.
	before []action
	// options are the call's options; the continue token of the previous
	// step's page is filled in, unless continueToken is set or fresh asks
	// for a new list.
	options       metav1.ListOptions
	continueToken string
	fresh         bool
	want          []string
	wantErr       func(error) bool
}

func TestFakeControllerSource_PagesLists(t *testing.T) {
	five := []action{add("a"), add("b"), add("c"), add("d"), add("e")} // rv 5
	limit := func(n int64) metav1.ListOptions { return metav1.ListOptions{Limit: n} }
	tests := map[string]struct {
		options framework.FakeControllerSourceOptions
		actions []action
		steps   []pageStep
	}{
		"without a limit, one page": {
			options: framework.FakeControllerSourceOptions{Paging: true},
			actions: five,
			steps:   []pageStep{{want: []string{"rv=5", "a@1", "b@2", "c@3", "d@4", "e@5"}}},
		},
		"a limit splits the list, with remaining counts": {
			options: framework.FakeControllerSourceOptions{Paging: true},
			actions: five,
			steps: []pageStep{
				{options: limit(2), want: []string{"rv=5", "a@1", "b@2", "remaining=3"}},
				{options: limit(2), want: []string{"rv=5", "c@3", "d@4", "remaining=1"}},
				{options: limit(2), want: []string{"rv=5", "e@5"}},
			},
		},
		"a limit equal to the size: no continue token": {
			options: framework.FakeControllerSourceOptions{Paging: true},
			actions: five,
			steps:   []pageStep{{options: limit(5), want: []string{"rv=5", "a@1", "b@2", "c@3", "d@4", "e@5"}}},
		},
		"later pages show the first page's state": {
			options: framework.FakeControllerSourceOptions{Paging: true},
			actions: five,
			steps: []pageStep{
				{options: limit(2), want: []string{"rv=5", "a@1", "b@2", "remaining=3"}},
				{
					before:  []action{del("c"), modify("d"), add("bb"), modify("a")},
					options: limit(2),
					want:    []string{"rv=5", "c@3", "d@4", "remaining=1"},
				},
				{options: limit(2), want: []string{"rv=5", "e@5"}},
				{options: limit(10), fresh: true, want: []string{"rv=9", "a@9", "b@2", "bb@8", "d@7", "e@5"}},
			},
		},
		"a continue token older than the watch cache is expired": {
			options: framework.FakeControllerSourceOptions{Paging: true, WatchCacheSize: 2},
			actions: five,
			steps: []pageStep{
				{options: limit(2), want: []string{"rv=5", "a@1", "b@2", "remaining=3"}},
				{before: []action{modify("a"), modify("b")}, options: limit(2), want: []string{"rv=5", "c@3", "d@4", "remaining=1"}},
				{before: []action{modify("c")}, options: limit(2), wantErr: isExpired},
			},
		},
		"compaction expires continue tokens": {
			options: framework.FakeControllerSourceOptions{Paging: true},
			actions: five,
			steps: []pageStep{
				{options: limit(2), want: []string{"rv=5", "a@1", "b@2", "remaining=3"}},
				{before: []action{modify("e"), compact()}, options: limit(2), wantErr: isExpired},
			},
		},
		"compaction spares a token at the current version": {
			options: framework.FakeControllerSourceOptions{Paging: true},
			actions: five,
			steps: []pageStep{
				{options: limit(4), want: []string{"rv=5", "a@1", "b@2", "c@3", "d@4", "remaining=1"}},
				{before: []action{compact()}, options: limit(4), want: []string{"rv=5", "e@5"}},
			},
		},
		"ResetWatch expires continue tokens": {
			options: framework.FakeControllerSourceOptions{Paging: true},
			actions: five,
			steps: []pageStep{
				{options: limit(2), want: []string{"rv=5", "a@1", "b@2", "remaining=3"}},
				{before: []action{modify("e"), reset()}, options: limit(2), wantErr: isExpired},
			},
		},
		"a malformed continue token is a bad request": {
			options: framework.FakeControllerSourceOptions{Paging: true},
			actions: five,
			steps:   []pageStep{{continueToken: "not a token", wantErr: apierrors.IsBadRequest}},
		},
		"a first page from a future version is too large": {
			options: framework.FakeControllerSourceOptions{Paging: true},
			actions: five,
			steps:   []pageStep{{options: metav1.ListOptions{ResourceVersion: "6"}, wantErr: isTooLarge}},
		},
		"not older than a past version serves the newest state": {
			options: framework.FakeControllerSourceOptions{Paging: true},
			actions: append(slices.Clone(five), modify("a")),
			steps:   []pageStep{{options: metav1.ListOptions{ResourceVersion: "2", Limit: 2}, want: []string{"rv=6", "a@6", "b@2", "remaining=3"}}},
		},
		"an exact past version serves the state then": {
			options: framework.FakeControllerSourceOptions{Paging: true},
			actions: append(slices.Clone(five), modify("a"), del("b")),
			steps: []pageStep{{
				options: metav1.ListOptions{ResourceVersion: "3", ResourceVersionMatch: metav1.ResourceVersionMatchExact},
				want:    []string{"rv=3", "a@1", "b@2", "c@3"},
			}},
		},
		"an exact version no longer retained is expired": {
			options: framework.FakeControllerSourceOptions{Paging: true, WatchCacheSize: 1},
			actions: five,
			steps: []pageStep{{
				options: metav1.ListOptions{ResourceVersion: "3", ResourceVersionMatch: metav1.ResourceVersionMatchExact},
				wantErr: isExpired,
			}},
		},
		"without Paging, Limit is ignored as client-go's fake does": {
			actions: five,
			steps:   []pageStep{{options: limit(2), want: []string{"rv=5", "a@1", "b@2", "c@3", "d@4", "e@5"}}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f := framework.NewFakeControllerSourceWithOptions(tc.options)
			defer f.Shutdown()
			apply(f, tc.actions)
			next := ""
			for i, step := range tc.steps {
				apply(f, step.before)
				options := step.options
				switch {
				case step.continueToken != "":
					options.Continue = step.continueToken
				case !step.fresh:
					options.Continue = next
				}
				list, err := f.List(options)
				if step.wantErr != nil {
					if err == nil || !step.wantErr(err) {
						t.Fatalf("step %d: List error = %v, want the expected API error", i, err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("step %d: List: %v", i, err)
				}
				if diff := cmp.Diff(step.want, page(t, list)); diff != "" {
					t.Errorf("step %d: page (-want +got):\n%s", i, diff)
				}
				lm, _ := meta.ListAccessor(list)
				next = lm.GetContinue()
			}
		})
	}
}

func TestFakeControllerSource_WatchCacheBoundsWhereWatchesResume(t *testing.T) {
	history := []action{add("a"), add("b"), modify("a"), add("c")} // rv 1..4
	tests := map[string]struct {
		options framework.FakeControllerSourceOptions
		actions []action
		rv      string
		want    []string // replayed events, then the live "ADDED live@N"
		wantErr func(error) bool
	}{
		"within the watch cache": {
			options: framework.FakeControllerSourceOptions{WatchCacheSize: 2},
			actions: history, rv: "2", want: []string{"MODIFIED a@3", "ADDED c@4", "ADDED live@5"},
		},
		"older than the watch cache": {
			options: framework.FakeControllerSourceOptions{WatchCacheSize: 2},
			actions: history, rv: "1", wantErr: isExpired,
		},
		"unbounded keeps everything": {
			actions: history, rv: "0", want: []string{"ADDED a@1", "ADDED b@2", "MODIFIED a@3", "ADDED c@4", "ADDED live@5"},
		},
		"after compaction, from before it": {
			actions: append(slices.Clone(history), compact()), rv: "3", wantErr: isExpired,
		},
		"after compaction, from the compacted version": {
			actions: append(slices.Clone(history), compact()), rv: "4", want: []string{"ADDED live@5"},
		},
		"after compaction, changes are retained again": {
			actions: append(slices.Clone(history), compact(), modify("c")), rv: "4", want: []string{"MODIFIED c@5", "ADDED live@6"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := framework.NewFakeControllerSourceWithOptions(tc.options)
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

func TestFakeControllerSource_OpenWatchesOutliveCompaction(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := framework.NewFakeControllerSourceWithOptions(framework.FakeControllerSourceOptions{WatchCacheSize: 1})
		defer f.Shutdown()
		f.Add(pod("a"))
		w, err := f.Watch(metav1.ListOptions{ResourceVersion: "1"})
		if err != nil {
			t.Fatalf("Watch: %v", err)
		}
		defer w.Stop()
		f.Add(pod("b"))
		f.Modify(pod("a"))
		f.Compact()
		f.Delete(pod("b"))
		synctest.Wait()
		if diff := cmp.Diff([]string{"ADDED b@2", "MODIFIED a@3", "DELETED b@4"}, drain(t, w)); diff != "" {
			t.Errorf("events of a watch opened before compaction (-want +got):\n%s", diff)
		}
		if got := f.ResourceVersion(); got != "4" {
			t.Errorf("ResourceVersion() = %q, want 4", got)
		}
	})
}

func TestFakeControllerSource_BookmarkReportsProgress(t *testing.T) {
	tests := map[string]struct {
		source  func() *framework.FakeControllerSource
		actions []action
		want    []string
	}{
		"after changes": {
			source:  framework.NewFakeControllerSource,
			actions: []action{add("a"), modify("a")},
			want:    []string{`BOOKMARK *v1.Pod kind="" name="" rv=2 end=`},
		},
		"a typed source before any object": {
			source: func() *framework.FakeControllerSource {
				return &framework.NewFakePVControllerSource().FakeControllerSource
			},
			want: []string{`BOOKMARK *v1.PersistentVolume kind="" name="" rv=0 end=`},
		},
		"an untyped source before any object sends nothing": {
			source: framework.NewFakeControllerSource,
			want:   nil,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := tc.source()
				defer f.Shutdown()
				apply(f, tc.actions)
				w, err := f.Watch(metav1.ListOptions{ResourceVersion: f.ResourceVersion(), AllowWatchBookmarks: true})
				if err != nil {
					t.Fatalf("Watch: %v", err)
				}
				defer w.Stop()
				f.Bookmark()
				synctest.Wait()
				var got []string
				for done := false; !done; {
					select {
					case e := <-w.ResultChan():
						got = append(got, string(e.Type)+" "+bookmark(t, e.Object))
					default:
						done = true
					}
				}
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("events (-want +got):\n%s", diff)
				}
			})
		})
	}
}

func TestFakeControllerSource_BookmarkAfterShutdownDoesNothing(t *testing.T) {
	f := framework.NewFakeControllerSource()
	f.Add(pod("a"))
	f.Shutdown()
	f.Bookmark() // must neither block nor panic
}

func TestFakeControllerSource_StreamingListEndsWithTheInitialEventsEndBookmark(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := framework.NewFakeControllerSourceWithOptions(framework.FakeControllerSourceOptions{Paging: true, WatchCacheSize: 1})
		defer f.Shutdown()
		apply(f, []action{add("b"), add("a"), modify("b"), compact()})
		w, err := f.Watch(metav1.ListOptions{SendInitialEvents: ptr.To(true), AllowWatchBookmarks: true,
			ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
		if err != nil {
			t.Fatalf("streaming list after compaction: %v", err)
		}
		defer w.Stop()
		f.Add(pod("c"))
		synctest.Wait()
		var got []string
		for done := false; !done; {
			select {
			case e := <-w.ResultChan():
				if e.Type == watch.Bookmark {
					got = append(got, "BOOKMARK "+bookmark(t, e.Object))
				} else {
					got = append(got, describe(t, e))
				}
			default:
				done = true
			}
		}
		want := []string{"ADDED a@2", "ADDED b@3", `BOOKMARK *v1.Pod kind="" name="" rv=3 end=true`, "ADDED c@4"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("events (-want +got):\n%s", diff)
		}
	})
}

// listsPages hides the source's streaming lists from a reflector, so that
// it lists page by page, and counts the pages.
type listsPages struct {
	*framework.FakeControllerSource
	pages *atomic.Int32
}

func (listsPages) IsWatchListSemanticsUnSupported() bool { return true }

func (l listsPages) List(options metav1.ListOptions) (runtime.Object, error) {
	l.pages.Add(1)
	return l.FakeControllerSource.List(options)
}

// storeState returns "name@rv" of each object in store, sorted.
func storeState(store cache.Store) []string {
	var out []string
	for _, obj := range store.List() {
		p := obj.(*v1.Pod)
		out = append(out, p.Name+"@"+p.ResourceVersion)
	}
	slices.Sort(out)
	return out
}

// sourceState returns "name@rv" of each object of f, sorted.
func sourceState(t *testing.T, f *framework.FakeControllerSource) []string {
	t.Helper()
	list, err := f.List(metav1.ListOptions{})
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	out := listed(t, list)[1:]
	slices.Sort(out)
	return out
}

func TestFakeControllerSource_ServesAReflector(t *testing.T) {
	var pages atomic.Int32
	tests := map[string]struct {
		lw        func(*framework.FakeControllerSource) cache.ListerWatcher
		wantPages int32
	}{
		"paginated list, then watch": {
			lw:        func(f *framework.FakeControllerSource) cache.ListerWatcher { return listsPages{f, &pages} },
			wantPages: 4, // 7 objects, 2 a page
		},
		"streaming list": {
			lw: func(f *framework.FakeControllerSource) cache.ListerWatcher { return f },
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := framework.NewFakeControllerSourceWithOptions(framework.FakeControllerSourceOptions{Paging: true, WatchCacheSize: 3})
				defer f.Shutdown()
				for i := range 7 {
					f.Add(pod(fmt.Sprint("p", i)))
				}
				store := cache.NewStore(cache.MetaNamespaceKeyFunc)
				pages.Store(0)
				r := cache.NewReflector(tc.lw(f), &v1.Pod{}, store, 0)
				r.WatchListPageSize = 2
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan struct{})
				go func() {
					defer close(done)
					r.RunWithContext(ctx)
				}()
				synctest.Wait()
				if diff := cmp.Diff(sourceState(t, f), storeState(store)); diff != "" {
					t.Errorf("store after the list (-source +store):\n%s", diff)
				}
				if got := pages.Load(); got != tc.wantPages {
					t.Errorf("the reflector listed %d pages, want %d", got, tc.wantPages)
				}
				f.Modify(pod("p1"))
				f.Delete(pod("p2"))
				f.Add(pod("p7"))
				f.Bookmark()
				synctest.Wait()
				if diff := cmp.Diff(sourceState(t, f), storeState(store)); diff != "" {
					t.Errorf("store after changes (-source +store):\n%s", diff)
				}
				if got, want := r.LastSyncResourceVersion(), f.ResourceVersion(); got != want {
					t.Errorf("reflector's resource version = %s, want %s", got, want)
				}
				cancel()
				<-done
			})
		})
	}
}
