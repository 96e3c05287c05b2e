package cache

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/runtime/serializer/versioning"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
)

// This file drives a Reflector against an HTTP server that speaks the
// Kubernetes list and watch wire format in its protobuf flavour
// (application/vnd.kubernetes.protobuf): enveloped objects, continue tokens,
// metav1.Status errors, and watch streams of length-delimited WatchEvent
// frames. Both sides use apimachinery's serializers; the client is built by
// hand on net/http. (The JSON serializer would need sigs.k8s.io/yaml, which
// the module does not require.)

// rfWire holds the codecs both sides use.
var rfWire = func() struct {
	// codec encodes and decodes enveloped objects, setting their kind.
	codec runtime.Codec
	// raw encodes and decodes watch-event frames, which have no envelope.
	raw runtime.Serializer
	// params turns ListOptions into query parameters and back.
	params runtime.ParameterCodec
} {
	s := runtime.NewScheme()
	if err := v1.AddToScheme(s); err != nil {
		panic(err)
	}
	pb := protobuf.NewSerializer(s, s)
	return struct {
		codec  runtime.Codec
		raw    runtime.Serializer
		params runtime.ParameterCodec
	}{
		codec:  versioning.NewDefaultingCodecForScheme(s, pb, pb, v1.SchemeGroupVersion, v1.SchemeGroupVersion),
		raw:    protobuf.NewRawSerializer(s, s),
		params: runtime.NewParameterCodec(s),
	}
}()

const (
	rfProtobuf       = "application/vnd.kubernetes.protobuf"
	rfProtobufStream = "application/vnd.kubernetes.protobuf;stream=watch"
)

// ---- the server ----

// rfHistoryEvent is one change (or bookmark) the fake server remembers for
// watches. seq orders all entries; rv never decreases along it.
type rfHistoryEvent struct {
	seq int
	rv  int
	typ watch.EventType
	obj *v1.Pod
}

// rfAPIServer serves pods of namespace "ns" the way the API server does:
// paginated lists with continue tokens that expire on compaction, watches
// that replay history after a resource version and fail with 410 for
// compacted versions, bookmarks, and optionally streaming lists.
type rfAPIServer struct {
	t         *testing.T
	streaming bool

	// mu guards everything below; watchesDone waits on it.
	mu          sync.Mutex
	watchesDone *sync.Cond
	seq         int
	rv          int
	pods        map[string]*v1.Pod
	history     []rfHistoryEvent
	compacted   int
	// changed is closed and replaced at each change, waking watches.
	changed chan struct{}
	// cut is closed and replaced to end every open watch.
	cut chan struct{}
	// paused, while not nil, holds new watches until it is closed; see
	// disrupt.
	paused chan struct{}
	// watches counts the open watches.
	watches int
	// logged is signalled at each request.
	logged chan struct{}
	// expireNextContinue makes the next continued list fail with 410.
	expireNextContinue bool
	requests           []string
}

func newRFAPIServer(t *testing.T, n int) *rfAPIServer {
	s := &rfAPIServer{t: t, pods: map[string]*v1.Pod{}, changed: make(chan struct{}), cut: make(chan struct{}), logged: make(chan struct{}, 1)}
	s.watchesDone = sync.NewCond(&s.mu)
	for i := range n {
		s.putLocked(watch.Added, rfPod(fmt.Sprintf("p%02d", i), ""))
	}
	return s
}

// putLocked applies one change; caller holds s.mu.
func (s *rfAPIServer) putLocked(t watch.EventType, p *v1.Pod) {
	s.rv++
	p = p.DeepCopy()
	p.ResourceVersion = strconv.Itoa(s.rv)
	if t == watch.Deleted {
		delete(s.pods, p.Name)
	} else {
		s.pods[p.Name] = p
	}
	s.seq++
	s.history = append(s.history, rfHistoryEvent{seq: s.seq, rv: s.rv, typ: t, obj: p})
	close(s.changed)
	s.changed = make(chan struct{})
}

// change applies changes and wakes the watches.
func (s *rfAPIServer) change(t watch.EventType, pods ...*v1.Pod) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range pods {
		s.putLocked(t, p)
	}
}

// bookmark sends a bookmark at the current version to watches that allow
// them.
func (s *rfAPIServer) bookmark() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	s.history = append(s.history, rfHistoryEvent{seq: s.seq, rv: s.rv, typ: watch.Bookmark,
		obj: &v1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: strconv.Itoa(s.rv)}}})
	close(s.changed)
	s.changed = make(chan struct{})
}

// disrupt ends every open watch, holds new ones, runs fn while no watch is
// open, then lets watches through again.
func (s *rfAPIServer) disrupt(fn func(s *rfAPIServer)) {
	s.mu.Lock()
	s.paused = make(chan struct{})
	close(s.cut)
	s.cut = make(chan struct{})
	for s.watches > 0 {
		s.watchesDone.Wait()
	}
	fn(s)
	close(s.paused)
	s.paused = nil
	s.mu.Unlock()
}

// compactLocked forgets history up to the current version; caller holds
// s.mu.
func (s *rfAPIServer) compactLocked() {
	s.compacted = s.rv
	s.history = nil
}

func (s *rfAPIServer) log(format string, args ...interface{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, fmt.Sprintf(format, args...))
	select {
	case s.logged <- struct{}{}:
	default:
	}
}

// takeRequests returns and forgets the requests logged so far.
func (s *rfAPIServer) takeRequests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.requests
	s.requests = nil
	return out
}

func (s *rfAPIServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/api/v1/namespaces/ns/pods" {
		s.writeStatus(w, apierrors.NewNotFound(schema.GroupResource{Resource: r.URL.Path}, ""))
		return
	}
	var opts metav1.ListOptions
	if err := rfWire.params.DecodeParameters(r.URL.Query(), v1.SchemeGroupVersion, &opts); err != nil {
		s.writeStatus(w, apierrors.NewBadRequest(err.Error()))
		return
	}
	if opts.Watch {
		s.serveWatch(w, r, opts)
		return
	}
	s.serveList(w, opts)
}

func (s *rfAPIServer) writeStatus(w http.ResponseWriter, err apierrors.APIStatus) {
	status := err.Status()
	body, encErr := runtime.Encode(rfWire.codec, &status)
	if encErr != nil {
		s.t.Errorf("encoding status: %v", encErr)
	}
	w.Header().Set("Content-Type", rfProtobuf)
	w.WriteHeader(int(status.Code))
	_, _ = w.Write(body)
}

// serveList answers a list, one page of opts.Limit at a time. A continue
// token is "rv/offset"; it expires once its version is compacted.
func (s *rfAPIServer) serveList(w http.ResponseWriter, opts metav1.ListOptions) {
	s.log("list rv=%s limit=%d continue=%s", opts.ResourceVersion, opts.Limit, opts.Continue)
	s.mu.Lock()
	listRV, offset := s.rv, 0
	if opts.Continue != "" {
		fmt.Sscanf(opts.Continue, "%d/%d", &listRV, &offset)
		if listRV < s.compacted || s.expireNextContinue {
			s.expireNextContinue = false
			s.mu.Unlock()
			s.writeStatus(w, apierrors.NewResourceExpired("The provided continue parameter is too old"))
			return
		}
	}
	names := make([]string, 0, len(s.pods))
	for name := range s.pods {
		names = append(names, name)
	}
	sort.Strings(names)
	end := len(names)
	if opts.Limit > 0 && offset+int(opts.Limit) < end {
		end = offset + int(opts.Limit)
	}
	list := &v1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: strconv.Itoa(listRV)}}
	for _, name := range names[offset:end] {
		list.Items = append(list.Items, *s.pods[name])
	}
	if end < len(names) {
		list.Continue = fmt.Sprintf("%d/%d", listRV, end)
	}
	s.mu.Unlock()
	body, err := runtime.Encode(rfWire.codec, list)
	if err != nil {
		s.t.Errorf("encoding list: %v", err)
	}
	w.Header().Set("Content-Type", rfProtobuf)
	_, _ = w.Write(body)
}

// serveWatch streams events after opts.ResourceVersion until the client
// goes away or disrupt cuts the stream.
func (s *rfAPIServer) serveWatch(w http.ResponseWriter, r *http.Request, opts metav1.ListOptions) {
	streamingList := opts.SendInitialEvents != nil && *opts.SendInitialEvents
	s.log("watch rv=%s bookmarks=%v initialEvents=%v", opts.ResourceVersion, opts.AllowWatchBookmarks, streamingList)
	if streamingList && !s.streaming {
		s.writeStatus(w, apierrors.NewInvalid(schema.GroupKind{Kind: "ListOptions"}, "", nil))
		return
	}
	s.mu.Lock()
	for s.paused != nil {
		p := s.paused
		s.mu.Unlock()
		select {
		case <-p:
		case <-r.Context().Done():
			return
		}
		s.mu.Lock()
	}
	s.watches++
	cut := s.cut
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.watches--
		s.watchesDone.Broadcast()
	}()

	w.Header().Set("Content-Type", rfProtobufStream)
	w.WriteHeader(http.StatusOK)
	flusher := w.(http.Flusher)
	flusher.Flush()
	frames := streaming.NewEncoder(protobuf.LengthDelimitedFramer.NewFrameWriter(w), rfWire.raw)
	send := func(t watch.EventType, obj runtime.Object) bool {
		raw, err := runtime.Encode(rfWire.codec, obj)
		if err != nil {
			s.t.Errorf("encoding %s event: %v", t, err)
			return false
		}
		if err := frames.Encode(&metav1.WatchEvent{Type: string(t), Object: runtime.RawExtension{Raw: raw}}); err != nil {
			return false
		}
		flusher.Flush()
		return true
	}

	from, _ := strconv.Atoi(opts.ResourceVersion)
	s.mu.Lock()
	if opts.ResourceVersion != "" && opts.ResourceVersion != "0" && from < s.compacted {
		s.mu.Unlock()
		status := apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", from, s.compacted)).Status()
		send(watch.Error, &status)
		return
	}
	// cursor is the seq of the last history entry this watch is past.
	cursor := 0
	for _, e := range s.history {
		if e.rv <= from {
			cursor = e.seq
		}
	}
	if streamingList || opts.ResourceVersion == "" || opts.ResourceVersion == "0" {
		initial := s.snapshotLocked()
		at := s.rv
		cursor = s.seq
		s.mu.Unlock()
		for _, p := range initial {
			if !send(watch.Added, p) {
				return
			}
		}
		if streamingList {
			end := &v1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: strconv.Itoa(at),
				Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}
			if !send(watch.Bookmark, end) {
				return
			}
		}
		s.mu.Lock()
	}
	for {
		var pending []rfHistoryEvent
		for _, e := range s.history {
			if e.seq > cursor {
				pending = append(pending, e)
			}
		}
		changed := s.changed
		s.mu.Unlock()
		for _, e := range pending {
			cursor = e.seq
			if e.typ == watch.Bookmark && !opts.AllowWatchBookmarks {
				continue
			}
			if !send(e.typ, e.obj) {
				return
			}
		}
		select {
		case <-r.Context().Done():
			return
		case <-cut:
			return
		case <-changed:
		}
		s.mu.Lock()
	}
}

// snapshotLocked returns the current pods by name; caller holds s.mu.
func (s *rfAPIServer) snapshotLocked() []*v1.Pod {
	out := make([]*v1.Pod, 0, len(s.pods))
	for _, p := range s.pods {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b *v1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// ---- the client ----

// rfHTTPLW lists and watches pods over HTTP, decoding with apimachinery.
type rfHTTPLW struct {
	url       string
	client    *http.Client
	streaming bool
}

func (l *rfHTTPLW) IsWatchListSemanticsUnSupported() bool { return !l.streaming }

func (l *rfHTTPLW) List(opts metav1.ListOptions) (runtime.Object, error) {
	return l.ListWithContext(context.Background(), opts)
}

func (l *rfHTTPLW) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return l.WatchWithContext(context.Background(), opts)
}

func (l *rfHTTPLW) get(ctx context.Context, opts metav1.ListOptions) (*http.Response, error) {
	query, err := rfWire.params.EncodeParameters(&opts, v1.SchemeGroupVersion)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, l.url+"?"+query.Encode(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", rfProtobuf)
	resp, err := l.client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return nil, err
		}
		obj, err := runtime.Decode(rfWire.codec, body)
		if status, ok := obj.(*metav1.Status); ok && err == nil {
			return nil, apierrors.FromObject(status)
		}
		return nil, fmt.Errorf("HTTP %d: %s", resp.StatusCode, body)
	}
	return resp, nil
}

func (l *rfHTTPLW) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	resp, err := l.get(ctx, opts)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	return runtime.Decode(rfWire.codec, body)
}

func (l *rfHTTPLW) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	resp, err := l.get(ctx, opts)
	if err != nil {
		return nil, err
	}
	if ct := resp.Header.Get("Content-Type"); ct != rfProtobufStream {
		resp.Body.Close()
		return nil, fmt.Errorf("watch answered with content type %q", ct)
	}
	frames := protobuf.LengthDelimitedFramer.NewFrameReader(resp.Body)
	d := &rfWatchDecoder{events: streaming.NewDecoder(frames, rfWire.raw), body: resp.Body}
	return watch.NewStreamWatcher(d, rfStatusReporter{}), nil
}

// rfWatchDecoder turns WatchEvent frames into watch events.
type rfWatchDecoder struct {
	events streaming.Decoder
	body   io.Closer
}

func (d *rfWatchDecoder) Decode() (watch.EventType, runtime.Object, error) {
	var ev metav1.WatchEvent
	got, _, err := d.events.Decode(nil, &ev)
	if err != nil {
		return "", nil, err
	}
	if got != &ev {
		return "", nil, fmt.Errorf("decoded %T, want a WatchEvent", got)
	}
	obj, err := runtime.Decode(rfWire.codec, ev.Object.Raw)
	if err != nil {
		return "", nil, err
	}
	return watch.EventType(ev.Type), obj, nil
}

func (d *rfWatchDecoder) Close() { d.body.Close() }

// rfStatusReporter turns a decoding error into a Status for an ERROR event.
type rfStatusReporter struct{}

func (rfStatusReporter) AsObject(err error) runtime.Object {
	s := apierrors.NewInternalError(err).Status()
	return &s
}

// ---- the test ----

// rfNotifyStore is an rfBookmarkStore that signals every call.
type rfNotifyStore struct {
	rfBookmarkStore
	notify chan struct{}
}

func newRFNotifyStore() *rfNotifyStore {
	return &rfNotifyStore{rfBookmarkStore: rfBookmarkStore{newRFStore()}, notify: make(chan struct{}, 1)}
}

func (s *rfNotifyStore) signal() {
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

func (s *rfNotifyStore) Add(obj interface{}) error    { defer s.signal(); return s.rfStore.Add(obj) }
func (s *rfNotifyStore) Update(obj interface{}) error { defer s.signal(); return s.rfStore.Update(obj) }
func (s *rfNotifyStore) Delete(obj interface{}) error { defer s.signal(); return s.rfStore.Delete(obj) }
func (s *rfNotifyStore) Replace(l []interface{}, rv string) error {
	defer s.signal()
	return s.rfStore.Replace(l, rv)
}
func (s *rfNotifyStore) Bookmark(rv string) error {
	defer s.signal()
	return s.rfBookmarkStore.Bookmark(rv)
}
func (s *rfNotifyStore) UpdateResourceVersion(rv string) {
	defer s.signal()
	s.rfBookmarkStore.UpdateResourceVersion(rv)
}

// rfAwait waits until cond holds, re-checking it after each store call and
// each request the server sees; it fails the test after
// wait.ForeverTestTimeout.
func rfAwait(t *testing.T, what string, store *rfNotifyStore, srv *rfAPIServer, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(wait.ForeverTestTimeout)
	defer deadline.Stop()
	for !cond() {
		select {
		case <-store.notify:
		case <-srv.logged:
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s; store calls: %v; requests: %v", what, store.recorded(), srv.takeRequestsPeek())
		}
	}
}

// rfHTTPFixture starts the server and a client whose connections are closed
// when the test ends.
func rfHTTPFixture(t *testing.T, srv *rfAPIServer, streaming bool) *rfHTTPLW {
	ts := httptest.NewServer(srv)
	transport := &http.Transport{}
	t.Cleanup(func() {
		transport.CloseIdleConnections()
		ts.Close()
	})
	return &rfHTTPLW{url: ts.URL + "/api/v1/namespaces/ns/pods", client: &http.Client{Transport: transport}, streaming: streaming}
}

func TestReflectorHTTP_ChunkedListWatchAndRelistAfter410(t *testing.T) {
	rfSetup(t, false)
	srv := newRFAPIServer(t, 25) // resource versions 1..25
	lw := rfHTTPFixture(t, srv, false)
	store := newRFNotifyStore()
	r := NewReflectorWithOptions(lw, &v1.Pod{}, store, ReflectorOptions{Name: "http-pods", Backoff: &wait.Backoff{Duration: time.Millisecond}})
	r.WatchListPageSize = 10
	var handlerErrs []error
	r.watchErrorHandler = func(_ context.Context, _ *Reflector, err error) { handlerErrs = append(handlerErrs, err) }
	stop := rfRunForever(r)
	defer stop()

	// 1. A chunked list in three pages, then a watch from the list's version.
	rfAwait(t, "the initial list", store, srv, func() bool { return len(store.content()) == 25 })
	rfAwait(t, "the watch", store, srv, func() bool {
		return slices.Contains(srv.takeRequestsPeek(), "watch rv=25 bookmarks=true initialEvents=false")
	})
	want := []string{
		"list rv=0 limit=10 continue=",
		"list rv= limit=10 continue=25/10",
		"list rv= limit=10 continue=25/20",
		"watch rv=25 bookmarks=true initialEvents=false",
	}
	if diff := cmp.Diff(want, srv.takeRequests()); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}

	// 2. Watch events and a bookmark.
	srv.change(watch.Added, rfPod("new", ""))    // rv 26
	srv.change(watch.Modified, rfPod("p03", "")) // rv 27
	srv.change(watch.Deleted, rfPod("p04", ""))  // rv 28
	srv.bookmark()                               // rv 28
	srv.change(watch.Modified, rfPod("p05", "")) // rv 29
	rfAwait(t, "the watch events", store, srv, func() bool { return slices.Contains(store.recorded(), "rv=29") })
	wantOps := []string{"add new@26", "rv=26", "update p03@27", "rv=27", "delete p04@28", "rv=28", "bookmark@28", "rv=28", "update p05@29", "rv=29"}
	if diff := cmp.Diff(wantOps, store.recorded()[1:]); diff != "" {
		t.Errorf("store calls after the list (-want +got):\n%s", diff)
	}

	// 3. The server compacts past the reflector's version while its watch is
	// down: the rewatch fails with 410, and the reflector relists from the
	// version it had (paging again), and a continue token expiring on the
	// way makes it list the rest in one piece.
	srv.disrupt(func(s *rfAPIServer) {
		s.putLocked(watch.Deleted, rfPod("p06", "")) // rv 30
		s.putLocked(watch.Added, rfPod("late", ""))  // rv 31
		s.compactLocked()
		s.expireNextContinue = true
	})
	rfAwait(t, "the relist", store, srv, func() bool {
		return slices.ContainsFunc(store.recorded(), func(op string) bool { return strings.HasPrefix(op, "replace@31 ") })
	})
	rfAwait(t, "the watch after the relist", store, srv, func() bool {
		return slices.Contains(srv.takeRequestsPeek(), "watch rv=31 bookmarks=true initialEvents=false")
	})
	want = []string{
		"watch rv=29 bookmarks=true initialEvents=false",
		"list rv=29 limit=10 continue=",
		"list rv= limit=10 continue=31/10",
		"list rv=29 limit=0 continue=",
		"watch rv=31 bookmarks=true initialEvents=false",
	}
	if diff := cmp.Diff(want, srv.takeRequests()); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	content := store.content()
	if len(content) != 25 || !slices.Contains(content, "late@31") || slices.Contains(content, "p06@6") {
		t.Errorf("store after the relist: %v", content)
	}
	if r.LastSyncResourceVersion() != "31" {
		t.Errorf("LastSyncResourceVersion() = %q, want 31", r.LastSyncResourceVersion())
	}
	stop()
	if len(handlerErrs) != 0 {
		t.Errorf("a 410 is routine, yet the error handler was told: %v", handlerErrs)
	}
}

// takeRequestsPeek returns the requests logged so far without forgetting
// them.
func (s *rfAPIServer) takeRequestsPeek() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

func TestReflectorHTTP_StreamingList(t *testing.T) {
	cases := map[string]struct {
		serverStreams bool
		want          []string
	}{
		"server streams the initial state": {
			serverStreams: true,
			want: []string{
				"watch rv= bookmarks=true initialEvents=true",
			},
		},
		"server rejects streaming: paginated list instead": {
			serverStreams: false,
			want: []string{
				"watch rv= bookmarks=true initialEvents=true",
				"list rv=0 limit=500 continue=",
				"watch rv=5 bookmarks=true initialEvents=false",
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rfSetup(t, true)
			srv := newRFAPIServer(t, 5)
			srv.streaming = tc.serverStreams
			lw := rfHTTPFixture(t, srv, true)
			store := newRFNotifyStore()
			r := NewReflectorWithOptions(lw, &v1.Pod{}, store, ReflectorOptions{Name: "http-stream"})
			stop := rfRunForever(r)
			defer stop()
			rfAwait(t, "the initial state", store, srv, func() bool { return len(store.content()) == 5 })
			srv.change(watch.Added, rfPod("new", "")) // rv 6
			rfAwait(t, "a live event", store, srv, func() bool { return slices.Contains(store.recorded(), "rv=6") })
			stop()
			if diff := cmp.Diff(tc.want, srv.takeRequests()); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
			ops := store.recorded()
			if !strings.HasPrefix(ops[0], "replace@5 [p00@1 p01@2 p02@3 p03@4 p04@5]") {
				t.Errorf("first store call = %q, want the initial state at 5", ops[0])
			}
		})
	}
}
