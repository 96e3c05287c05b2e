package cache

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	testingclock "k8s.io/utils/clock/testing"
)

// ---- test doubles shared by the reflector tests (prefix rf) ----

// rfPod is a pod named name at resource version rv, with a UID derived from
// its name.
func rfPod(name, rv string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv, UID: types.UID("uid-" + name)}}
}

// rfPodList is a pod list at rv holding the given pods.
func rfPodList(rv, cont string, pods ...*v1.Pod) *v1.PodList {
	l := &v1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: rv, Continue: cont}}
	for _, p := range pods {
		l.Items = append(l.Items, *p)
	}
	return l
}

// rfEndBookmark is the bookmark that completes a streaming list at rv.
func rfEndBookmark(rv string) watch.Event {
	return watch.Event{Type: watch.Bookmark, Object: &v1.Pod{ObjectMeta: metav1.ObjectMeta{
		ResourceVersion: rv,
		Annotations:     map[string]string{metav1.InitialEventsAnnotationKey: "true"},
	}}}
}

// rfEvent builds a watch event.
func rfEvent(t watch.EventType, obj runtime.Object) watch.Event {
	return watch.Event{Type: t, Object: obj}
}

// rfStatusEvent is an ERROR event carrying err's status.
func rfStatusEvent(err apierrors.APIStatus) watch.Event {
	s := err.Status()
	return watch.Event{Type: watch.Error, Object: &s}
}

// rfStream is a scripted watch stream: its events are buffered up front;
// closed streams end after them, open ones wait for more (send) or for Stop.
type rfStream struct {
	ch       chan watch.Event
	stopOnce sync.Once
	stopped  chan struct{}
}

// newRFStream returns a stream holding events, closed after them if closed.
func newRFStream(closed bool, events ...watch.Event) *rfStream {
	s := &rfStream{ch: make(chan watch.Event, len(events)+16), stopped: make(chan struct{})}
	for _, e := range events {
		s.ch <- e
	}
	if closed {
		close(s.ch)
	}
	return s
}

func (s *rfStream) ResultChan() <-chan watch.Event { return s.ch }
func (s *rfStream) Stop()                          { s.stopOnce.Do(func() { close(s.stopped) }) }

// isStopped reports whether the reflector stopped the stream.
func (s *rfStream) isStopped() bool {
	select {
	case <-s.stopped:
		return true
	default:
		return false
	}
}

// send pushes one more event, unless the stream was stopped.
func (s *rfStream) send(e watch.Event) {
	select {
	case s.ch <- e:
	case <-s.stopped:
	}
}

// rfCall is one request a reflector made.
type rfCall struct {
	Verb string
	Opts metav1.ListOptions
}

// rfLW is a scripted ListerWatcherWithContext. listFn and watchFn answer the
// requests, which are recorded. streaming says whether it claims to serve
// streaming lists.
type rfLW struct {
	streaming bool
	listFn    func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error)
	watchFn   func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)

	mu    sync.Mutex
	calls []rfCall
}

func (l *rfLW) record(verb string, opts metav1.ListOptions) {
	l.mu.Lock()
	defer l.mu.Unlock()
	opts.TimeoutSeconds = nil // random; checked separately
	l.calls = append(l.calls, rfCall{Verb: verb, Opts: opts})
}

func (l *rfLW) List(opts metav1.ListOptions) (runtime.Object, error) {
	return l.ListWithContext(context.Background(), opts)
}

func (l *rfLW) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return l.WatchWithContext(context.Background(), opts)
}

func (l *rfLW) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	l.record("list", opts)
	if l.listFn == nil {
		return nil, errors.New("rfLW: no list scripted")
	}
	return l.listFn(ctx, opts)
}

func (l *rfLW) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	l.record("watch", opts)
	if l.watchFn == nil {
		return nil, errors.New("rfLW: no watch scripted")
	}
	return l.watchFn(ctx, opts)
}

func (l *rfLW) IsWatchListSemanticsUnSupported() bool { return !l.streaming }

// recorded returns the requests made so far.
func (l *rfLW) recorded() []rfCall {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.calls)
}

// rfLists answers list requests with the given replies in turn, and with an
// error once they run out.
func rfLists(replies ...rfReply) func(context.Context, metav1.ListOptions) (runtime.Object, error) {
	var mu sync.Mutex
	return func(context.Context, metav1.ListOptions) (runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		if len(replies) == 0 {
			return nil, errors.New("rfLists: no more lists scripted")
		}
		r := replies[0]
		replies = replies[1:]
		return r.obj, r.err
	}
}

// rfWatches answers watch requests with the given replies in turn; once
// they run out, with a stream that stays open and empty.
func rfWatches(replies ...rfWatchReply) func(context.Context, metav1.ListOptions) (watch.Interface, error) {
	var mu sync.Mutex
	return func(context.Context, metav1.ListOptions) (watch.Interface, error) {
		mu.Lock()
		defer mu.Unlock()
		if len(replies) == 0 {
			return newRFStream(false), nil
		}
		r := replies[0]
		replies = replies[1:]
		if r.err != nil {
			return nil, r.err
		}
		return r.stream, nil
	}
}

type rfReply struct {
	obj runtime.Object
	err error
}

type rfWatchReply struct {
	stream *rfStream
	err    error
}

// rfStore is a ReflectorStore that records every call and keeps the
// resulting content by MetaNamespaceKeyFunc key.
type rfStore struct {
	mu        sync.Mutex
	items     map[string]interface{}
	ops       []string
	resyncErr error
	// replaceErr fails Replace calls while set.
	replaceErr error
	// failName fails Add, Update and Delete of objects with this name.
	failName string
}

func newRFStore() *rfStore { return &rfStore{items: map[string]interface{}{}} }

func rfDescribe(obj interface{}) string {
	m, err := meta.Accessor(obj)
	if err != nil {
		return fmt.Sprintf("%T", obj)
	}
	return m.GetName() + "@" + m.GetResourceVersion()
}

func (s *rfStore) put(op string, obj interface{}) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	key, err := MetaNamespaceKeyFunc(obj)
	if err != nil {
		return err
	}
	if s.failName != "" && strings.HasPrefix(key, "ns/"+s.failName) {
		return fmt.Errorf("rfStore refuses %s", key)
	}
	s.ops = append(s.ops, op+" "+rfDescribe(obj))
	if op == "delete" {
		delete(s.items, key)
	} else {
		s.items[key] = obj
	}
	return nil
}

func (s *rfStore) Add(obj interface{}) error    { return s.put("add", obj) }
func (s *rfStore) Update(obj interface{}) error { return s.put("update", obj) }
func (s *rfStore) Delete(obj interface{}) error { return s.put("delete", obj) }

func (s *rfStore) Replace(list []interface{}, rv string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.replaceErr != nil {
		return s.replaceErr
	}
	names := make([]string, 0, len(list))
	s.items = map[string]interface{}{}
	for _, obj := range list {
		key, err := MetaNamespaceKeyFunc(obj)
		if err != nil {
			return err
		}
		s.items[key] = obj
		names = append(names, rfDescribe(obj))
	}
	slices.Sort(names)
	s.ops = append(s.ops, fmt.Sprintf("replace@%s %v", rv, names))
	return nil
}

func (s *rfStore) Resync() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ops = append(s.ops, "resync")
	return s.resyncErr
}

// content returns the stored objects as name@rv, sorted.
func (s *rfStore) content() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []string{}
	for _, obj := range s.items {
		out = append(out, rfDescribe(obj))
	}
	slices.Sort(out)
	return out
}

// recorded returns the calls made so far.
func (s *rfStore) recorded() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.ops)
}

// rfBookmarkStore also records bookmarks and resource-version updates.
type rfBookmarkStore struct {
	*rfStore
}

func (s rfBookmarkStore) Bookmark(rv string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ops = append(s.ops, "bookmark@"+rv)
	return nil
}

func (s rfBookmarkStore) UpdateResourceVersion(rv string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ops = append(s.ops, "rv="+rv)
}

// rfRun runs ListAndWatchWithContext on a goroutine and returns a function
// that cancels it and returns its error.
func rfRun(r *Reflector) (stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.ListAndWatchWithContext(ctx) }()
	return func() error {
		cancel()
		return <-done
	}
}

// rfRunForever runs RunWithContext on a goroutine and returns a function that
// stops it and waits for it.
func rfRunForever(r *Reflector) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.RunWithContext(ctx)
	}()
	return func() {
		cancel()
		<-done
	}
}

// rfSetup prepares a reflector test: it sets the WatchListClient gate, and
// replaces utilruntime's error handlers for the test's duration with one that
// logs and counts. The default handlers include a rate limiter that sleeps
// on the real clock's notion of the last error, which stalls synctest
// bubbles. The returned function counts the errors reported so far.
func rfSetup(t *testing.T, streaming bool) (handledErrors func() int) {
	t.Cleanup(setFeatureForTesting(featureWatchListClient, streaming))
	var mu sync.Mutex
	n := 0
	saved := utilruntime.ErrorHandlers
	utilruntime.ErrorHandlers = []utilruntime.ErrorHandler{func(_ context.Context, err error, msg string, kv ...interface{}) {
		mu.Lock()
		defer mu.Unlock()
		n++
		t.Logf("handled error: %s: %v %v", msg, err, kv)
	}}
	t.Cleanup(func() { utilruntime.ErrorHandlers = saved })
	return func() int {
		mu.Lock()
		defer mu.Unlock()
		return n
	}
}

// ---- the state machine ----

func TestReflectorState_TransitionFunctionCoversEveryOutcome(t *testing.T) {
	type pos struct{ State, Resume reflectorState }
	cases := []struct {
		name        string
		from        reflectorMachine
		outcome     stepOutcome
		want        pos
		singleCycle bool
	}{
		{name: "list synced watches", from: reflectorMachine{state: reflectorListing}, outcome: outcomeSynced, want: pos{reflectorWatching, 0}},
		{name: "stream synced watches", from: reflectorMachine{state: reflectorWatchListing}, outcome: outcomeSynced, want: pos{reflectorWatching, 0}},
		{name: "stream falls back to list", from: reflectorMachine{state: reflectorWatchListing}, outcome: outcomeFallBackToList, want: pos{reflectorListing, 0}},
		{name: "stream retries now", from: reflectorMachine{state: reflectorWatchListing}, outcome: outcomeRetryNow, want: pos{reflectorWatchListing, 0}},
		{name: "stream retries later", from: reflectorMachine{state: reflectorWatchListing}, outcome: outcomeRetryLater, want: pos{reflectorBackingOff, reflectorWatchListing}},
		{name: "watch reopens", from: reflectorMachine{state: reflectorWatching}, outcome: outcomeRetryNow, want: pos{reflectorWatching, 0}},
		{name: "watch backs off", from: reflectorMachine{state: reflectorWatching}, outcome: outcomeRetryLater, want: pos{reflectorBackingOff, reflectorWatching}},
		{name: "backoff resumes", from: reflectorMachine{state: reflectorBackingOff, resume: reflectorWatching}, outcome: outcomeWaited, want: pos{reflectorWatching, 0}},
		{name: "cycle end backs off into a new list", from: reflectorMachine{state: reflectorWatching, entry: reflectorListing}, outcome: outcomeCycleDone, want: pos{reflectorBackingOff, reflectorListing}},
		{name: "cycle end backs off into a new stream", from: reflectorMachine{state: reflectorListing, entry: reflectorWatchListing}, outcome: outcomeCycleDone, want: pos{reflectorBackingOff, reflectorWatchListing}},
		{name: "single cycle stops at its end", from: reflectorMachine{state: reflectorWatching, singleCycle: true}, outcome: outcomeCycleDone, want: pos{reflectorStopped, 0}},
		{name: "cancel stops listing", from: reflectorMachine{state: reflectorListing}, outcome: outcomeCanceled, want: pos{reflectorStopped, 0}},
		{name: "cancel stops backoff", from: reflectorMachine{state: reflectorBackingOff, resume: reflectorListing}, outcome: outcomeCanceled, want: pos{reflectorStopped, 0}},
		{name: "stopped stays stopped", from: reflectorMachine{state: reflectorStopped}, outcome: outcomeWaited, want: pos{reflectorStopped, 0}},
		{name: "impossible: watching synced", from: reflectorMachine{state: reflectorWatching}, outcome: outcomeSynced, want: pos{reflectorStopped, 0}},
		{name: "impossible: list falls back", from: reflectorMachine{state: reflectorListing}, outcome: outcomeFallBackToList, want: pos{reflectorStopped, 0}},
		{name: "impossible: backoff synced", from: reflectorMachine{state: reflectorBackingOff}, outcome: outcomeSynced, want: pos{reflectorStopped, 0}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.from.next(tc.outcome)
			if diff := cmp.Diff(tc.want, pos{got.state, got.resume}); diff != "" {
				t.Errorf("next(%v) mismatch (-want +got):\n%s", tc.outcome, diff)
			}
			if got.entry != tc.from.entry || got.singleCycle != tc.from.singleCycle {
				t.Errorf("next changed the machine's configuration: %+v -> %+v", tc.from, got)
			}
		})
	}
}

func TestReflectorState_NamesAreLogged(t *testing.T) {
	want := []string{"listing", "watchListing", "watching", "backingOff", "stopped"}
	var got []string
	for s := reflectorListing; s <= reflectorStopped; s++ {
		got = append(got, s.String())
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("state names (-want +got):\n%s", diff)
	}
}

// ---- construction ----

func TestNewReflector_DescribesTheExpectedType(t *testing.T) {
	withGVK := &unstructured.Unstructured{}
	gvk := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	withGVK.SetGroupVersionKind(gvk)
	cases := map[string]struct {
		expected interface{}
		wantDesc string
		wantGVK  *schema.GroupVersionKind
	}{
		"nil":                        {expected: nil, wantDesc: "<unspecified>"},
		"typed":                      {expected: &v1.Pod{}, wantDesc: "*v1.Pod"},
		"unstructured without kind":  {expected: &unstructured.Unstructured{}, wantDesc: "*unstructured.Unstructured"},
		"unstructured naming a kind": {expected: withGVK, wantDesc: gvk.String(), wantGVK: &gvk},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := NewReflector(&rfLW{}, tc.expected, newRFStore(), 0)
			if r.TypeDescription() != tc.wantDesc {
				t.Errorf("TypeDescription() = %q, want %q", r.TypeDescription(), tc.wantDesc)
			}
			if diff := cmp.Diff(tc.wantGVK, r.expectedGVK); diff != "" {
				t.Errorf("expected GVK (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNewReflector_NamesAfterCallerUnlessNamed(t *testing.T) {
	cases := map[string]struct {
		build func() *Reflector
		want  func(string) bool
	}{
		"NewReflector is named after the calling test file": {
			build: func() *Reflector { return NewReflector(&rfLW{}, &v1.Pod{}, newRFStore(), 0) },
			// Test files live in the package directory, so the first caller
			// outside it is the testing package.
			want: func(name string) bool { return name != "" && !strings.HasPrefix(name, "reflector.go") },
		},
		"NewNamedReflector keeps its name": {
			build: func() *Reflector { return NewNamedReflector("pods", &rfLW{}, &v1.Pod{}, newRFStore(), 0) },
			want:  func(name string) bool { return name == "pods" },
		},
		"options name and description win": {
			build: func() *Reflector {
				return NewReflectorWithOptions(&rfLW{}, &v1.Pod{}, newRFStore(), ReflectorOptions{Name: "n", TypeDescription: "d"})
			},
			want: func(name string) bool { return name == "n" },
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := tc.build().Name(); !tc.want(got) {
				t.Errorf("Name() = %q", got)
			}
		})
	}
}

// rfCapableLW is a ListerWatcher that says nothing about streaming lists.
type rfCapableLW struct{ ListerWatcher }

func TestNewReflector_StreamsOnlyWhenGateOnAndClientCapable(t *testing.T) {
	cases := map[string]struct {
		gate bool
		lw   ListerWatcher
		want bool
	}{
		"gate off":                       {gate: false, lw: &rfLW{streaming: true}, want: false},
		"gate on, capable client":        {gate: true, lw: &rfLW{streaming: true}, want: true},
		"gate on, client says it cannot": {gate: true, lw: &rfLW{streaming: false}, want: false},
		"gate on, client says nothing":   {gate: true, lw: rfCapableLW{}, want: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Cleanup(setFeatureForTesting(featureWatchListClient, tc.gate))
			r := NewReflectorWithOptions(tc.lw, &v1.Pod{}, newRFStore(), ReflectorOptions{})
			if r.useWatchList != tc.want {
				t.Errorf("useWatchList = %v, want %v", r.useWatchList, tc.want)
			}
		})
	}
}

func TestNewReflector_WatchTimeoutIsRandomWithinMinAndTwiceMin(t *testing.T) {
	cases := map[string]struct {
		min     time.Duration
		wantMin int64
	}{
		"default":                 {min: 0, wantMin: 300},
		"below default is raised": {min: time.Second, wantMin: 300},
		"above default is kept":   {min: 30 * time.Minute, wantMin: 1800},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := NewReflectorWithOptions(&rfLW{}, &v1.Pod{}, newRFStore(), ReflectorOptions{MinWatchTimeout: tc.min})
			for range 100 {
				got := r.watchTimeoutSeconds()
				if got < tc.wantMin || got >= 2*tc.wantMin {
					t.Fatalf("watch timeout %ds outside [%d, %d)", got, tc.wantMin, 2*tc.wantMin)
				}
			}
		})
	}
}

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
				var lists []metav1.ListOptions
				for _, c := range lw.recorded() {
					if c.Verb == "list" {
						lists = append(lists, c.Opts)
					}
				}
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
		var lists []metav1.ListOptions
		for _, c := range lw.recorded() {
			if c.Verb == "list" {
				lists = append(lists, c.Opts)
			}
		}
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
		var lists []metav1.ListOptions
		for _, c := range lw.recorded() {
			if c.Verb == "list" {
				lists = append(lists, c.Opts)
			}
		}
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
				for _, c := range lw.recorded() {
					if c.Verb == "list" {
						rvs = append(rvs, c.Opts.ResourceVersion)
					}
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
		"not a list":            {reply: rfReply{obj: rfPod("a", "1")}, wantInErr: "unable to understand list result &v1.Pod{"},
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

// ---- resync ----

func TestReflector_ResyncFollowsShouldResync(t *testing.T) {
	cases := map[string]struct {
		should     func() bool
		wantResync int
		wantEnded  bool
	}{
		"nil ShouldResync always resyncs": {should: nil, wantResync: 3},
		"ShouldResync true resyncs":       {should: func() bool { return true }, wantResync: 3},
		"ShouldResync false never does":   {should: func() bool { return false }, wantResync: 0},
		// A panicking ShouldResync ends the process, as client-go's
		// resync goroutine does; that cannot be observed in-process.
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rfSetup(t, false)
				lw := &rfLW{listFn: rfLists(rfReply{obj: rfPodList("1", "")}), watchFn: rfWatches()}
				store := newRFStore()
				r := NewReflector(lw, &v1.Pod{}, store, time.Minute)
				r.ShouldResync = tc.should
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				done := make(chan error, 1)
				go func() { done <- r.ListAndWatchWithContext(ctx) }()
				time.Sleep(3*time.Minute + time.Second)
				synctest.Wait()
				select {
				case err := <-done:
					if !tc.wantEnded {
						t.Fatalf("ListAndWatch ended early: %v", err)
					}
				default:
					if tc.wantEnded {
						t.Fatal("ListAndWatch still runs")
					}
				}
				cancel()
				got := strings.Count(strings.Join(store.recorded(), ","), "resync")
				if got != tc.wantResync {
					t.Errorf("resynced %d times in 3 periods, want %d", got, tc.wantResync)
				}
			})
		})
	}
}

// rfWaitForWaiters waits until something waits on clk, so that the test can
// step it knowing which timer fires. It polls a condition and returns as
// soon as the reflector blocks: it does not sleep for synchronisation.
func rfWaitForWaiters(clk *testingclock.FakeClock) error {
	return wait.PollUntilContextTimeout(context.Background(), time.Millisecond, wait.ForeverTestTimeout, true,
		func(context.Context) (bool, error) { return clk.HasWaiters(), nil })
}

func TestReflector_BacksOffOnTheInjectedClock(t *testing.T) {
	rfSetup(t, false)
	clk := testingclock.NewFakeClock(time.Unix(1000, 0))
	lists := make(chan struct{}, 10)
	lw := &rfLW{listFn: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
		lists <- struct{}{}
		return rfPodList("1", ""), nil
	}}
	// The first watch ends at once: the cycle ends and Run backs off.
	lw.watchFn = rfWatches(rfWatchReply{stream: newRFStream(true)})
	r := NewReflectorWithOptions(lw, &v1.Pod{}, newRFStore(), ReflectorOptions{
		Clock:   clk,
		Backoff: &wait.Backoff{Duration: 10 * time.Second},
	})
	stop := rfRunForever(r)
	defer stop()
	<-lists
	if err := rfWaitForWaiters(clk); err != nil {
		t.Fatal(err)
	}
	clk.Step(9 * time.Second)
	select {
	case <-lists:
		t.Fatal("relisted before the backoff elapsed on the injected clock")
	default:
	}
	clk.Step(time.Second)
	<-lists // relists once the injected clock reaches the backoff
}

func TestReflector_ResyncsOnTheInjectedClock(t *testing.T) {
	rfSetup(t, false)
	clk := testingclock.NewFakeClock(time.Unix(1000, 0))
	lw := &rfLW{listFn: rfLists(rfReply{obj: rfPodList("1", "")}), watchFn: rfWatches()}
	store := newRFStore()
	r := NewReflectorWithOptions(lw, &v1.Pod{}, store, ReflectorOptions{Clock: clk, ResyncPeriod: time.Minute})
	stop := rfRunForever(r)
	defer stop()
	// The resync timer is the only thing waiting on the clock.
	if err := rfWaitForWaiters(clk); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(store.recorded(), "resync") {
		t.Fatal("resynced before the period elapsed")
	}
	clk.Step(time.Minute)
	err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, wait.ForeverTestTimeout, true,
		func(context.Context) (bool, error) { return slices.Contains(store.recorded(), "resync"), nil })
	if err != nil {
		t.Fatalf("no resync after the period elapsed on the injected clock: %v", err)
	}
}

func TestReflector_FailedResyncEndsTheWatchAndTheCycle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rfSetup(t, false)
		lw := &rfLW{listFn: rfLists(rfReply{obj: rfPodList("1", "")}), watchFn: rfWatches()}
		store := newRFStore()
		store.resyncErr = errors.New("resync refused")
		r := NewReflector(lw, &v1.Pod{}, store, time.Second)
		// The reference reports the failure in logs only: ListAndWatch
		// returns nil and Run relists.
		if err := r.ListAndWatchWithContext(context.Background()); err != nil {
			t.Fatalf("ListAndWatch: %v", err)
		}
		if diff := cmp.Diff([]string{"replace@1 []", "resync"}, store.recorded()); diff != "" {
			t.Errorf("store calls (-want +got):\n%s", diff)
		}
	})
}

// ---- backoff ----

func TestReflector_BackoffGrowsToItsCapAndResetsAfterTwoMinutes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rfSetup(t, false)
		var mu sync.Mutex
		var at []time.Time
		lw := &rfLW{listFn: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			mu.Lock()
			defer mu.Unlock()
			at = append(at, time.Now())
			return nil, errors.New("down")
		}}
		var handled []error
		r := NewReflectorWithOptions(lw, &v1.Pod{}, newRFStore(), ReflectorOptions{Backoff: &wait.Backoff{
			Duration: 10 * time.Second, Factor: 2, Steps: 100, Cap: 40 * time.Second,
		}})
		r.watchErrorHandler = func(_ context.Context, _ *Reflector, err error) { handled = append(handled, err) }
		stop := rfRunForever(r)
		// Lists at 0, 10, 30, 70, 110 and 150s; at 150s the backoff last
		// (re)started more than two minutes ago, so it starts over: 160, 180.
		time.Sleep(200 * time.Second)
		stop()
		mu.Lock()
		defer mu.Unlock()
		var gaps []time.Duration
		for i := 1; i < len(at); i++ {
			gaps = append(gaps, at[i].Sub(at[i-1]))
		}
		want := []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 40 * time.Second, 40 * time.Second, 10 * time.Second, 20 * time.Second}
		if diff := cmp.Diff(want, gaps); diff != "" {
			t.Errorf("gaps between lists (-want +got):\n%s", diff)
		}
		if len(handled) != len(at) {
			t.Errorf("error handler called %d times for %d failed lists", len(handled), len(at))
		}
	})
}

func TestReflector_DefaultBackoffMatchesTheReference(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rfSetup(t, false)
		var mu sync.Mutex
		var at []time.Time
		lw := &rfLW{listFn: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			mu.Lock()
			defer mu.Unlock()
			at = append(at, time.Now())
			return nil, errors.New("down")
		}}
		r := NewReflector(lw, &v1.Pod{}, newRFStore(), 0)
		r.watchErrorHandler = func(context.Context, *Reflector, error) {}
		stop := rfRunForever(r)
		time.Sleep(110 * time.Second)
		stop()
		mu.Lock()
		defer mu.Unlock()
		// Full jitter: the n-th wait lies in [d, 2d) with d = 0.8s*2^n,
		// capped at 30s.
		d := 800 * time.Millisecond
		for i := 1; i < len(at); i++ {
			gap := at[i].Sub(at[i-1])
			if gap < d || gap >= 2*d {
				t.Errorf("wait %d = %v, want in [%v, %v)", i, gap, d, 2*d)
			}
			d = min(2*d, 30*time.Second)
		}
		if len(at) < 6 {
			t.Errorf("only %d lists in 110s", len(at))
		}
	})
}

// ---- stopping ----

func TestReflector_StopInEveryStateEndsEveryGoroutine(t *testing.T) {
	blockUntilCanceled := func(ctx context.Context, _ metav1.ListOptions) (runtime.Object, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	cases := map[string]struct {
		streaming bool
		resync    time.Duration
		lw        func() *rfLW
	}{
		"listing": {
			lw: func() *rfLW { return &rfLW{listFn: blockUntilCanceled} },
		},
		"watchListing": {
			streaming: true,
			lw: func() *rfLW {
				return &rfLW{streaming: true, watchFn: rfWatches(rfWatchReply{stream: newRFStream(false)})}
			},
		},
		"watching with a resync loop": {
			resync: time.Hour,
			lw: func() *rfLW {
				return &rfLW{listFn: rfLists(rfReply{obj: rfPodList("1", "")}), watchFn: rfWatches()}
			},
		},
		"backingOff": {
			lw: func() *rfLW {
				return &rfLW{listFn: func(context.Context, metav1.ListOptions) (runtime.Object, error) { return nil, errors.New("down") }}
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			// synctest fails the test if any goroutine of the bubble outlives
			// it.
			synctest.Test(t, func(t *testing.T) {
				rfSetup(t, tc.streaming)
				r := NewReflector(tc.lw(), &v1.Pod{}, newRFStore(), tc.resync)
				r.watchErrorHandler = func(context.Context, *Reflector, error) {}
				stop := rfRunForever(r)
				synctest.Wait()
				stop()
			})
		})
	}
}

func TestReflector_StopDoesNotWaitForAListThatIgnoresItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rfSetup(t, false)
		release := make(chan struct{})
		lw := &rfLW{listFn: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			<-release
			return rfPodList("1", ""), nil
		}}
		store := newRFStore()
		r := NewReflector(lw, &v1.Pod{}, store, 0)
		stop := rfRunForever(r)
		synctest.Wait()
		stop() // returns although the list call is still blocked
		close(release)
		synctest.Wait()
		if ops := store.recorded(); len(ops) != 0 {
			t.Errorf("a list finishing after stop reached the store: %v", ops)
		}
	})
}

func TestReflector_RunRelistsAfterAWatchEndsWithAnError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rfSetup(t, false)
		lw := &rfLW{
			listFn: rfLists(
				rfReply{obj: rfPodList("10", "", rfPod("a", "1"))},
				rfReply{obj: rfPodList("30", "", rfPod("b", "25"))},
			),
			watchFn: rfWatches(
				rfWatchReply{stream: newRFStream(false, rfEvent(watch.Added, rfPod("c", "20")), rfStatusEvent(apierrors.NewResourceExpired("gone")))},
			),
		}
		store := newRFStore()
		var handled []error
		r := NewReflector(lw, &v1.Pod{}, store, 0)
		r.watchErrorHandler = func(_ context.Context, _ *Reflector, err error) { handled = append(handled, err) }
		stop := rfRunForever(r)
		time.Sleep(time.Minute) // longer than the first backoffs
		synctest.Wait()
		stop()
		var rvs []string
		for _, c := range lw.recorded() {
			rvs = append(rvs, c.Verb+"@"+c.Opts.ResourceVersion)
		}
		// The expired watch relists from the last version seen (the list
		// serves data at least that fresh), then watches from the new list.
		want := []string{"list@0", "watch@10", "list@20", "watch@30"}
		if diff := cmp.Diff(want, rvs); diff != "" {
			t.Errorf("requests (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"b@25"}, store.content()); diff != "" {
			t.Errorf("store content (-want +got):\n%s", diff)
		}
		if len(handled) != 0 {
			t.Errorf("an expired watch is not an error for the handler, got %v", handled)
		}
	})
}
