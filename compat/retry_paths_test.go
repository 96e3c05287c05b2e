package compat_test

import (
	// Under -race on Go 1.26 the tests run on one processor: its race
	// runtime crashes on synctest bubbles otherwise (golang/go#78156).
	_ "github.com/kcache/cache/internal/racesafe"

	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	clientgocache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	cache "github.com/kcache/cache"
)

// This file plays one scripted server to client-go v0.37.2's Reflector and
// to kcache's, each in a synctest bubble (fake time, so every delay is
// exact), and requires of kcache the requests client-go makes, at the same
// moments, and client-go's log lines. Each row is one retry decision: what
// follows a watch that ends, a streaming list that fails, a list that fails,
// and how the backoff grows and restarts. The want column pins what both
// libraries do, so a change in either shows.

// retryBackoff replaces the jittered default in both libraries so that
// delays are exact: 1s, 2s, 4s, ... up to 30s.
var retryBackoff = wait.Backoff{Duration: time.Second, Factor: 2, Cap: 30 * time.Second, Steps: 10}

// scriptedStep is one thing a scripted stream does, at a time counted from
// when it was opened: send an event, or close.
type scriptedStep struct {
	after time.Duration
	event watch.Event
	close bool
}

// scriptedWatch answers one watch request: an error, or a stream that plays
// its steps (and stays open after them unless one closes it).
type scriptedWatch struct {
	err   error
	steps []scriptedStep
}

// scriptedList answers one list request: an error, or the listed pods at a
// resource version.
type scriptedList struct {
	err  error
	rv   string
	pods []*v1.Pod
}

// retryScript is one row: what the server answers, how long the reflector
// runs, and the requests it must make.
type retryScript struct {
	// streaming says the ListerWatcher serves streaming lists (both
	// libraries then start each cycle with one, WatchListClient being on
	// by default).
	streaming   bool
	maxInternal time.Duration
	lists       []scriptedList
	watches     []scriptedWatch
	runFor      time.Duration
	want        []string
}

func TestReflectorRetryPaths_SameAsClientGo(t *testing.T) {
	internal := apierrors.NewInternalError(fmt.Errorf("etcdserver: leader changed"))
	expired := apierrors.NewResourceExpired("too old resource version: 10 (20)")
	throttled := apierrors.NewTooManyRequests("slow down", 1)
	refused := fmt.Errorf("dial tcp 127.0.0.1:6443: connect: %w", syscall.ECONNREFUSED)
	listAt := func(rv string) scriptedList { return scriptedList{rv: rv, pods: []*v1.Pod{scriptedPod("a", rv)}} }
	failAfter := func(d time.Duration, err apierrors.APIStatus) scriptedWatch {
		s := err.Status()
		return scriptedWatch{steps: []scriptedStep{{after: d, event: watch.Event{Type: watch.Error, Object: &s}}}}
	}
	endBookmark := func(rv string) watch.Event {
		b := scriptedPod("", rv)
		b.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: "true"}
		return watch.Event{Type: watch.Bookmark, Object: b}
	}
	completeStream := scriptedWatch{steps: []scriptedStep{
		{event: watch.Event{Type: watch.Added, Object: scriptedPod("a", "8")}},
		{event: endBookmark("9")},
	}}

	cases := map[string]retryScript{
		"watch ends with 410: relist after the backoff": {
			lists:   []scriptedList{listAt("10"), listAt("11")},
			watches: []scriptedWatch{failAfter(5*time.Second, expired)},
			runFor:  time.Minute,
			want:    []string{"0s list rv=0 limit=500", "0s watch rv=10", "6s list rv=10 limit=0", "6s watch rv=11"},
		},
		"watch ends with an internal error within MaxInternalErrorRetryDuration: rewatch at once": {
			maxInternal: 30 * time.Second,
			lists:       []scriptedList{listAt("10")},
			watches:     []scriptedWatch{failAfter(5*time.Second, internal), failAfter(5*time.Second, internal)},
			runFor:      time.Minute,
			want:        []string{"0s list rv=0 limit=500", "0s watch rv=10", "5s watch rv=10", "10s watch rv=10"},
		},
		"watch ends with an internal error past MaxInternalErrorRetryDuration: relist after the backoff": {
			maxInternal: 7 * time.Second,
			lists:       []scriptedList{listAt("10"), listAt("11")},
			watches:     []scriptedWatch{failAfter(5*time.Second, internal), failAfter(5*time.Second, internal), failAfter(5*time.Second, internal)},
			runFor:      time.Minute,
			want:        []string{"0s list rv=0 limit=500", "0s watch rv=10", "5s watch rv=10", "10s watch rv=10", "16s list rv=10 limit=0", "16s watch rv=11"},
		},
		"watch ends with an internal error and no retry budget: relist after the backoff": {
			lists:   []scriptedList{listAt("10"), listAt("11")},
			watches: []scriptedWatch{failAfter(5*time.Second, internal)},
			runFor:  time.Minute,
			want:    []string{"0s list rv=0 limit=500", "0s watch rv=10", "6s list rv=10 limit=0", "6s watch rv=11"},
		},
		"watch ends with 429: rewatch after the backoff": {
			lists:   []scriptedList{listAt("10")},
			watches: []scriptedWatch{failAfter(5*time.Second, throttled), failAfter(5*time.Second, throttled)},
			runFor:  time.Minute,
			want:    []string{"0s list rv=0 limit=500", "0s watch rv=10", "6s watch rv=10", "13s watch rv=10"},
		},
		"watch refused: rewatch after the backoff": {
			lists:   []scriptedList{listAt("10")},
			watches: []scriptedWatch{{err: refused}, {err: refused}, {err: refused}},
			runFor:  time.Minute,
			want:    []string{"0s list rv=0 limit=500", "0s watch rv=10", "1s watch rv=10", "3s watch rv=10", "7s watch rv=10"},
		},
		"watch closed by the server: rewatch at once from the last event": {
			lists: []scriptedList{listAt("10")},
			watches: []scriptedWatch{{steps: []scriptedStep{
				{after: 5 * time.Second, event: watch.Event{Type: watch.Modified, Object: scriptedPod("a", "12")}},
				{after: 6 * time.Second, close: true},
			}}},
			runFor: time.Minute,
			want:   []string{"0s list rv=0 limit=500", "0s watch rv=10", "6s watch rv=12"},
		},
		"very short watch: relist after the backoff": {
			lists:   []scriptedList{listAt("10"), listAt("11")},
			watches: []scriptedWatch{{steps: []scriptedStep{{close: true}}}},
			runFor:  time.Minute,
			want:    []string{"0s list rv=0 limit=500", "0s watch rv=10", "1s list rv=10 limit=0", "1s watch rv=11"},
		},
		"watch fails to start otherwise: next cycle after the backoff": {
			lists:   []scriptedList{listAt("10"), listAt("11")},
			watches: []scriptedWatch{{err: apierrors.NewForbidden(v1.Resource("pods"), "", fmt.Errorf("no"))}},
			runFor:  time.Minute,
			want:    []string{"0s list rv=0 limit=500", "0s watch rv=10", "1s list rv=10 limit=0", "1s watch rv=11"},
		},
		"list fails: each cycle after a growing backoff": {
			lists:  []scriptedList{{err: internal}, {err: internal}, {err: internal}, listAt("10")},
			runFor: time.Minute,
			want:   []string{"0s list rv=0 limit=500", "1s list rv=0 limit=500", "3s list rv=0 limit=500", "7s list rv=0 limit=500", "7s watch rv=10"},
		},
		"list from an expired version: again from the newest state at once": {
			lists:   []scriptedList{listAt("10"), {err: expired}, listAt("30")},
			watches: []scriptedWatch{failAfter(5*time.Second, expired)},
			runFor:  time.Minute,
			want:    []string{"0s list rv=0 limit=500", "0s watch rv=10", "6s list rv=10 limit=0", "6s list rv= limit=0", "6s watch rv=30"},
		},
		"backoff restarts from its start two minutes after it began": {
			lists: []scriptedList{{err: internal}, {err: internal}, {err: internal}, {err: internal}, {err: internal},
				{err: internal}, {err: internal}, {err: internal}, {err: internal}, {err: internal}, {err: internal},
				{err: internal}, {err: internal}, {err: internal}},
			runFor: 3 * time.Minute,
			want: []string{"0s list rv=0 limit=500", "1s list rv=0 limit=500", "3s list rv=0 limit=500", "7s list rv=0 limit=500",
				"15s list rv=0 limit=500", "31s list rv=0 limit=500", "1m1s list rv=0 limit=500", "1m31s list rv=0 limit=500",
				"2m1s list rv=0 limit=500", "2m2s list rv=0 limit=500", "2m4s list rv=0 limit=500", "2m8s list rv=0 limit=500",
				"2m16s list rv=0 limit=500", "2m32s list rv=0 limit=500"},
		},
		"streaming list completes: its stream goes on as the watch": {
			streaming: true,
			watches:   []scriptedWatch{completeStream},
			runFor:    time.Minute,
			want:      []string{"0s stream rv="},
		},
		"stream closes before the end bookmark: stream again at once": {
			streaming: true,
			watches: []scriptedWatch{{steps: []scriptedStep{
				{event: watch.Event{Type: watch.Added, Object: scriptedPod("a", "8")}},
				{after: 2 * time.Second, close: true},
			}}, {steps: []scriptedStep{
				{after: 3 * time.Second, event: watch.Event{Type: watch.Added, Object: scriptedPod("a", "8")}},
				{after: 3 * time.Second, close: true},
			}}, completeStream},
			runFor: time.Minute,
			want:   []string{"0s stream rv=", "2s stream rv=", "5s stream rv="},
		},
		"stream closes at once without events: paginated list at once": {
			streaming: true,
			lists:     []scriptedList{listAt("10")},
			watches:   []scriptedWatch{{steps: []scriptedStep{{close: true}}}},
			runFor:    time.Minute,
			want:      []string{"0s stream rv=", "0s list rv=0 limit=500", "0s watch rv=10"},
		},
		"streaming list refused by the server's version: paginated list at once": {
			streaming: true,
			lists:     []scriptedList{listAt("10")},
			watches:   []scriptedWatch{{err: apierrors.NewBadRequest("sendInitialEvents is forbidden")}},
			runFor:    time.Minute,
			want:      []string{"0s stream rv=", "0s list rv=0 limit=500", "0s watch rv=10"},
		},
		"stream fails with an internal error: paginated list at once": {
			streaming: true,
			lists:     []scriptedList{listAt("10")},
			watches:   []scriptedWatch{failAfter(2*time.Second, internal)},
			runFor:    time.Minute,
			want:      []string{"0s stream rv=", "2s list rv=0 limit=500", "2s watch rv=10"},
		},
		"stream refused: stream again after the backoff": {
			streaming: true,
			watches:   []scriptedWatch{{err: refused}, {err: refused}, completeStream},
			runFor:    time.Minute,
			want:      []string{"0s stream rv=", "1s stream rv=", "3s stream rv="},
		},
		"stream throttled: stream again after the backoff": {
			streaming: true,
			watches:   []scriptedWatch{failAfter(time.Second, throttled), completeStream},
			runFor:    time.Minute,
			want:      []string{"0s stream rv=", "2s stream rv="},
		},
		"live watch after a stream ends with 410, the version is gone: stream from the newest state at once": {
			streaming: true,
			watches: []scriptedWatch{
				{steps: []scriptedStep{
					{event: watch.Event{Type: watch.Added, Object: scriptedPod("a", "8")}},
					{event: endBookmark("9")},
					{after: 5 * time.Second, event: statusEvent(expired)},
				}},
				{err: expired},
				completeStream,
			},
			runFor: time.Minute,
			want:   []string{"0s stream rv=", "6s stream rv=9", "6s stream rv="},
		},
	}
	// apimachinery's second error handler spaces errors by a millisecond,
	// remembering the last one in a global that would carry one bubble's
	// fake time into the next; only the first, which logs, is kept.
	saved := utilruntime.ErrorHandlers
	utilruntime.ErrorHandlers = saved[:1]
	t.Cleanup(func() { utilruntime.ErrorHandlers = saved })
	for name, sc := range cases {
		t.Run(name, func(t *testing.T) {
			theirs := playRetryScript(t, "client-go", sc)
			ours := playRetryScript(t, "kcache", sc)
			if diff := cmp.Diff(sc.want, theirs.requests); diff != "" {
				t.Errorf("client-go's requests are not the row's (-want +client-go):\n%s", diff)
			}
			if diff := cmp.Diff(theirs.requests, ours.requests); diff != "" {
				t.Errorf("requests (-client-go +kcache):\n%s", diff)
			}
			if problems := compareRetryLogs(theirs.logs, ours.logs); len(problems) > 0 {
				t.Errorf("log lines differ:\n%s\nclient-go:\n  %s\nkcache:\n  %s", strings.Join(problems, "\n"),
					strings.Join(theirs.logs, "\n  "), strings.Join(ours.logs, "\n  "))
			}
		})
	}
}

// retryPlay is what one library did with a script.
type retryPlay struct {
	requests []string
	logs     []string
}

// playRetryScript runs lib's Reflector on the script in a bubble of its own
// for sc.runFor of fake time.
func playRetryScript(t *testing.T, lib string, sc retryScript) retryPlay {
	var out retryPlay
	t.Run(lib, func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			lw := newScriptedLW(sc)
			sink := &recordingSink{}
			ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logr.New(sink)))
			run := scriptedReflector(lib, lw, sc)
			done := make(chan struct{})
			go func() {
				defer close(done)
				run(ctx)
			}()
			time.Sleep(sc.runFor)
			cancel()
			<-done
			close(lw.ended)
			synctest.Wait()
			out = retryPlay{requests: lw.recorded(), logs: sink.recorded()}
		})
	})
	return out
}

// scriptedReflector builds lib's Reflector over lw and returns its
// RunWithContext.
func scriptedReflector(lib string, lw *scriptedLW, sc retryScript) func(context.Context) {
	backoff := retryBackoff
	if lib == "client-go" {
		r := clientgocache.NewReflectorWithOptions(lw, &v1.Pod{}, clientgocache.NewStore(clientgocache.MetaNamespaceKeyFunc),
			clientgocache.ReflectorOptions{Name: "scripted", Backoff: &backoff})
		r.MaxInternalErrorRetryDuration = sc.maxInternal
		return r.RunWithContext
	}
	r := cache.NewReflectorWithOptions(lw, &v1.Pod{}, cache.NewStore(cache.MetaNamespaceKeyFunc),
		cache.ReflectorOptions{Name: "scripted", Backoff: &backoff})
	r.MaxInternalErrorRetryDuration = sc.maxInternal
	return r.RunWithContext
}

// compareRetryLogs checks that kcache logged every line client-go logged,
// in the same order, with the same verbosity and keys; kcache may add lines
// of its own, but only debug lines (V(4) and above).
func compareRetryLogs(theirs, ours []string) []string {
	var problems []string
	i := 0
	for _, line := range ours {
		if i < len(theirs) && line == theirs[i] {
			i++
			continue
		}
		if !strings.HasPrefix(line, "V(") || line[2] < '4' {
			problems = append(problems, "kcache only: "+line)
		}
	}
	for _, line := range theirs[i:] {
		problems = append(problems, "client-go only: "+line)
	}
	return problems
}

// scriptedLW answers requests from a script and records each one: when,
// which verb ("list", "watch", or "stream" for a streaming list) and from
// which resource version.
type scriptedLW struct {
	streaming bool
	began     time.Time
	// ended is closed when the test is over: open streams end.
	ended chan struct{}

	// mu guards lists, watches and requests.
	mu       sync.Mutex
	lists    []scriptedList
	watches  []scriptedWatch
	requests []string
}

func newScriptedLW(sc retryScript) *scriptedLW {
	return &scriptedLW{streaming: sc.streaming, began: time.Now(), ended: make(chan struct{}),
		lists: slices.Clone(sc.lists), watches: slices.Clone(sc.watches)}
}

// IsWatchListSemanticsUnSupported tells both libraries whether to stream
// lists.
func (l *scriptedLW) IsWatchListSemanticsUnSupported() bool { return !l.streaming }

func (l *scriptedLW) record(verb string, opts metav1.ListOptions) {
	at := time.Since(l.began).Truncate(100 * time.Millisecond)
	entry := fmt.Sprintf("%v %s rv=%s", at, verb, opts.ResourceVersion)
	if verb == "list" {
		entry += fmt.Sprintf(" limit=%d", opts.Limit)
	}
	l.requests = append(l.requests, entry)
}

func (l *scriptedLW) recorded() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.requests)
}

// List answers with the next scripted list; once the script is used up, an
// empty list at resource version 50.
func (l *scriptedLW) List(opts metav1.ListOptions) (runtime.Object, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.record("list", opts)
	reply := scriptedList{rv: "50"}
	if len(l.lists) > 0 {
		reply, l.lists = l.lists[0], l.lists[1:]
	}
	if reply.err != nil {
		return nil, reply.err
	}
	list := &v1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: reply.rv}}
	for _, p := range reply.pods {
		list.Items = append(list.Items, *p)
	}
	return list, nil
}

// Watch answers with the next scripted watch; once the script is used up, a
// stream that stays open and quiet.
func (l *scriptedLW) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	verb := "watch"
	if opts.SendInitialEvents != nil && *opts.SendInitialEvents {
		verb = "stream"
	}
	l.record(verb, opts)
	var reply scriptedWatch
	if len(l.watches) > 0 {
		reply, l.watches = l.watches[0], l.watches[1:]
	}
	if reply.err != nil {
		return nil, reply.err
	}
	s := &scriptedStream{ch: make(chan watch.Event), stop: make(chan struct{})}
	go s.play(reply.steps, l.ended)
	return s, nil
}

// scriptedStream is a watch stream that plays steps on a goroutine of its
// own until it closes, is stopped, or the test ends.
type scriptedStream struct {
	ch       chan watch.Event
	stop     chan struct{}
	stopOnce sync.Once
}

func (s *scriptedStream) ResultChan() <-chan watch.Event { return s.ch }

func (s *scriptedStream) Stop() { s.stopOnce.Do(func() { close(s.stop) }) }

func (s *scriptedStream) play(steps []scriptedStep, ended <-chan struct{}) {
	opened := time.Now()
	for _, st := range steps {
		select {
		case <-time.After(time.Until(opened.Add(st.after))):
		case <-s.stop:
			return
		case <-ended:
			return
		}
		if st.close {
			close(s.ch)
			return
		}
		select {
		case s.ch <- st.event:
		case <-s.stop:
			return
		case <-ended:
			return
		}
	}
}

func scriptedPod(name, rv string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv}}
}

func statusEvent(err apierrors.APIStatus) watch.Event {
	s := err.Status()
	return watch.Event{Type: watch.Error, Object: &s}
}

// recordingSink is a logr sink that keeps each line as its verbosity (or
// E for an error), message and keys, values left out.
type recordingSink struct {
	// mu guards lines, shared by the sink's copies (WithValues, WithName).
	mu    *sync.Mutex
	lines *[]string
	keys  []string
}

func (s *recordingSink) Init(logr.RuntimeInfo) {
	if s.mu == nil {
		s.mu, s.lines = &sync.Mutex{}, &[]string{}
	}
}

func (s *recordingSink) Enabled(int) bool { return true }

func (s *recordingSink) Info(level int, msg string, kv ...any) {
	s.add(fmt.Sprintf("V(%d)", level), msg, kv)
}

func (s *recordingSink) Error(_ error, msg string, kv ...any) { s.add("E", msg, kv) }

func (s *recordingSink) add(level, msg string, kv []any) {
	keys := slices.Clone(s.keys)
	for i := 0; i < len(kv); i += 2 {
		keys = append(keys, fmt.Sprint(kv[i]))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	*s.lines = append(*s.lines, fmt.Sprintf("%s %q %v", level, msg, keys))
}

func (s *recordingSink) WithValues(kv ...any) logr.LogSink {
	c := *s
	c.keys = slices.Clone(s.keys)
	for i := 0; i < len(kv); i += 2 {
		c.keys = append(c.keys, fmt.Sprint(kv[i]))
	}
	return &c
}

func (s *recordingSink) WithName(string) logr.LogSink { c := *s; return &c }

func (s *recordingSink) recorded() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(*s.lines)
}
