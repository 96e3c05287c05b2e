package cache

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	framework "github.com/kcache/cache/testing"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"
)

// inFirstHalf says whether a UID lies in firstHalf, computed here without
// apimachinery: FNV-1a over the UID's bytes, below 2^63.
func inFirstHalf(uid types.UID) bool {
	h := fnv.New64a()
	h.Write([]byte(uid))
	return h.Sum64() < 1<<63
}

// shardPod is a pod whose UID is derived from its name: a SHA-256 of the
// name written as a UUID, so that UIDs spread over the hash space as real
// (random) ones do. FNV-1a over short similar strings does not spread.
func shardPod(name string) *v1.Pod {
	p := testPod("ns", name, "")
	p.UID = uidOf(name)
	return p
}

func uidOf(name string) types.UID {
	sum := sha256.Sum256([]byte(name))
	h := hex.EncodeToString(sum[:16])
	return types.UID(h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:])
}

// podNamed returns a pod named with prefix whose UID is, or is not, in
// firstHalf.
func podNamed(prefix string, inShard bool) *v1.Pod {
	for i := 0; ; i++ {
		p := shardPod(fmt.Sprint(prefix, i))
		if inFirstHalf(p.UID) == inShard {
			return p
		}
	}
}

// shardServer is a ListerWatcher over a FakeControllerSource that acts as
// an API server with the ShardedListAndWatch feature (honour) or without
// it. It pages lists of more than pageSize items when asked for a limit,
// records every request, and answers the next expireWatches watches with
// an expired resource version.
type shardServer struct {
	src      *framework.FakeControllerSource
	honour   bool
	pageSize int

	// mu guards requests and expireWatches.
	mu            sync.Mutex
	requests      []shardRequest
	expireWatches int
}

// shardRequest is one request a shardServer saw.
type shardRequest struct {
	Verb          string
	Streaming     bool
	Continue      bool
	Limit         int64
	ShardSelector string
}

func (s *shardServer) record(verb string, o metav1.ListOptions) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, shardRequest{
		Verb: verb, Streaming: o.SendInitialEvents != nil && *o.SendInitialEvents,
		Continue: o.Continue != "", Limit: o.Limit, ShardSelector: shardSelectorOf(o),
	})
}

func (s *shardServer) seen() []shardRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// matcher returns whether an object is in o's shard; everything is when
// the server ignores selectors or none (or a malformed one) is given.
func (s *shardServer) matcher(o metav1.ListOptions) func(runtime.Object) bool {
	sel, err := ParseShardSelector(shardSelectorOf(o))
	if !s.honour || err != nil {
		return func(runtime.Object) bool { return true }
	}
	return func(obj runtime.Object) bool {
		ok, err := sel.Matches(obj)
		return ok && err == nil
	}
}

func (s *shardServer) List(o metav1.ListOptions) (runtime.Object, error) {
	s.record("list", o)
	full, err := s.src.List(o)
	if err != nil {
		return nil, err
	}
	items, err := meta.ExtractList(full)
	if err != nil {
		return nil, err
	}
	match := s.matcher(o)
	items = slices.DeleteFunc(items, func(obj runtime.Object) bool { return !match(obj) })
	list := full.(*v1.List)
	if sel, err := ParseShardSelector(shardSelectorOf(o)); s.honour && err == nil {
		echoShardSelector(&list.ListMeta, sel.String())
	}
	if o.Limit > 0 && s.pageSize > 0 {
		from, _ := strconv.Atoi(o.Continue)
		to := min(from+s.pageSize, len(items))
		if to < len(items) {
			list.Continue = strconv.Itoa(to)
		}
		items = items[from:to]
	}
	return list, meta.SetList(list, items)
}

func (s *shardServer) Watch(o metav1.ListOptions) (watch.Interface, error) {
	s.record("watch", o)
	s.mu.Lock()
	expire := s.expireWatches > 0 && o.ResourceVersion != "" && o.ResourceVersion != "0"
	if expire {
		s.expireWatches--
	}
	s.mu.Unlock()
	if expire {
		return nil, apierrors.NewResourceExpired("too old resource version")
	}
	w, err := s.src.Watch(o)
	if err != nil {
		return nil, err
	}
	return newFilteredTestWatch(w, s.matcher(o)), nil
}

// filteredTestWatch is the server side of a sharded watch: it sends only
// the objects in the shard. Bookmarks carry no UID and always pass.
type filteredTestWatch struct {
	inner watch.Interface
	out   chan watch.Event
	done  chan struct{}
	once  sync.Once
}

func newFilteredTestWatch(w watch.Interface, match func(runtime.Object) bool) *filteredTestWatch {
	f := &filteredTestWatch{inner: w, out: make(chan watch.Event), done: make(chan struct{})}
	go func() {
		defer close(f.out)
		for ev := range w.ResultChan() {
			if ev.Type != watch.Bookmark && ev.Type != watch.Error && !match(ev.Object) {
				continue
			}
			select {
			case f.out <- ev:
			case <-f.done:
				return
			}
		}
	}()
	return f
}

func (f *filteredTestWatch) ResultChan() <-chan watch.Event { return f.out }

func (f *filteredTestWatch) Stop() {
	f.once.Do(func() { close(f.done) })
	f.inner.Stop()
}

// sentinelWaiter lets a test wait, without sleeping, until an informer
// delivered the add of a named object.
type sentinelWaiter struct {
	// mu guards names and waiting.
	mu      sync.Mutex
	names   []string
	waiting map[string]chan struct{}
}

func (w *sentinelWaiter) handler() ResourceEventHandlerFuncs {
	note := func(obj interface{}) {
		if d, ok := obj.(DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		pod := obj.(*v1.Pod)
		w.mu.Lock()
		defer w.mu.Unlock()
		w.names = append(w.names, pod.Name)
		if ch, ok := w.waiting[pod.Name]; ok {
			close(ch)
			delete(w.waiting, pod.Name)
		}
	}
	return ResourceEventHandlerFuncs{
		AddFunc:    func(obj interface{}) { note(obj) },
		UpdateFunc: func(_, obj interface{}) { note(obj) },
		DeleteFunc: note,
	}
}

// expect returns a channel closed once the named object was delivered.
func (w *sentinelWaiter) expect(name string) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	ch := make(chan struct{})
	if w.waiting == nil {
		w.waiting = map[string]chan struct{}{}
	}
	w.waiting[name] = ch
	return ch
}

// delivered returns the names of every object the handler saw.
func (w *sentinelWaiter) delivered() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.names)
}

// shardTruth returns the keys and resource versions of src's objects in
// firstHalf.
func shardTruth(t *testing.T, src *framework.FakeControllerSource) map[string]string {
	t.Helper()
	list, err := src.List(metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, item := range items {
		pod := item.(*v1.Pod)
		if inFirstHalf(pod.UID) {
			out[pod.Namespace+"/"+pod.Name] = pod.ResourceVersion
		}
	}
	if len(out) == 0 || len(out) == len(items) {
		t.Fatalf("%d of %d objects are in the shard: the test needs objects on both sides", len(out), len(items))
	}
	return out
}

func TestShardedInformer_HoldsExactlyItsShardWhetherOrNotTheServerFilters(t *testing.T) {
	cases := map[string]struct {
		honour    bool
		pageSize  int
		streaming bool
		// perObjectReplace turns AtomicFIFO off: a relist reaches the
		// informer as one Replaced delta per object.
		perObjectReplace bool
		// wantMode is the mode after the initial list.
		wantMode ShardMode
	}{
		"server filters, one page":           {honour: true, wantMode: ShardModeServer},
		"server filters, paginated":          {honour: true, pageSize: 3, wantMode: ShardModeServer},
		"server filters, streaming":          {honour: true, streaming: true, wantMode: ShardModeServer},
		"server ignores, one page":           {wantMode: ShardModeClient},
		"server ignores, paginated":          {pageSize: 3, wantMode: ShardModeClient},
		"server ignores, streaming":          {streaming: true, wantMode: ShardModeClient},
		"server filters, pages of one":       {honour: true, pageSize: 1, wantMode: ShardModeServer},
		"server ignores, per-object replace": {perObjectReplace: true, wantMode: ShardModeClient},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			defer setFeatureForTesting(featureWatchListClient, tc.streaming)()
			defer setFeatureForTesting(featureAtomicFIFO, !tc.perObjectReplace)()
			src := framework.NewFakeControllerSource()
			defer src.Shutdown()
			for i := range 40 {
				src.Add(shardPod(fmt.Sprint("p", i)))
			}
			server := &shardServer{src: src, honour: tc.honour, pageSize: tc.pageSize}
			lw, err := NewShardedListerWatcher(server, firstHalf)
			if err != nil {
				t.Fatal(err)
			}
			inf := NewSharedIndexInformer(lw, &v1.Pod{}, 0, Indexers{})
			waiter := &sentinelWaiter{}
			if _, err := inf.AddEventHandler(waiter.handler()); err != nil {
				t.Fatal(err)
			}
			stop := infRun(t, inf)
			if !WaitForCacheSync(t.Context().Done(), inf.HasSynced) {
				t.Fatal("informer did not sync")
			}
			if diff := cmp.Diff(shardTruth(t, src), infStoreState(inf.GetStore())); diff != "" {
				t.Fatalf("after the initial list (-want +got):\n%s", diff)
			}
			if got, want := lw.Mode(), modeInThisBuild(tc.wantMode); got != want {
				t.Errorf("Mode() after the initial list = %v, want %v", got, want)
			}

			// Live changes in and out of the shard, then a sentinel.
			changeBothHalves(src, "live")
			sentinel := podNamed("sentinel-live", true)
			arrived := waiter.expect(sentinel.Name)
			src.Add(sentinel)
			<-arrived
			if diff := cmp.Diff(shardTruth(t, src), infStoreState(inf.GetStore())); diff != "" {
				t.Fatalf("after live changes (-want +got):\n%s", diff)
			}

			// The watch ends and its resource version has expired: the
			// informer lists again, with the selector.
			server.mu.Lock()
			server.expireWatches = 1
			server.mu.Unlock()
			src.ResetWatch()
			changeBothHalves(src, "relist")
			sentinel = podNamed("sentinel-relist", true)
			arrived = waiter.expect(sentinel.Name)
			src.Add(sentinel)
			<-arrived
			if diff := cmp.Diff(shardTruth(t, src), infStoreState(inf.GetStore())); diff != "" {
				t.Fatalf("after the relist (-want +got):\n%s", diff)
			}
			stop()

			for _, name := range waiter.delivered() {
				if !inFirstHalf(uidOf(name)) {
					t.Errorf("handler saw %s, outside the shard", name)
				}
			}
			requests := server.seen()
			server.mu.Lock()
			if server.expireWatches != 0 {
				t.Error("no watch was refused as expired")
			}
			server.mu.Unlock()
			assertEveryRequestSharded(t, requests, firstHalf)
			assertRequestShapes(t, requests, tc.pageSize, tc.streaming)
		})
	}
}

// changeBothHalves adds, modifies and deletes pods on both sides of
// firstHalf's boundary.
func changeBothHalves(src *framework.FakeControllerSource, prefix string) {
	for _, in := range []bool{true, false} {
		added := podNamed(prefix+"-add-", in)
		src.Add(added)
		gone := podNamed(prefix+"-gone-", in)
		src.Add(gone)
		changed := gone.DeepCopy()
		changed.Labels = map[string]string{"changed": "yes"}
		src.Modify(changed)
		src.Delete(gone)
		kept := podNamed(prefix+"-kept-", in)
		src.Add(kept)
		kept = kept.DeepCopy()
		kept.Labels = map[string]string{"changed": "yes"}
		src.Modify(kept)
	}
}

func assertEveryRequestSharded(t *testing.T, requests []shardRequest, selector string) {
	t.Helper()
	if !canSendShardSelector() {
		selector = "" // this build's apimachinery cannot send it
	}
	for i, r := range requests {
		if r.ShardSelector != selector {
			t.Errorf("request %d (%+v) has shard selector %q, want %q", i, r, r.ShardSelector, selector)
		}
	}
}

// assertRequestShapes checks that the paths the test meant to cover were
// taken: continued pages when paging, streaming lists when streaming (and
// one probe), and always a second list or streaming list (the relist).
func assertRequestShapes(t *testing.T, requests []shardRequest, pageSize int, streaming bool) {
	t.Helper()
	var lists, continued, streams, probes int
	for _, r := range requests {
		switch {
		case r.Verb == "list" && r.Limit == 1:
			probes++
		case r.Verb == "list" && r.Continue:
			continued++
		case r.Verb == "list":
			lists++
		case r.Streaming:
			streams++
		}
	}
	if streaming {
		wantProbes := 1
		if !canSendShardSelector() {
			wantProbes = 0 // nothing to learn: the selector is not sent
		}
		if streams < 2 || lists != 0 || probes != wantProbes {
			t.Errorf("got %d streaming lists, %d lists and %d probes, want at least 2 streaming lists, no list and %d probes: %+v", streams, lists, probes, wantProbes, requests)
		}
		return
	}
	if probes != 0 {
		t.Errorf("got %d probes without streaming lists: %+v", probes, requests)
	}
	if lists < 2 {
		t.Errorf("got %d lists, want at least 2 (the relist): %+v", lists, requests)
	}
	if pageSize > 0 && continued == 0 {
		t.Errorf("no continued page: %+v", requests)
	}
}

func TestShardedListerWatcher_WithoutTheOptionNothingChanges(t *testing.T) {
	src := framework.NewFakeControllerSource()
	defer src.Shutdown()
	for i := range 10 {
		src.Add(shardPod(fmt.Sprint("p", i)))
	}
	server := &shardServer{src: src, honour: true, pageSize: 3}
	inf := NewSharedIndexInformer(server, &v1.Pod{}, 0, Indexers{})
	infRun(t, inf)
	if !WaitForCacheSync(t.Context().Done(), inf.HasSynced) {
		t.Fatal("informer did not sync")
	}
	if got := len(inf.GetStore().ListKeys()); got != 10 {
		t.Errorf("store holds %d objects, want all 10", got)
	}
	assertEveryRequestSharded(t, server.seen(), "")
}

func TestNewShardedListerWatcher_MalformedSelectorIsAWrappedError(t *testing.T) {
	for name, build := range map[string]func(string) error{
		"lister watcher": func(s string) error { _, err := NewShardedListerWatcher(&ListWatch{}, s); return err },
		"factory":        func(s string) error { _, err := NewShardedInformerFactory(0, s); return err },
	} {
		t.Run(name, func(t *testing.T) {
			err := build("shardRange(object.metadata.uid, '0x0', '0x8000000000000000')")
			if !errors.Is(err, ErrInvalidShardSelector) {
				t.Fatalf("error %v does not wrap ErrInvalidShardSelector", err)
			}
			want := `invalid shard selector "shardRange(object.metadata.uid, '0x0', '0x8000000000000000')": at offset 32: range start: "0x0" must have exactly 16 hex digits (did you mean "0x0000000000000000"?)`
			if err.Error() != want {
				t.Errorf("error\n %s\nwant\n %s", err, want)
			}
		})
	}
}

// fakeShardGauges is a MetricsProvider that also makes shard mode gauges.
type fakeShardGauges struct {
	noopMetricsProvider
	// mu guards values.
	mu     sync.Mutex
	values map[string][]float64
}

type fakeShardGauge struct {
	p    *fakeShardGauges
	name string
}

func (g fakeShardGauge) Set(v float64) {
	g.p.mu.Lock()
	defer g.p.mu.Unlock()
	g.p.values[g.name] = append(g.p.values[g.name], v)
}

func (p *fakeShardGauges) NewShardModeMetric(name string) GaugeMetric {
	return fakeShardGauge{p: p, name: name}
}

// staticLister answers every List with the next of its lists.
type staticLister struct {
	ListWatch
	lists []runtime.Object
}

func (l *staticLister) ListWithContext(context.Context, metav1.ListOptions) (runtime.Object, error) {
	next := l.lists[0]
	l.lists = l.lists[1:]
	return next, nil
}

func TestShardedListerWatcher_ReportsEachModeChangeOnceInLogAndGauge(t *testing.T) {
	in, out := podNamed("in", true), podNamed("out", false)
	podList := func(echoed string) runtime.Object {
		list := &v1.PodList{Items: []v1.Pod{*in, *out}}
		if echoed != "" {
			echoShardSelector(&list.ListMeta, echoed)
		}
		return list
	}
	unstructuredList := func(selector string) runtime.Object {
		u := &unstructured.UnstructuredList{Object: map[string]interface{}{"metadata": map[string]interface{}{}}}
		if selector != "" {
			u.Object["metadata"] = map[string]interface{}{"shardInfo": map[string]interface{}{"selector": selector}}
		}
		for _, p := range []*v1.Pod{in, out} {
			obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(p)
			if err != nil {
				t.Fatal(err)
			}
			u.Items = append(u.Items, unstructured.Unstructured{Object: obj})
		}
		return u
	}
	lists := []runtime.Object{
		podList(firstHalf),          // server
		podList(firstHalf),          // server again: no new report
		podList(""),                 // client
		podList(secondHalf),         // another selector: client, warned
		unstructuredList(firstHalf), // server
		unstructuredList(""),        // client
	}
	// When the server says it filtered, the list is passed on as it came
	// (these hold an object outside the shard on purpose, to show it).
	both, inOnly := []string{in.Name, out.Name}, []string{in.Name}
	wantNames := [][]string{both, both, inOnly, inOnly, both, inOnly}
	wantModes := []ShardMode{ShardModeServer, ShardModeServer, ShardModeClient, ShardModeClient, ShardModeServer, ShardModeClient}
	wantGauge := []float64{0, 1, 2, 1, 2}
	wantLogs := []string{
		"The API server filters by the shard selector",
		"The API server ignores the shard selector; filtering on the client",
		"Warning: the API server applied another shard selector than the one requested; filtering on the client",
		"The API server filters by the shard selector",
		"The API server ignores the shard selector; filtering on the client",
	}
	if !canSendShardSelector() {
		// No selector was sent, so no echo is believed: the client filters
		// every list, from the first on.
		wantNames = [][]string{inOnly, inOnly, inOnly, inOnly, inOnly, inOnly}
		wantModes = []ShardMode{ShardModeClient, ShardModeClient, ShardModeClient, ShardModeClient, ShardModeClient, ShardModeClient}
		wantGauge = []float64{0, 2}
		wantLogs = wantLogs[1:2]
	}

	lw, err := NewShardedListerWatcher(&staticLister{lists: lists}, firstHalf)
	if err != nil {
		t.Fatal(err)
	}
	gauges := &fakeShardGauges{values: map[string][]float64{}}
	lw.reportModeTo("pods", gauges)
	logger, logs := newCapturingLogger(t)
	ctx := klog.NewContext(t.Context(), logger)
	for i := range lists {
		got, err := lw.ListWithContext(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("list %d: %v", i, err)
		}
		items, err := meta.ExtractList(got)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, item := range items {
			a, _ := meta.Accessor(item)
			names = append(names, a.GetName())
		}
		if diff := cmp.Diff(wantNames[i], names); diff != "" {
			t.Errorf("list %d items (-want +got):\n%s", i, diff)
		}
		if lw.Mode() != wantModes[i] {
			t.Errorf("list %d: Mode() = %v, want %v", i, lw.Mode(), wantModes[i])
		}
	}
	if diff := cmp.Diff(map[string][]float64{"pods": wantGauge}, gauges.values); diff != "" {
		t.Errorf("gauge values (-want +got):\n%s", diff)
	}
	var messages []string
	for _, l := range logs() {
		messages = append(messages, l.Message)
	}
	if diff := cmp.Diff(wantLogs, messages); diff != "" {
		t.Errorf("log messages (-want +got):\n%s", diff)
	}
}

func TestShardedListerWatcher_WatchDropsOutsideEventsAndStopsCleanly(t *testing.T) {
	in, out := podNamed("in", true), podNamed("out", false)
	bookmark := &v1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "9"}}
	status := &metav1.Status{Status: metav1.StatusFailure, Reason: metav1.StatusReasonExpired}
	events := []watch.Event{
		{Type: watch.Added, Object: out},
		{Type: watch.Added, Object: in},
		{Type: watch.Modified, Object: out},
		{Type: watch.Bookmark, Object: bookmark},
		{Type: watch.Deleted, Object: out},
		{Type: watch.Modified, Object: in},
		{Type: watch.Deleted, Object: in},
		{Type: watch.Error, Object: status},
	}
	want := []watch.Event{events[1], events[3], events[5], events[6], events[7]}

	fake := watch.NewFake()
	var gotOptions metav1.ListOptions
	lw, err := NewShardedListerWatcher(&ListWatch{
		WatchFunc: func(o metav1.ListOptions) (watch.Interface, error) { gotOptions = o; return fake, nil },
	}, firstHalf)
	if err != nil {
		t.Fatal(err)
	}
	callerOptions := metav1.ListOptions{ResourceVersion: "5"}
	setShardSelector(&callerOptions, secondHalf)
	w, err := lw.Watch(callerOptions)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	wantSelector := firstHalf
	if !canSendShardSelector() {
		wantSelector = ""
	}
	if shardSelectorOf(gotOptions) != wantSelector || gotOptions.ResourceVersion != "5" {
		t.Errorf("watch options = %+v, want the shard selector replaced and the rest kept", gotOptions)
	}
	go func() {
		for _, ev := range events {
			fake.Action(ev.Type, ev.Object)
		}
	}()
	var got []watch.Event
	for range want {
		got = append(got, <-w.ResultChan())
	}
	if diff := cmp.Diff(describeEvents(want), describeEvents(got)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if lw.Mode() != ShardModeClient {
		t.Errorf("Mode() = %v after events outside the shard, want client", lw.Mode())
	}

	// Stopped while the wrapped watch still has an event to send: the
	// forwarding goroutine must end (goleak checks), and the channel close.
	fake2 := watch.NewFake()
	lw2, _ := NewShardedListerWatcher(&ListWatch{
		WatchFunc: func(metav1.ListOptions) (watch.Interface, error) { return fake2, nil },
	}, firstHalf)
	w2, err := lw2.Watch(metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		fake2.Action(watch.Added, in)
	}()
	<-sent
	w2.Stop()
	for range w2.ResultChan() {
	}
}

func TestShardedListerWatcher_ForwardsTheStreamingListProbe(t *testing.T) {
	src := framework.NewFakeControllerSource()
	defer src.Shutdown()
	for name, tc := range map[string]struct {
		lw   ListerWatcher
		want bool
	}{
		"says nothing":          {lw: src, want: false},
		"says it cannot stream": {lw: ToListWatcherWithWatchListSemantics(&ListWatch{}, noStreaming{}), want: true},
	} {
		t.Run(name, func(t *testing.T) {
			lw, err := NewShardedListerWatcher(tc.lw, firstHalf)
			if err != nil {
				t.Fatal(err)
			}
			if got := lacksWatchListSemantics(lw); got != tc.want {
				t.Errorf("lacksWatchListSemantics = %v, want %v", got, tc.want)
			}
		})
	}
}

// noStreaming is a client that says it cannot serve streaming lists.
type noStreaming struct{}

func (noStreaming) IsWatchListSemanticsUnSupported() bool { return true }

func TestShardedInformerFactory_EveryInformerHoldsItsShard(t *testing.T) {
	src := framework.NewFakeControllerSource()
	defer src.Shutdown()
	for i := range 20 {
		src.Add(shardPod(fmt.Sprint("p", i)))
	}
	server := &shardServer{src: src}
	f, err := NewShardedInformerFactory(0, firstHalf)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Shutdown()
	inf := f.InformerFor(podsGVR, &v1.Pod{}, func() ListerWatcher { return server })
	f.Start(t.Context().Done())
	if synced := f.WaitForCacheSync(t.Context().Done()); !synced[podsGVR] {
		t.Fatal("informer did not sync")
	}
	if diff := cmp.Diff(shardTruth(t, src), infStoreState(inf.GetStore())); diff != "" {
		t.Errorf("store (-want +got):\n%s", diff)
	}
	assertEveryRequestSharded(t, server.seen(), firstHalf)
}

// describeEvents renders events as type and object name, or the object's
// type when it has no name.
func describeEvents(events []watch.Event) []string {
	out := make([]string, 0, len(events))
	for _, ev := range events {
		name := fmt.Sprintf("%T", ev.Object)
		if a, err := meta.Accessor(ev.Object); err == nil && a.GetName() != "" {
			name = a.GetName()
		}
		out = append(out, string(ev.Type)+" "+name)
	}
	return out
}

// useReflectorMetricsProvider installs p as the reflector metrics provider
// until the test ends, without using up SetReflectorMetricsProvider's one
// call.
func useReflectorMetricsProvider(t *testing.T, p MetricsProvider) {
	globalProviders.mu.Lock()
	prev := globalProviders.reflector
	globalProviders.reflector = p
	globalProviders.mu.Unlock()
	t.Cleanup(func() {
		globalProviders.mu.Lock()
		globalProviders.reflector = prev
		globalProviders.mu.Unlock()
	})
}

func TestShardedListerWatcher_ReflectorsGetAModeGaugeUnderTheirName(t *testing.T) {
	defer setFeatureForTesting(featureWatchListClient, false)()
	gauges := &fakeShardGauges{values: map[string][]float64{}}
	useReflectorMetricsProvider(t, gauges)
	src := framework.NewFakeControllerSource()
	defer src.Shutdown()
	for i := range 10 {
		src.Add(shardPod(fmt.Sprint("p", i)))
	}
	lw, err := NewShardedListerWatcher(&shardServer{src: src, honour: true}, firstHalf)
	if err != nil {
		t.Fatal(err)
	}
	store := NewStore(MetaNamespaceKeyFunc)
	r := NewReflectorWithOptions(lw, &v1.Pod{}, store, ReflectorOptions{Name: "pods-shard-0"})
	// An unsharded reflector gets no gauge.
	NewReflectorWithOptions(src, &v1.Pod{}, NewStore(MetaNamespaceKeyFunc), ReflectorOptions{Name: "pods-all"})

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.RunWithContext(ctx)
	}()
	defer func() { cancel(); <-done }()
	if !WaitForCacheSync(ctx.Done(), func() bool { return r.LastSyncResourceVersion() != "" }) {
		t.Fatal("reflector did not list")
	}
	gauges.mu.Lock()
	defer gauges.mu.Unlock()
	want := []float64{0, float64(modeInThisBuild(ShardModeServer))}
	if diff := cmp.Diff(map[string][]float64{"pods-shard-0": want}, gauges.values); diff != "" {
		t.Errorf("gauge values (-want +got):\n%s", diff)
	}
}

func TestShardedListerWatcher_ProbesOnlyBeforeStreamingListsWhileTheModeIsUnknown(t *testing.T) {
	streaming := metav1.ListOptions{SendInitialEvents: ptrTo(true)}
	cases := map[string]struct {
		list      func() (runtime.Object, error)
		watches   []metav1.ListOptions
		wantLists int
		wantMode  ShardMode
	}{
		"a plain watch does not probe": {
			list:    func() (runtime.Object, error) { return &v1.PodList{}, nil },
			watches: []metav1.ListOptions{{ResourceVersion: "1"}},
		},
		"the server echoes: probed once": {
			list: func() (runtime.Object, error) {
				list := &v1.PodList{}
				echoShardSelector(&list.ListMeta, firstHalf)
				return list, nil
			},
			watches:   []metav1.ListOptions{streaming, streaming},
			wantLists: 1, wantMode: ShardModeServer,
		},
		"the server ignores: probed once": {
			list:      func() (runtime.Object, error) { return &v1.PodList{}, nil },
			watches:   []metav1.ListOptions{streaming, streaming},
			wantLists: 1, wantMode: ShardModeClient,
		},
		"the probe fails: the watch still opens, probed again next time": {
			list:      func() (runtime.Object, error) { return nil, errors.New("forbidden") },
			watches:   []metav1.ListOptions{streaming, streaming},
			wantLists: 2, wantMode: ShardModeUnknown,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var lists []metav1.ListOptions
			lw, err := NewShardedListerWatcher(&ListWatch{
				ListFunc: func(o metav1.ListOptions) (runtime.Object, error) {
					lists = append(lists, o)
					return tc.list()
				},
				WatchFunc: func(metav1.ListOptions) (watch.Interface, error) { return watch.NewFake(), nil },
			}, firstHalf)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range tc.watches {
				w, err := lw.Watch(o)
				if err != nil {
					t.Fatal(err)
				}
				w.Stop()
			}
			wantLists, wantMode := tc.wantLists, tc.wantMode
			if !canSendShardSelector() {
				// Nothing to probe for: the selector cannot be sent, so
				// the first watch says the client filters.
				wantLists, wantMode = 0, ShardModeClient
			}
			if len(lists) != wantLists {
				t.Errorf("got %d lists, want %d", len(lists), wantLists)
			}
			for _, o := range lists {
				if o.Limit != 1 || shardSelectorOf(o) != firstHalf {
					t.Errorf("probe options %+v, want limit 1 and the selector", o)
				}
			}
			if lw.Mode() != wantMode {
				t.Errorf("Mode() = %v, want %v", lw.Mode(), wantMode)
			}
		})
	}
}

// echoShardSelector sets lm.ShardInfo to say selector was applied, as a
// server with the ShardedListAndWatch feature does. With an apimachinery
// older than v0.36 (no such field) it does nothing.
func echoShardSelector(lm *metav1.ListMeta, selector string) {
	f := reflect.ValueOf(lm).Elem().FieldByName("ShardInfo")
	if !f.IsValid() {
		return
	}
	info := reflect.New(f.Type().Elem())
	info.Elem().FieldByName("Selector").SetString(selector)
	f.Set(info)
}

// modeInThisBuild is the mode a test expects where it would expect want
// with apimachinery v0.36 or later: without a way to send the selector, every
// server seems to ignore it.
func modeInThisBuild(want ShardMode) ShardMode {
	if want == ShardModeServer && !canSendShardSelector() {
		return ShardModeClient
	}
	return want
}

// TestShardWire_FieldsAreFoundExactlyWhenApimachineryHasThem pins the
// reflection on the apimachinery this test was built with: from v0.36 the
// fields must be found (a rename would otherwise silently turn sharding
// into client filtering), before it they must not.
func TestShardWire_FieldsAreFoundExactlyWhenApimachineryHasThem(t *testing.T) {
	version := apimachineryVersion(t)
	want := minorOf(t, version) >= 36
	if got := canSendShardSelector(); got != want {
		t.Fatalf("with k8s.io/apimachinery %s canSendShardSelector() = %v, want %v", version, got, want)
	}

	var o metav1.ListOptions
	if got := setShardSelector(&o, firstHalf); got != want {
		t.Errorf("setShardSelector reported %v, want %v", got, want)
	}
	wantSel := ""
	if want {
		wantSel = firstHalf
	}
	if got := shardSelectorOf(o); got != wantSel {
		t.Errorf("shardSelectorOf after setShardSelector = %q, want %q", got, wantSel)
	}

	var lm metav1.ListMeta
	echoShardSelector(&lm, firstHalf)
	sel, ok := shardInfoOf(&metav1.List{ListMeta: lm})
	if ok != want || sel != wantSel {
		t.Errorf("shardInfoOf a list echoing the selector = %q, %v; want %q, %v", sel, ok, wantSel, want)
	}
	if sel, ok := shardInfoOf(&metav1.List{}); ok || sel != "" {
		t.Errorf("shardInfoOf a list echoing nothing = %q, %v; want none", sel, ok)
	}
}

// apimachineryVersion returns the version of k8s.io/apimachinery this
// module's go.mod requires, which is the one built in: the module is a
// root, and the scripts that test it on newer minors edit the go.mod of a
// copy.
func apimachineryVersion(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatalf("reading go.mod: %v", err)
	}
	for line := range strings.Lines(string(data)) {
		if fields := strings.Fields(line); len(fields) >= 2 && fields[0] == "k8s.io/apimachinery" {
			return fields[1]
		}
	}
	t.Fatal("go.mod does not require k8s.io/apimachinery")
	return ""
}

// minorOf returns the minor of a v0.x.y module version.
func minorOf(t *testing.T, version string) int {
	t.Helper()
	rest, ok := strings.CutPrefix(version, "v0.")
	if !ok {
		t.Fatalf("version %q is not v0.x.y", version)
	}
	minor, _, _ := strings.Cut(rest, ".")
	n, err := strconv.Atoi(minor)
	if err != nil {
		t.Fatalf("version %q: minor: %v", version, err)
	}
	return n
}
