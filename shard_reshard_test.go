package cache

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	testingclock "k8s.io/utils/clock/testing"

	framework "github.com/kcache/cache/testing"
)

// middleHalf overlaps both halves, so a move from firstHalf to it has
// objects that stay, objects that leave and objects that enter.
const middleHalf = "shardRange(object.metadata.uid, '0x4000000000000000', '0xc000000000000000')"

// inRange says whether a UID's FNV-1a hash falls in [from, to), computed
// here without apimachinery.
func inRange(name string, from, to uint64) bool {
	h := fnvOf(string(uidOf(name)))
	return h >= from && h < to
}

func inMiddleHalf(name string) bool { return inRange(name, 1<<62, 3<<62) }

func fnvOf(s string) uint64 {
	const offset, prime = 14695981039346656037, 1099511628211
	h := uint64(offset)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= prime
	}
	return h
}

// moveRecorder records what a sharded informer's handler is told and, at
// every call, whether the informer had synced and whether its store held
// an object of neither shard.
type moveRecorder struct {
	store     func() Store
	hasSynced func() bool

	// mu guards the fields below.
	mu       sync.Mutex
	events   []string
	problems []string
	changed  chan struct{}
}

func newMoveRecorder() *moveRecorder {
	return &moveRecorder{changed: make(chan struct{}, 1)}
}

func (r *moveRecorder) note(event string) {
	var problems []string
	r.mu.Lock()
	hasSynced := r.hasSynced
	r.mu.Unlock()
	if hasSynced != nil && !hasSynced() {
		problems = append(problems, event+": HasSynced false")
	}
	if r.store != nil {
		for _, obj := range r.store().List() {
			name := obj.(*v1.Pod).Name
			if !inFirstHalf(uidOf(name)) && !inMiddleHalf(name) {
				problems = append(problems, event+": store holds "+name+", in neither shard")
			}
		}
	}
	r.mu.Lock()
	r.events = append(r.events, event)
	r.problems = append(r.problems, problems...)
	r.mu.Unlock()
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

func (r *moveRecorder) handler() ResourceEventHandlerFuncs {
	return ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) { r.note("add " + obj.(*v1.Pod).Name) },
		UpdateFunc: func(oldObj, newObj interface{}) {
			o, n := oldObj.(*v1.Pod), newObj.(*v1.Pod)
			kind := "update "
			if o.ResourceVersion == n.ResourceVersion {
				kind = "same-version update "
			}
			r.note(kind + n.Name)
		},
		DeleteFunc: func(obj interface{}) {
			switch o := obj.(type) {
			case MovedOutOfShard:
				r.note("moved " + o.Obj.(*v1.Pod).Name)
			case DeletedFinalStateUnknown:
				r.note("tombstone " + o.Obj.(*v1.Pod).Name)
			default:
				r.note("delete " + o.(*v1.Pod).Name)
			}
		},
	}
}

// take returns the events recorded so far and forgets them.
func (r *moveRecorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.events
	r.events = nil
	return out
}

// waitFor waits, without sleeping, until cond holds after some handler call.
func (r *moveRecorder) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	timeout := wait.ForeverTestTimeout
	expired := make(chan struct{})
	timer := time.AfterFunc(timeout, func() { close(expired) })
	defer timer.Stop()
	for !cond() {
		select {
		case <-r.changed:
		case <-expired:
			t.Fatalf("gave up waiting for %s", what)
		}
	}
}

func TestShardedInformer_SetShardMovesWithOneRelist(t *testing.T) {
	cases := map[string]struct {
		honour, streaming, perObjectReplace, plainInformer bool
		pageSize                                           int
	}{
		"server filters, one page":      {honour: true},
		"server filters, paginated":     {honour: true, pageSize: 4},
		"server filters, streaming":     {honour: true, streaming: true},
		"server ignores, one page":      {},
		"server ignores, paginated":     {pageSize: 4},
		"server ignores, streaming":     {streaming: true},
		"per-object replace":            {honour: true, perObjectReplace: true},
		"NewInformer, server filters":   {honour: true, plainInformer: true},
		"NewInformer, per-object queue": {perObjectReplace: true, plainInformer: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			defer setFeatureForTesting(featureWatchListClient, tc.streaming)()
			defer setFeatureForTesting(featureAtomicFIFO, !tc.perObjectReplace)()
			src, names := shardSource(t, 60)
			server := &shardServer{src: src, honour: tc.honour, pageSize: tc.pageSize}
			lw, err := NewShardedListerWatcher(server, firstHalf)
			if err != nil {
				t.Fatal(err)
			}
			rec := newMoveRecorder()
			var store Store
			var runner infRunner
			var hasSynced func() bool
			if tc.plainInformer {
				var ctrl Controller
				store, ctrl = NewInformerWithOptions(InformerOptions{ListerWatcher: lw, ObjectType: &v1.Pod{}, Handler: rec.handler()})
				runner, hasSynced = ctrl, ctrl.HasSynced
			} else {
				inf := NewSharedIndexInformer(lw, &v1.Pod{}, 0, Indexers{})
				if _, err := inf.AddEventHandler(rec.handler()); err != nil {
					t.Fatal(err)
				}
				store, runner, hasSynced = inf.GetStore(), inf, inf.HasSynced
			}
			rec.store = func() Store { return store }
			stop := infRun(t, runner)
			if !WaitForCacheSync(t.Context().Done(), hasSynced) {
				t.Fatal("informer did not sync")
			}
			want := func(in func(string) bool) map[string]string {
				out := map[string]string{}
				for _, n := range names {
					if in(n) {
						out["ns/"+n] = "1"
					}
				}
				return out
			}
			first := func(n string) bool { return inFirstHalf(uidOf(n)) }
			// The handler, not only the store, must be done with the first
			// shard: its adds come after the store's.
			rec.waitFor(t, "the first shard's adds", func() bool {
				rec.mu.Lock()
				defer rec.mu.Unlock()
				return len(rec.events) == len(want(first))
			})
			if diff := cmp.Diff(want(first), infRVsAsOne(store)); diff != "" {
				t.Fatalf("the first shard (-want +got):\n%s", diff)
			}
			rec.take()
			if !tc.plainInformer {
				// NewInformer's handlers run inside the queue's Pop, as in
				// client-go, where asking the queue HasSynced would deadlock.
				rec.mu.Lock()
				rec.hasSynced = hasSynced
				rec.mu.Unlock()
			}
			requestsBefore := len(server.seen())

			if err := lw.SetShard(middleHalf); err != nil {
				t.Fatal(err)
			}
			rec.waitFor(t, "the new shard", func() bool { return cmp.Equal(want(inMiddleHalf), infRVsAsOne(store)) })
			// A change after the move marks the end of what the move told.
			var sentinel *v1.Pod
			for _, n := range names {
				if first(n) && inMiddleHalf(n) {
					sentinel = shardPod(n)
					break
				}
			}
			sentinel.Labels = map[string]string{"after": "move"}
			src.Modify(sentinel)
			rec.waitFor(t, "the sentinel", func() bool {
				rec.mu.Lock()
				defer rec.mu.Unlock()
				return slices.Contains(rec.events, "update "+sentinel.Name)
			})
			if !hasSynced() {
				t.Error("HasSynced is false after the move")
			}
			stop()

			var wantEvents []string
			for _, n := range names {
				switch {
				case first(n) && !inMiddleHalf(n):
					wantEvents = append(wantEvents, "moved "+n)
				case !first(n) && inMiddleHalf(n):
					wantEvents = append(wantEvents, "add "+n)
				}
			}
			wantEvents = append(wantEvents, "update "+sentinel.Name)
			got := rec.take()
			if tc.perObjectReplace {
				// Per-object relists re-deliver what stayed, as any relist does.
				got = slices.DeleteFunc(got, func(e string) bool {
					var n string
					_, err := fmt.Sscanf(e, "same-version update %s", &n)
					return err == nil && first(n) && inMiddleHalf(n)
				})
			}
			slices.Sort(got)
			slices.Sort(wantEvents)
			if diff := cmp.Diff(wantEvents, got); diff != "" {
				t.Errorf("events of the move (-want +got):\n%s\nall: %q", diff, got)
			}
			rec.mu.Lock()
			for _, p := range rec.problems {
				t.Error(p)
			}
			rec.mu.Unlock()
			if lw.Selector() != middleHalf {
				t.Errorf("Selector() = %q, want %q", lw.Selector(), middleHalf)
			}
			after := server.seen()[requestsBefore:]
			lists := 0
			for _, r := range after {
				if canSendShardSelector() && r.ShardSelector != middleHalf {
					t.Errorf("a request after the move carries %q", r.ShardSelector)
				}
				if r.Verb == "list" && !r.Continue || r.Streaming {
					lists++
				}
			}
			if lists == 0 {
				t.Error("no list under the new selector")
			}
		})
	}
}

// infRVsAsOne returns the store's keys, each with "1": the content without
// resource versions, which the sentinel changes.
func infRVsAsOne(s Store) map[string]string {
	out := map[string]string{}
	for _, key := range s.ListKeys() {
		out[key] = "1"
	}
	return out
}

func TestShardedListerWatcher_SetShardRefusesWhatWouldCrossTheMove(t *testing.T) {
	src := framework.NewFakeControllerSource()
	defer src.Shutdown()
	for i := range 20 {
		src.Add(shardPod(fmt.Sprint("p", i)))
	}
	server := &shardServer{src: src, honour: true, pageSize: 3}
	lw, err := NewShardedListerWatcher(server, firstHalf)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()

	// A watch needs no list before the first move. It starts at the
	// source's newest version, so that nothing is replayed before the move
	// and its first event can only be the one the move causes.
	all, err := src.List(metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	newest := all.(*v1.List).ResourceVersion
	w, err := lw.WatchWithContext(ctx, metav1.ListOptions{ResourceVersion: newest})
	if err != nil {
		t.Fatal(err)
	}
	// A paginated list begun before the move.
	page, err := lw.ListWithContext(ctx, metav1.ListOptions{Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	next := page.(*v1.List).Continue
	if next == "" {
		t.Fatal("the first page has no continue token")
	}

	if err := lw.SetShard(middleHalf); err != nil {
		t.Fatal(err)
	}
	// The live watch ends with an expired resource version.
	ev, ok := <-w.ResultChan()
	if !ok || ev.Type != watch.Error {
		t.Fatalf("live watch after the move: %v %v, want an error event", ev.Type, ok)
	}
	if err := apierrors.FromObject(ev.Object); !apierrors.IsResourceExpired(err) || !isShardMoved(err) {
		t.Errorf("the live watch's error is %v, want an expired resource version marked as a move (so the Reflector relists without backing off)", err)
	}
	if isShardMoved(apierrors.NewResourceExpired("too old")) {
		t.Error("a plain expired resource version passes for a move")
	}
	if _, ok := <-w.ResultChan(); ok {
		t.Error("the live watch goes on after its error")
	}
	w.Stop()

	// The continued list and a plain watch are refused until a list under
	// the new selector came back whole.
	if _, err := lw.ListWithContext(ctx, metav1.ListOptions{Limit: 3, Continue: next}); !apierrors.IsResourceExpired(err) {
		t.Errorf("continuing a list begun before the move: %v, want an expired resource version", err)
	}
	if _, err := lw.WatchWithContext(ctx, metav1.ListOptions{ResourceVersion: "1"}); !apierrors.IsResourceExpired(err) {
		t.Errorf("watching before listing the new shard: %v, want an expired resource version", err)
	}
	var rv string
	for opts := (metav1.ListOptions{Limit: 3}); ; {
		page, err := lw.ListWithContext(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		list := page.(*v1.List)
		for _, item := range list.Items {
			if !inMiddleHalf(item.Object.(*v1.Pod).Name) {
				t.Errorf("the new list holds %s, outside the new shard", item.Object.(*v1.Pod).Name)
			}
		}
		if opts.Continue = list.Continue; opts.Continue == "" {
			rv = list.ResourceVersion
			break
		}
		if _, err := lw.WatchWithContext(ctx, metav1.ListOptions{ResourceVersion: "1"}); !apierrors.IsResourceExpired(err) {
			t.Errorf("watching in the middle of the new list: %v, want an expired resource version", err)
		}
	}
	w, err = lw.WatchWithContext(ctx, metav1.ListOptions{ResourceVersion: rv})
	if err != nil {
		t.Fatalf("watching after the new list: %v", err)
	}
	w.Stop()
	for range w.ResultChan() {
	}
}

func TestShardedListerWatcher_StreamingListEndCompletesTheNewList(t *testing.T) {
	src := framework.NewFakeControllerSource()
	defer src.Shutdown()
	src.Add(shardPod("p0"))
	lw, err := NewShardedListerWatcher(&shardServer{src: src, honour: true}, firstHalf)
	if err != nil {
		t.Fatal(err)
	}
	if err := lw.SetShard(middleHalf); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if _, err := lw.WatchWithContext(ctx, metav1.ListOptions{ResourceVersion: "1"}); !apierrors.IsResourceExpired(err) {
		t.Fatalf("plain watch before the new list: %v, want an expired resource version", err)
	}
	stream, err := lw.WatchWithContext(ctx, metav1.ListOptions{
		SendInitialEvents: ptrTo(true), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	for ev := range stream.ResultChan() {
		if ev.Type == watch.Bookmark && endsInitialEvents(ev.Object) {
			break
		}
	}
	stream.Stop()
	w, err := lw.WatchWithContext(ctx, metav1.ListOptions{ResourceVersion: "1"})
	if err != nil {
		t.Fatalf("plain watch after the streaming list: %v", err)
	}
	w.Stop()
}

func TestShardedListerWatcher_SetShardBadOrSameSelectorChangesNothing(t *testing.T) {
	src := framework.NewFakeControllerSource()
	defer src.Shutdown()
	src.Add(podNamed("before", true))
	lw, err := NewShardedListerWatcher(&shardServer{src: src, honour: true}, firstHalf)
	if err != nil {
		t.Fatal(err)
	}
	w, err := lw.WatchWithContext(t.Context(), metav1.ListOptions{ResourceVersion: "1"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for _, sel := range []string{"shardRange(object.metadata.uid, '0x1', '0x2')", "", "nonsense("} {
		if err := lw.SetShard(sel); !errors.Is(err, ErrInvalidShardSelector) {
			t.Errorf("SetShard(%q) = %v, want ErrInvalidShardSelector", sel, err)
		}
	}
	// The same shard, spelled with spaces, is no move.
	if err := lw.SetShard("shardRange( object.metadata.uid , '0x0000000000000000','0x8000000000000000' )"); err != nil {
		t.Fatal(err)
	}
	if lw.Selector() != firstHalf {
		t.Errorf("Selector() = %q after refused moves", lw.Selector())
	}
	src.Add(podNamed("after", true))
	if ev := <-w.ResultChan(); ev.Type != watch.Added {
		t.Errorf("the watch got %v after refused moves, want the add", ev.Type)
	}
}

func TestIsMovedOutOfShard(t *testing.T) {
	pod := shardPod("p")
	moved := MovedOutOfShard{Key: "ns/p", Obj: pod}
	cases := map[string]struct {
		obj  interface{}
		want bool
	}{
		"marker":                    {moved, true},
		"pointer to marker":         {&moved, true},
		"tombstone carrying it":     {DeletedFinalStateUnknown{Key: "ns/p", Obj: moved}, true},
		"tombstone pointer with it": {&DeletedFinalStateUnknown{Key: "ns/p", Obj: moved}, true},
		"plain tombstone":           {DeletedFinalStateUnknown{Key: "ns/p", Obj: pod}, false},
		"nil tombstone pointer":     {(*DeletedFinalStateUnknown)(nil), false},
		"object":                    {pod, false},
		"nil":                       {nil, false},
	}
	for name, tc := range cases {
		if got := IsMovedOutOfShard(tc.obj); got != tc.want {
			t.Errorf("%s: IsMovedOutOfShard = %v, want %v", name, got, tc.want)
		}
	}
	if _, err := DeletionHandlingMetaNamespaceKeyFunc(moved); err == nil {
		t.Error("DeletionHandlingMetaNamespaceKeyFunc keys a move as a deletion")
	}
}

func TestTypedHandler_GetsAMoveAsADeletedObjectCarryingTheMarker(t *testing.T) {
	pod := shardPod("p")
	var got DeletedObject[*v1.Pod]
	adapter := newTypedHandlerAdapter[*v1.Pod](TypedResourceEventHandlerFuncs[*v1.Pod]{
		DeleteFunc: func(obj DeletedObject[*v1.Pod]) { got = obj },
	})
	adapter.OnDelete(MovedOutOfShard{Key: "ns/p", Obj: pod})
	if got.OptionalObj != pod {
		t.Errorf("OptionalObj = %v, want the last state", got.OptionalObj)
	}
	if !IsMovedOutOfShard(got.FinalStateUnknown) {
		t.Errorf("FinalStateUnknown = %#v does not say moved", got.FinalStateUnknown)
	}
	if got.GetKey() != "ns/p" {
		t.Errorf("GetKey() = %q", got.GetKey())
	}
}

// shardSource returns a fake source holding n shardPods named p0, p1, ...,
// and their names; it is shut down when the test ends.
func shardSource(t *testing.T, n int) (*framework.FakeControllerSource, []string) {
	src := framework.NewFakeControllerSource()
	t.Cleanup(src.Shutdown)
	names := make([]string, n)
	for i := range names {
		p := shardPod(fmt.Sprint("p", i))
		names[i] = p.Name
		src.Add(p)
	}
	return src, names
}

func TestShardedInformerFactory_SetShardMovesEveryInformer(t *testing.T) {
	src, names := shardSource(t, 30)
	f, err := NewShardedInformerFactory(0, firstHalf)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Shutdown()
	rec := newMoveRecorder()
	inf := f.InformerFor(podsGVR, &v1.Pod{}, func() ListerWatcher { return &shardServer{src: src, honour: true} })
	if _, err := inf.AddEventHandler(rec.handler()); err != nil {
		t.Fatal(err)
	}
	f.Start(t.Context().Done())
	if synced := f.WaitForCacheSync(t.Context().Done()); !synced[podsGVR] {
		t.Fatal("informer did not sync")
	}
	if err := f.SetShard("nonsense"); !errors.Is(err, ErrInvalidShardSelector) {
		t.Errorf("SetShard(nonsense) = %v, want ErrInvalidShardSelector", err)
	}
	if err := f.SetShard(middleHalf); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, n := range names {
		if inMiddleHalf(n) {
			want["ns/"+n] = "1"
		}
	}
	rec.waitFor(t, "the new shard", func() bool { return cmp.Equal(want, infRVsAsOne(inf.GetStore())) })

	// An informer asked for after the move holds the new shard.
	later := f.InformerFor(podsGVR.GroupResource().WithVersion("v2"), &v1.Pod{}, func() ListerWatcher { return &shardServer{src: src, honour: true} })
	f.Start(t.Context().Done())
	f.WaitForCacheSync(t.Context().Done())
	if diff := cmp.Diff(want, infRVsAsOne(later.GetStore())); diff != "" {
		t.Errorf("an informer made after the move (-want +got):\n%s", diff)
	}

	if err := NewInformerFactory(0).SetShard(middleHalf); err == nil {
		t.Error("SetShard on a factory without a shard succeeded")
	}
}

// replaceSignal is a Store that reports, after each Replace, the names it
// was given.
type replaceSignal struct {
	Store
	replaced chan []string
}

func (s replaceSignal) Replace(items []interface{}, rv string) error {
	err := s.Store.Replace(items, rv)
	names := make([]string, 0, len(items))
	for _, item := range items {
		names = append(names, item.(*v1.Pod).Name)
	}
	slices.Sort(names)
	s.replaced <- names
	return err
}

// A move is not a failure: the Reflector lists again without waiting for
// its backoff, which on a fake clock that never advances would be forever.
func TestReflector_ShardMoveRelistsWithoutBackoff(t *testing.T) {
	for _, streaming := range []bool{false, true} {
		t.Run(fmt.Sprint("streaming=", streaming), func(t *testing.T) {
			defer setFeatureForTesting(featureWatchListClient, streaming)()
			src := framework.NewFakeControllerSource()
			defer src.Shutdown()
			var first, middle []string
			for i := range 40 {
				p := shardPod(fmt.Sprint("p", i))
				src.Add(p)
				if inRange(p.Name, 0, 1<<63) {
					first = append(first, p.Name)
				}
				if inMiddleHalf(p.Name) {
					middle = append(middle, p.Name)
				}
			}
			slices.Sort(first)
			slices.Sort(middle)
			lw, err := NewShardedListerWatcher(&shardServer{src: src, honour: true}, firstHalf)
			if err != nil {
				t.Fatal(err)
			}
			store := replaceSignal{Store: NewStore(MetaNamespaceKeyFunc), replaced: make(chan []string, 4)}
			clock := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			r := NewReflectorWithOptions(lw, &v1.Pod{}, store, ReflectorOptions{Clock: clock})
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() {
				defer close(done)
				r.RunWithContext(ctx)
			}()
			defer func() {
				cancel()
				<-done
			}()
			next := func(what string) []string {
				t.Helper()
				select {
				case names := <-store.replaced:
					return names
				case <-time.After(wait.ForeverTestTimeout):
					t.Fatalf("no %s: the Reflector waits on its backoff", what)
					return nil
				}
			}
			if d := cmp.Diff(first, next("first list")); d != "" {
				t.Fatalf("first list (-want +got):\n%s", d)
			}
			if err := lw.SetShard(middleHalf); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(middle, next("relist after the move")); d != "" {
				t.Errorf("relist after the move (-want +got):\n%s", d)
			}
		})
	}
}
