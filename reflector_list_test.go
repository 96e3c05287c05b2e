package cache

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
)

// ---- listing ----

func TestReflector_ListsFromWatchCacheThenWatchesFromTheListsVersion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rfSetup(t, false)
		stream := newRFStream(false, rfEvent(watch.Added, rfPod("c", "11")))
		lw := &rfLW{
			listFn:  rfLists(rfReply{obj: rfPodList("10", "", rfPod("a", "5"), rfPod("b", "7"))}),
			watchFn: rfWatches(rfWatchReply{stream: stream}),
		}
		store := newRFStore()
		r := NewReflector(lw, &v1.Pod{}, store, 0)
		stop := rfRun(r)
		synctest.Wait()
		if err := stop(); err != nil {
			t.Fatalf("ListAndWatch: %v", err)
		}
		wantCalls := []rfCall{
			{Verb: "list", Opts: metav1.ListOptions{ResourceVersion: "0", Limit: 500}},
			{Verb: "watch", Opts: metav1.ListOptions{ResourceVersion: "10", AllowWatchBookmarks: true}},
		}
		if diff := cmp.Diff(wantCalls, lw.recorded()); diff != "" {
			t.Errorf("requests (-want +got):\n%s", diff)
		}
		wantOps := []string{"replace@10 [a@5 b@7]", "add c@11"}
		if diff := cmp.Diff(wantOps, store.recorded()); diff != "" {
			t.Errorf("store calls (-want +got):\n%s", diff)
		}
		if got := r.LastSyncResourceVersion(); got != "11" {
			t.Errorf("LastSyncResourceVersion() = %q, want 11", got)
		}
		if !stream.isStopped() {
			t.Error("the watch stream was not stopped")
		}
	})
}

// rfPager serves 10 pods in pages of options.Limit (or all at once when
// Limit is 0), with continue tokens naming the next offset.
func rfPager(rv string) func(context.Context, metav1.ListOptions) (runtime.Object, error) {
	return func(_ context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		var pods []*v1.Pod
		for i := range 10 {
			pods = append(pods, rfPod(fmt.Sprintf("p%d", i), fmt.Sprint(i+1)))
		}
		from := 0
		if opts.Continue != "" {
			fmt.Sscanf(opts.Continue, "offset-%d", &from)
		}
		to := len(pods)
		if opts.Limit > 0 && from+int(opts.Limit) < to {
			to = from + int(opts.Limit)
		}
		cont := ""
		if to < len(pods) {
			cont = fmt.Sprintf("offset-%d", to)
		}
		return rfPodList(rv, cont, pods[from:to]...), nil
	}
}

func TestReflector_ChoosesPageSizeLikeTheReference(t *testing.T) {
	cases := map[string]struct {
		pageSize  int64
		knownRV   string
		wantLists []metav1.ListOptions
	}{
		"explicit page size pages from a known version": {
			pageSize: 4, knownRV: "10",
			wantLists: []metav1.ListOptions{
				{ResourceVersion: "10", Limit: 4},
				{Continue: "offset-4", Limit: 4},
				{Continue: "offset-8", Limit: 4},
			},
		},
		"default chunks from the watch cache": {
			wantLists: []metav1.ListOptions{{ResourceVersion: "0", Limit: 500}},
		},
		"no paging from a known version": {
			knownRV:   "10",
			wantLists: []metav1.ListOptions{{ResourceVersion: "10"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rfSetup(t, false)
				lw := &rfLW{listFn: rfPager("20"), watchFn: rfWatches()}
				store := newRFStore()
				r := NewReflector(lw, &v1.Pod{}, store, 0)
				r.WatchListPageSize = tc.pageSize
				r.setLastSyncResourceVersion(tc.knownRV)
				stop := rfRun(r)
				synctest.Wait()
				if err := stop(); err != nil {
					t.Fatalf("ListAndWatch: %v", err)
				}
				lists := lw.listRequests()
				if diff := cmp.Diff(tc.wantLists, lists); diff != "" {
					t.Errorf("list requests (-want +got):\n%s", diff)
				}
				if n := len(store.content()); n != 10 {
					t.Errorf("store holds %d objects, want 10", n)
				}
			})
		})
	}
}

func TestReflector_KeepsPagingOnceTheWatchCacheListWasPaged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rfSetup(t, false)
		lw := &rfLW{listFn: rfPager("20"), watchFn: rfWatches()}
		r := NewReflector(lw, &v1.Pod{}, newRFStore(), 0)
		// The server pages even the "0" list: the watch cache is off.
		r.WatchListPageSize = 0
		lw.listFn = func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.Limit = 6
			return rfPager("20")(ctx, opts)
		}
		for range 2 {
			stop := rfRun(r)
			synctest.Wait()
			if err := stop(); err != nil {
				t.Fatalf("ListAndWatch: %v", err)
			}
		}
		lists := lw.listRequests()
		want := []metav1.ListOptions{
			{ResourceVersion: "0", Limit: 500},
			{Continue: "offset-6", Limit: 500},
			{ResourceVersion: "20", Limit: 500},
			{Continue: "offset-6", Limit: 500},
		}
		if diff := cmp.Diff(want, lists); diff != "" {
			t.Errorf("list requests (-want +got):\n%s", diff)
		}
	})
}

func TestReflector_ExpiredContinueTokenRelistsWholeAtTheSameVersion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rfSetup(t, false)
		expired := apierrors.NewResourceExpired("continue token expired")
		lw := &rfLW{watchFn: rfWatches()}
		lw.listFn = func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			switch {
			case opts.ResourceVersion == "0":
				return rfPodList("10", "", rfPod("a", "1")), nil
			case opts.Continue != "":
				return nil, expired
			case opts.ResourceVersion == "10" && opts.Limit == 4:
				return rfPodList("11", "c1", rfPod("a", "1")), nil
			case opts.ResourceVersion == "10" && opts.Limit == 0:
				return rfPodList("11", "", rfPod("a", "1"), rfPod("b", "2")), nil
			}
			return nil, fmt.Errorf("unexpected list %+v", opts)
		}
		store := newRFStore()
		r := NewReflector(lw, &v1.Pod{}, store, 0)
		r.WatchListPageSize = 4
		for range 2 {
			stop := rfRun(r)
			synctest.Wait()
			if err := stop(); err != nil {
				t.Fatalf("ListAndWatch: %v", err)
			}
		}
		lists := lw.listRequests()
		want := []metav1.ListOptions{
			{ResourceVersion: "0", Limit: 4},
			{ResourceVersion: "10", Limit: 4},
			{Continue: "c1", Limit: 4},
			{ResourceVersion: "10"},
		}
		if diff := cmp.Diff(want, lists); diff != "" {
			t.Errorf("list requests (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"a@1", "b@2"}, store.content()); diff != "" {
			t.Errorf("store content (-want +got):\n%s", diff)
		}
	})
}

func TestReflector_UnavailableVersionOnListRelistsFromNewest(t *testing.T) {
	tooLargeCause := apierrors.NewTimeoutError("too large resource version", 1)
	tooLargeCause.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge}}
	tooLargeOldCause := apierrors.NewTimeoutError("too large resource version", 1)
	tooLargeOldCause.ErrStatus.Details.Causes = []metav1.StatusCause{{Message: "Too large resource version"}}
	cases := map[string]error{
		"410 expired":                     apierrors.NewResourceExpired("too old"),
		"410 gone":                        goneError("too old"),
		"too large, structured cause":     tooLargeCause,
		"too large, cause message":        tooLargeOldCause,
		"too large, status message (old)": apierrors.NewTimeoutError("Too large resource version", 1),
	}
	for name, unavailable := range cases {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rfSetup(t, false)
				lw := &rfLW{watchFn: rfWatches()}
				lw.listFn = func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
					switch opts.ResourceVersion {
					case "0":
						return rfPodList("10", "", rfPod("a", "1")), nil
					case "10":
						return nil, unavailable
					case "", "20":
						return rfPodList("20", "", rfPod("a", "1"), rfPod("b", "15")), nil
					}
					return nil, fmt.Errorf("unexpected list %+v", opts)
				}
				r := NewReflector(lw, &v1.Pod{}, newRFStore(), 0)
				for range 3 {
					stop := rfRun(r)
					synctest.Wait()
					if err := stop(); err != nil {
						t.Fatalf("ListAndWatch: %v", err)
					}
				}
				var rvs []string
				for _, o := range lw.listRequests() {
					rvs = append(rvs, o.ResourceVersion)
				}
				// The third cycle lists from the version the second reached:
				// a successful list ends the "unavailable" condition.
				want := []string{"0", "10", "", "20"}
				if diff := cmp.Diff(want, rvs); diff != "" {
					t.Errorf("list resource versions (-want +got):\n%s", diff)
				}
			})
		})
	}
}

func TestReflector_ListFailuresEndTheCycleWithAnError(t *testing.T) {
	listErr := errors.New("server on fire")
	cases := map[string]struct {
		reply     rfReply
		replace   error
		wantIs    error
		wantInErr string
	}{
		"list error is wrapped": {reply: rfReply{err: listErr}, wantIs: listErr},
		"not a list":            {reply: rfReply{obj: rfPod("a", "1")}, wantInErr: "failed to list *v1.Pod: returned object must be a list: "},
		"a list of tables":      {reply: rfReply{obj: rfTableList()}, wantInErr: "unsupported list gvk"},
		// client-go formats the store's error with %v: it is not wrapped.
		"store refuses the list": {reply: rfReply{obj: rfPodList("1", "")}, replace: listErr, wantInErr: "unable to sync list result: server on fire"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rfSetup(t, false)
				lw := &rfLW{listFn: rfLists(tc.reply)}
				store := newRFStore()
				store.replaceErr = tc.replace
				r := NewReflector(lw, &v1.Pod{}, store, 0)
				err := r.ListAndWatchWithContext(context.Background())
				if err == nil {
					t.Fatal("ListAndWatch succeeded, want an error")
				}
				if tc.wantIs != nil && !errors.Is(err, tc.wantIs) {
					t.Errorf("error %v does not wrap %v", err, tc.wantIs)
				}
				if !strings.Contains(err.Error(), tc.wantInErr) {
					t.Errorf("error %q does not mention %q", err, tc.wantInErr)
				}
				for _, c := range lw.recorded() {
					if c.Verb == "watch" {
						t.Errorf("watched after a failed list: %+v", c)
					}
				}
			})
		})
	}
}

// rfTableList is the unstructured Table a server returns when asked for one.
func rfTableList() *unstructured.UnstructuredList {
	l := &unstructured.UnstructuredList{Object: map[string]interface{}{}}
	l.SetGroupVersionKind(metav1.SchemeGroupVersion.WithKind("Table"))
	l.SetResourceVersion("1")
	return l
}

func TestReflector_StoredObjectsDoNotPointIntoTheListResponse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rfSetup(t, false)
		list := rfPodList("10", "", rfPod("a", "1"), rfPod("b", "2"))
		lw := &rfLW{listFn: rfLists(rfReply{obj: list}), watchFn: rfWatches()}
		store := newRFStore()
		r := NewReflector(lw, &v1.Pod{}, store, 0)
		stop := rfRun(r)
		synctest.Wait()
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		for i := range list.Items {
			stored := store.items["ns/"+list.Items[i].Name].(*v1.Pod)
			if stored == &list.Items[i] {
				t.Errorf("stored %s points into the list's item array", stored.Name)
			}
		}
	})
}

// rfPanicCases are user code that panics inside a list-and-watch cycle.
func rfPanicCases() map[string]struct {
	lw        *rfLW
	store     ReflectorStore
	wantPanic string
} {
	return map[string]struct {
		lw        *rfLW
		store     ReflectorStore
		wantPanic string
	}{
		"list panics": {
			lw:        &rfLW{listFn: func(context.Context, metav1.ListOptions) (runtime.Object, error) { panic("boom") }},
			store:     newRFStore(),
			wantPanic: "boom",
		},
		"store Replace panics": {
			lw:        &rfLW{listFn: rfLists(rfReply{obj: rfPodList("1", "")})},
			store:     rfPanickingStore{newRFStore()},
			wantPanic: "replace boom",
		},
		// Nil pointers of the expected type pass every check and panic
		// when their metadata is read, in client-go as here.
		"watch ADDED of a nil *v1.Pod":    rfNilEventCase(watch.Added, (*v1.Pod)(nil)),
		"watch MODIFIED of a nil *v1.Pod": rfNilEventCase(watch.Modified, (*v1.Pod)(nil)),
		"watch DELETED of a nil *v1.Pod":  rfNilEventCase(watch.Deleted, (*v1.Pod)(nil)),
		"watch BOOKMARK of a nil *v1.Pod": rfNilEventCase(watch.Bookmark, (*v1.Pod)(nil)),
		"watch ERROR of a nil *Status":    rfNilEventCase(watch.Error, (*metav1.Status)(nil)),
		"list of a nil *v1.PodList": {
			lw:        &rfLW{listFn: rfLists(rfReply{obj: (*v1.PodList)(nil)})},
			store:     newRFStore(),
			wantPanic: nilDereference,
		},
		"watch panics": {
			lw: &rfLW{
				listFn:  rfLists(rfReply{obj: rfPodList("1", "")}),
				watchFn: func(context.Context, metav1.ListOptions) (watch.Interface, error) { panic("boom") },
			},
			store:     newRFStore(),
			wantPanic: "boom",
		},
	}
}

// nilDereference is the text of Go's panic on a nil pointer dereference.
const nilDereference = "runtime error: invalid memory address or nil pointer dereference"

// rfNilEventCase is a panic case: a good list, then a watch whose first
// event carries obj, a nil pointer.
func rfNilEventCase(t watch.EventType, obj runtime.Object) struct {
	lw        *rfLW
	store     ReflectorStore
	wantPanic string
} {
	return struct {
		lw        *rfLW
		store     ReflectorStore
		wantPanic string
	}{
		lw: &rfLW{
			listFn:  rfLists(rfReply{obj: rfPodList("1", "")}),
			watchFn: rfWatches(rfWatchReply{stream: newRFStream(false, watch.Event{Type: t, Object: obj})}),
		},
		store:     newRFStore(),
		wantPanic: nilDereference,
	}
}

// ListAndWatch does not recover panics in user code, as in client-go: the
// panic reaches its caller, a list's from the goroutine that ran it.
func TestReflector_ListAndWatchPassesPanicsOn(t *testing.T) {
	for name, tc := range rfPanicCases() {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rfSetup(t, false)
				r := NewReflector(tc.lw, &v1.Pod{}, tc.store, 0)
				p := capturePanic(func() { _ = r.ListAndWatchWithContext(context.Background()) })
				if fmt.Sprint(p) != tc.wantPanic {
					t.Errorf("ListAndWatch panicked with %v, want %q", p, tc.wantPanic)
				}
			})
		})
	}
}

// Run handles a cycle's panic with utilruntime.HandleCrashWithContext, as
// client-go's wait.BackoffUntil does: by default (ReallyCrash) the panic
// leaves Run; with ReallyCrash false Run backs off and tries again.
func TestReflector_RunHandlesPanicsLikeClientGo(t *testing.T) {
	for name := range rfPanicCases() {
		t.Run(name+"/ReallyCrash", func(t *testing.T) {
			tc := rfPanicCases()[name]
			synctest.Test(t, func(t *testing.T) {
				rfSetup(t, false)
				r := NewReflector(tc.lw, &v1.Pod{}, tc.store, 0)
				p := capturePanic(func() { r.RunWithContext(context.Background()) })
				if fmt.Sprint(p) != tc.wantPanic {
					t.Errorf("Run panicked with %v, want %q", p, tc.wantPanic)
				}
			})
		})
		t.Run(name+"/keep serving", func(t *testing.T) {
			tc := rfPanicCases()[name]
			panics := keepServing(t)
			synctest.Test(t, func(t *testing.T) {
				rfSetup(t, false)
				r := NewReflector(tc.lw, &v1.Pod{}, tc.store, 0)
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan struct{})
				go func() {
					defer close(done)
					r.RunWithContext(ctx)
				}()
				time.Sleep(time.Minute)
				synctest.Wait()
				cancel()
				<-done
				got := panics.all()
				if len(got) == 0 {
					t.Fatal("panic handlers saw nothing")
				}
				for _, v := range got {
					if v != tc.wantPanic {
						t.Errorf("panic handlers saw %q, want %q", v, tc.wantPanic)
					}
				}
			})
		})
	}
}

// rfPanickingStore panics in Replace.
type rfPanickingStore struct{ *rfStore }

func (rfPanickingStore) Replace([]interface{}, string) error { panic("replace boom") }

// rfPages serves scripted pages keyed by continue token ("" for the first).
type rfPages struct {
	pages map[string]rfReply
	// whole answers a request without Limit and Continue, if set.
	whole *rfReply
	calls []metav1.ListOptions
}

func (p *rfPages) fetch(_ context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	p.calls = append(p.calls, opts)
	if opts.Limit == 0 && opts.Continue == "" && p.whole != nil {
		return p.whole.obj, p.whole.err
	}
	r, ok := p.pages[opts.Continue]
	if !ok {
		return nil, fmt.Errorf("no page %q", opts.Continue)
	}
	return r.obj, r.err
}

func rfNames(items []interface{}) []string {
	out := []string{}
	for _, it := range items {
		out = append(out, rfDescribe(it))
	}
	return out
}

func TestListPager_CollectsEveryPage(t *testing.T) {
	expired := apierrors.NewResourceExpired("continue expired")
	withRemaining := rfPodList("7", "c1", rfPod("a", "1"))
	withRemaining.RemainingItemCount = ptr.To[int64](1)
	cases := map[string]struct {
		pageSize  int64
		opts      metav1.ListOptions
		pages     map[string]rfReply
		whole     *rfReply
		want      listedItems
		wantNames []string
		wantCalls []metav1.ListOptions
		wantErr   string
	}{
		"one page": {
			pageSize:  500,
			opts:      metav1.ListOptions{ResourceVersion: "0"},
			pages:     map[string]rfReply{"": {obj: rfPodList("7", "", rfPod("a", "1"), rfPod("b", "2"))}},
			want:      listedItems{resourceVersion: "7"},
			wantNames: []string{"a@1", "b@2"},
			wantCalls: []metav1.ListOptions{{ResourceVersion: "0", Limit: 500}},
		},
		"several pages: continue drops the resource version": {
			pageSize: 1,
			opts:     metav1.ListOptions{ResourceVersion: "5", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan},
			pages: map[string]rfReply{
				"":   {obj: withRemaining},
				"c1": {obj: rfPodList("8", "", rfPod("b", "2"))},
			},
			want:      listedItems{resourceVersion: "7", paginated: true},
			wantNames: []string{"a@1", "b@2"},
			wantCalls: []metav1.ListOptions{
				{ResourceVersion: "5", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, Limit: 1},
				{Continue: "c1", Limit: 1},
			},
		},
		"a caller's limit wins over the page size": {
			pageSize:  500,
			opts:      metav1.ListOptions{Limit: 3},
			pages:     map[string]rfReply{"": {obj: rfPodList("7", "")}},
			want:      listedItems{resourceVersion: "7"},
			wantNames: []string{},
			wantCalls: []metav1.ListOptions{{Limit: 3}},
		},
		"an expired continue token falls back to one whole list at the first version": {
			pageSize: 1,
			opts:     metav1.ListOptions{ResourceVersion: "5", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan},
			pages: map[string]rfReply{
				"":   {obj: rfPodList("7", "c1", rfPod("a", "1"))},
				"c1": {err: expired},
			},
			whole:     &rfReply{obj: rfPodList("9", "", rfPod("a", "1"), rfPod("b", "2"), rfPod("c", "3"))},
			want:      listedItems{resourceVersion: "9", paginated: true},
			wantNames: []string{"a@1", "b@2", "c@3"},
			wantCalls: []metav1.ListOptions{
				{ResourceVersion: "5", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, Limit: 1},
				{Continue: "c1", Limit: 1},
				{ResourceVersion: "5", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan},
			},
		},
		"an expired first page is the caller's problem": {
			pageSize:  1,
			opts:      metav1.ListOptions{ResourceVersion: "5"},
			pages:     map[string]rfReply{"": {err: expired}},
			wantCalls: []metav1.ListOptions{{ResourceVersion: "5", Limit: 1}},
			wantErr:   "continue expired",
		},
		"a gone continue token is not an expired one": {
			pageSize: 1,
			pages: map[string]rfReply{
				"":   {obj: rfPodList("7", "c1", rfPod("a", "1"))},
				"c1": {err: goneError("gone")},
			},
			wantCalls: []metav1.ListOptions{{Limit: 1}, {Continue: "c1", Limit: 1}},
			wantErr:   "gone",
		},
		"a page that is not a list": {
			pageSize:  1,
			pages:     map[string]rfReply{"": {obj: rfPod("a", "1")}},
			wantCalls: []metav1.ListOptions{{Limit: 1}},
			wantErr:   "returned object must be a list: object does not implement the List interfaces",
		},
		"a nil page": {
			pageSize:  1,
			pages:     map[string]rfReply{"": {}},
			wantCalls: []metav1.ListOptions{{Limit: 1}},
			wantErr:   "returned object must be a list: object does not implement the List interfaces",
		},
		"a table": {
			pageSize:  1,
			pages:     map[string]rfReply{"": {obj: rfTableList()}},
			wantCalls: []metav1.ListOptions{{Limit: 1}},
			wantErr:   "unsupported list gvk",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			src := &rfPages{pages: tc.pages, whole: tc.whole}
			p := listPager{pageSize: tc.pageSize, fetch: src.fetch}
			got, err := p.collect(context.Background(), tc.opts)
			if diff := cmp.Diff(tc.wantCalls, src.calls); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("collect error = %v, want one mentioning %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("collect: %v", err)
			}
			if diff := cmp.Diff(tc.wantNames, rfNames(got.items)); diff != "" {
				t.Errorf("items (-want +got):\n%s", diff)
			}
			if got.resourceVersion != tc.want.resourceVersion || got.paginated != tc.want.paginated {
				t.Errorf("(rv, paginated) = (%q, %v), want (%q, %v)", got.resourceVersion, got.paginated, tc.want.resourceVersion, tc.want.paginated)
			}
		})
	}
}

func TestListPager_CopiesItemsOutOfEachPage(t *testing.T) {
	page := rfPodList("7", "", rfPod("a", "1"), rfPod("b", "2"))
	p := listPager{pageSize: 10, fetch: func(context.Context, metav1.ListOptions) (runtime.Object, error) { return page, nil }}
	got, err := p.collect(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i, it := range got.items {
		if it.(*v1.Pod) == &page.Items[i] {
			t.Errorf("item %d points into the page", i)
		}
	}
	if cap(got.items) != 2 {
		t.Errorf("items slice has capacity %d, want exactly the page's 2", cap(got.items))
	}
}

func TestListPager_ReadsUnstructuredLists(t *testing.T) {
	list := &unstructured.UnstructuredList{Object: map[string]interface{}{"apiVersion": "v1", "kind": "PodList"}}
	list.SetResourceVersion("4")
	for _, name := range []string{"a", "b"} {
		u := unstructured.Unstructured{}
		u.SetNamespace("ns")
		u.SetName(name)
		u.SetResourceVersion("3")
		list.Items = append(list.Items, u)
	}
	p := listPager{fetch: func(context.Context, metav1.ListOptions) (runtime.Object, error) { return list, nil }}
	got, err := p.collect(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a@3", "b@3"}, rfNames(got.items)); diff != "" {
		t.Errorf("items (-want +got):\n%s", diff)
	}
}

func TestListPager_StopsBetweenPagesWhenCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	p := listPager{pageSize: 1, fetch: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
		calls++
		cancel()
		return rfPodList("7", "more", rfPod("a", "1")), nil
	}}
	_, err := p.collect(ctx, metav1.ListOptions{})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("collect error = %v, want context.Canceled", err)
	}
	if calls != 1 {
		t.Errorf("%d pages requested after cancel, want 1", calls)
	}
}
