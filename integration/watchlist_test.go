package integration

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	kcache "github.com/kcache/cache"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgocache "k8s.io/client-go/tools/cache"
)

// watchListGate is the environment variable both kcache and client-go read
// (once per process) for the WatchListClient feature gate.
const watchListGate = "KUBE_FEATURE_WatchListClient"

// TestWatchListClientGate runs TestStreamingChild in child processes with
// streaming lists switched on and off through the feature gate. With them
// off, the child also runs the interruption scenarios, which this process
// runs with the gate as the environment sets it (on by default), so that
// relisting by List is covered as well as by streaming.
func TestWatchListClientGate(t *testing.T) {
	needServer(t)
	for _, tc := range []struct {
		name  string
		value string
		tests []string
	}{
		{"streaming lists on", "true", []string{"TestStreamingChild"}},
		{"streaming lists off", "false", []string{"TestStreamingChild", "TestRestartMidChurn", "TestMissedDeletesBecomeTombstones"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runChild(t, tc.tests, watchListGate+"="+tc.value)
		})
	}
}

// streamingExpected reports whether this process streams lists: the gate
// is on unless the environment switches it off, as in kcache and client-go.
func streamingExpected(t *testing.T) bool {
	t.Helper()
	switch v := os.Getenv(watchListGate); v {
	case "", "true":
		return true
	case "false":
		return false
	default:
		t.Fatalf("%s=%q: want true or false", watchListGate, v)
		return false
	}
}

// ignoreTimeout drops the watch timeout, which reflectors randomise.
var ignoreTimeout = cmpopts.IgnoreFields(metav1.ListOptions{}, "TimeoutSeconds")

// TestStreamingChild checks how informers and reflectors list under the
// WatchListClient gate of this process: with it on, by one streaming watch
// (sendInitialEvents) and no List; with it off, by List, in pages of
// WatchListPageSize when that is set. kcache must send the same requests
// as client-go and end up with the same objects.
func TestStreamingChild(t *testing.T) {
	needChild(t, "TestWatchListClientGate")
	s := needServer(t)
	streaming := streamingExpected(t)
	t.Logf("%s=%q: streaming lists expected: %v", watchListGate, os.Getenv(watchListGate), streaming)

	t.Run("informer", func(t *testing.T) {
		ctx := context.Background()
		kind := podClient{client: s.client}
		namespaces := s.namespaces(t, "stream", 2)
		plan := churnPlan{preexisting: 150, burst: 50, shortLived: 20, updates: 1, deletePercent: 50, parallel: 8, writers: 2}
		c := newChurn(plan, kind, namespaces)
		if err := c.prepopulate(ctx); err != nil {
			t.Fatalf("prepopulate: %v", err)
		}
		lw := funcsListWatch(kind)
		ourLW, theirLW := newObservedLW(lw.kcache.(contextListerWatcher)), newObservedLW(lw.clientGo.(contextListerWatcher))
		ours := start(t, "kcache", kcacheInformer{kcache.NewSharedIndexInformer(ourLW, kind.example(), 0, kcache.Indexers{})}, 1, namespaces...)
		theirs := start(t, "client-go", clientGoInformer{clientgocache.NewSharedIndexInformer(theirLW, kind.example(), 0, clientgocache.Indexers{})}, 1, namespaces...)
		if err := c.run(ctx, nil); err != nil {
			t.Fatalf("workload: %v", err)
		}
		c.account()
		waitConverged(t, listSnapshot(t, kind, namespaces...), ours, theirs)
		checkComplete(t, c.w.ledger, kind.deleteMarks(), ours, theirs)
		compareCounts(t, ours.early[0], theirs.early[0])
		if got, _ := ours.early[0].result(); got.InitialAdds != plan.preexisting {
			t.Errorf("kcache handler: %d initial adds, want %d", got.InitialAdds, plan.preexisting)
		}
		checkListing(t, streaming, ourLW.observe(), theirLW.observe())
		countEvents(ours, theirs)
		tally.scenarios.Add(1)
	})

	t.Run("pagination", func(t *testing.T) {
		testPagination(t, s, streaming)
	})
}

// checkListing checks how an informer listed: once, by streaming or by
// List as the gate says, with the same first request as client-go's.
func checkListing(t *testing.T, streaming bool, ours, theirs observation) {
	t.Helper()
	if got := ours.fullLists(); got != 1 {
		t.Errorf("kcache listed %d times, want once (lists %d, streams %d)", got, len(ours.lists), len(ours.streams()))
	}
	if streaming {
		if len(ours.lists) != 0 || len(ours.streams()) != 1 {
			t.Fatalf("kcache made %d List calls and %d streaming watches, want 0 and 1", len(ours.lists), len(ours.streams()))
		}
		if d := cmp.Diff(theirs.streams()[0], ours.streams()[0], ignoreTimeout); d != "" {
			t.Errorf("streaming watch request (-client-go, +kcache):\n%s", d)
		}
		return
	}
	if len(ours.lists) == 0 || len(ours.streams()) != 0 {
		t.Fatalf("kcache made %d List calls and %d streaming watches, want some and 0", len(ours.lists), len(ours.streams()))
	}
	if d := cmp.Diff(theirs.lists[0].options, ours.lists[0].options); d != "" {
		t.Errorf("first List request (-client-go, +kcache):\n%s", d)
	}
}

// pageSize is the small WatchListPageSize of the pagination scenarios.
const pageSize = 10

// testPagination fills a namespace with ConfigMaps and lists it with
// WatchListPageSize 10 through cache.New, through NewReflectorWithOptions,
// and through client-go's reflector for comparison.
func testPagination(t *testing.T, s *server, streaming bool) {
	ctx := context.Background()
	kind := configMapClient{client: s.client}
	ns := s.namespaces(t, "pages", 1)[0]
	const objects = 95
	c := newChurn(churnPlan{preexisting: objects, parallel: 8}, kind, []string{ns})
	if err := c.prepopulate(ctx); err != nil {
		t.Fatalf("prepopulate: %v", err)
	}
	c.account()
	want := listSnapshot(t, kind, ns)
	list, watch := kind.listWatch(ns)

	type result struct {
		store snapshot
		ob    observation
	}
	run := func(t *testing.T, name string, lw *observedLW, runner func(ctx context.Context, store kcache.Store)) result {
		store := kcache.NewStore(kcache.DeletionHandlingMetaNamespaceKeyFunc)
		ctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			runner(ctx, store)
		}()
		defer func() {
			cancel()
			<-done
		}()
		var got snapshot
		err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, syncTimeout, true, func(context.Context) (bool, error) {
			got = storeSnapshot(t, store.List())
			return cmp.Equal(want, got), nil
		})
		if err != nil {
			t.Fatalf("%s: store did not reach the listed state: (-want, +got):\n%s", name, cmp.Diff(want, got))
		}
		return result{store: got, ob: lw.observe()}
	}

	ourFuncs := &kcache.ListWatch{ListWithContextFunc: kcache.ListWithContextFunc(list), WatchFuncWithContext: kcache.WatchFuncWithContext(watch)}
	viaNew := newObservedLW(ourFuncs)
	byNew := run(t, "cache.New", viaNew, func(ctx context.Context, store kcache.Store) {
		fifo := kcache.NewDeltaFIFOWithOptions(kcache.DeltaFIFOOptions{KeyFunction: kcache.MetaNamespaceKeyFunc, KnownObjects: store})
		kcache.New(&kcache.Config{
			Queue:             fifo,
			ListerWatcher:     viaNew,
			ObjectType:        &corev1.ConfigMap{},
			WatchListPageSize: pageSize,
			Process: func(obj any, _ bool) error {
				return applyDeltas(store, obj.(kcache.Deltas))
			},
		}).RunWithContext(ctx)
	})
	viaReflector := newObservedLW(ourFuncs)
	byReflector := run(t, "NewReflectorWithOptions", viaReflector, func(ctx context.Context, store kcache.Store) {
		r := kcache.NewReflectorWithOptions(viaReflector, &corev1.ConfigMap{}, store, kcache.ReflectorOptions{})
		r.WatchListPageSize = pageSize
		r.RunWithContext(ctx)
	})
	theirFuncs := &clientgocache.ListWatch{ListWithContextFunc: clientgocache.ListWithContextFunc(list), WatchFuncWithContext: clientgocache.WatchFuncWithContext(watch)}
	viaClientGo := newObservedLW(theirFuncs)
	byClientGo := run(t, "client-go reflector", viaClientGo, func(ctx context.Context, store kcache.Store) {
		r := clientgocache.NewReflectorWithOptions(viaClientGo, &corev1.ConfigMap{}, store, clientgocache.ReflectorOptions{})
		r.WatchListPageSize = pageSize
		r.RunWithContext(ctx)
	})

	for _, tc := range []struct {
		name string
		got  result
	}{{"cache.New", byNew}, {"NewReflectorWithOptions", byReflector}} {
		ob := tc.got.ob
		t.Logf("%s: %d List calls (items per page %v), %d streaming watches (watch cache on: %v; it ignores the limit of a list at resourceVersion 0)",
			tc.name, len(ob.lists), pageItems(ob), len(ob.streams()), s.watchCache)
		if streaming {
			if len(ob.lists) != 0 || len(ob.streams()) != 1 {
				t.Errorf("%s: %d List calls and %d streaming watches, want 0 and 1: a streaming list ignores the page size", tc.name, len(ob.lists), len(ob.streams()))
			}
			continue
		}
		checkPages(t, tc.name, ob, objects)
		if want := (objects + pageSize - 1) / pageSize; !s.watchCache && len(ob.lists) != want {
			t.Errorf("%s: %d pages, want %d: without a watch cache the server honours the limit", tc.name, len(ob.lists), want)
		}
		if d := cmp.Diff(listRequests(byClientGo.ob), listRequests(ob), ignoreTimeout); d != "" {
			t.Errorf("%s: List requests (-client-go, +kcache):\n%s", tc.name, d)
		}
	}
	tally.scenarios.Add(1)
}

// checkPages checks a paginated listing: every request asks for pageSize
// items, pages follow each other's continue tokens, and together they
// hold every object.
func checkPages(t *testing.T, name string, ob observation, objects int) {
	t.Helper()
	if len(ob.lists) == 0 || len(ob.streams()) != 0 {
		t.Fatalf("%s: %d List calls and %d streaming watches, want some and 0", name, len(ob.lists), len(ob.streams()))
	}
	total := 0
	for i, l := range ob.lists {
		if l.err != nil {
			t.Fatalf("%s: List %d failed: %v", name, i, l.err)
		}
		if l.options.Limit != pageSize {
			t.Errorf("%s: List %d asked for limit %d, want %d", name, i, l.options.Limit, pageSize)
		}
		if i > 0 && l.options.Continue != ob.lists[i-1].cont {
			t.Errorf("%s: List %d continues from %q, want the previous page's token %q", name, i, l.options.Continue, ob.lists[i-1].cont)
		}
		if l.cont != "" && l.items > pageSize {
			t.Errorf("%s: page %d has %d items, more than the limit %d", name, i, l.items, pageSize)
		}
		total += l.items
	}
	if last := ob.lists[len(ob.lists)-1]; last.cont != "" {
		t.Errorf("%s: the last page still has a continue token", name)
	}
	if total < objects {
		t.Errorf("%s: the pages hold %d items, want at least %d", name, total, objects)
	}
}

func pageItems(ob observation) []int {
	out := make([]int, len(ob.lists))
	for i, l := range ob.lists {
		out[i] = l.items
	}
	return out
}

// listRequests returns the options of each List call without the continue
// tokens, which differ between two listings.
func listRequests(ob observation) []metav1.ListOptions {
	out := make([]metav1.ListOptions, len(ob.lists))
	for i, l := range ob.lists {
		out[i] = l.options
		if out[i].Continue != "" {
			out[i].Continue = "(token)"
		}
	}
	return out
}

// applyDeltas applies what a DeltaFIFO popped to store, newest last.
func applyDeltas(store kcache.Store, deltas kcache.Deltas) error {
	for _, d := range deltas {
		var err error
		if d.Type == kcache.Deleted {
			err = store.Delete(d.Object)
		} else {
			err = store.Update(d.Object)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// storeSnapshot turns store items into a snapshot.
func storeSnapshot(t *testing.T, items []any) snapshot {
	t.Helper()
	out := snapshot{}
	for _, obj := range items {
		d, err := describe(obj)
		if err != nil {
			t.Fatalf("store item: %v", err)
		}
		out[d.key] = d.state
	}
	return out
}
