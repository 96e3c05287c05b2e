package cache

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/watch"
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
	// onOpen, if set, runs once, when the reflector first reads the stream.
	onOpen   func()
	openOnce sync.Once
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

// rfStreamFailingAfter is an open stream that sends err as an ERROR event
// once d has passed since the reflector began reading it (in the test's
// bubble, d of fake time).
func rfStreamFailingAfter(d time.Duration, err apierrors.APIStatus) *rfStream {
	s := newRFStream(false)
	s.onOpen = func() {
		go func() {
			select {
			case <-time.After(d):
				s.send(rfStatusEvent(err))
			case <-s.stopped:
			}
		}()
	}
	return s
}

func (s *rfStream) ResultChan() <-chan watch.Event {
	if s.onOpen != nil {
		s.openOnce.Do(s.onOpen)
	}
	return s.ch
}
func (s *rfStream) Stop() { s.stopOnce.Do(func() { close(s.stopped) }) }

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

// listRequests returns the options of the list requests made so far.
func (l *rfLW) listRequests() []metav1.ListOptions {
	var lists []metav1.ListOptions
	for _, c := range l.recorded() {
		if c.Verb == "list" {
			lists = append(lists, c.Opts)
		}
	}
	return lists
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
