package cache

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
)

// rfVerbs summarises requests as verb@resourceVersion.
func rfVerbs(calls []rfCall) []string {
	out := []string{}
	for _, c := range calls {
		out = append(out, c.Verb+"@"+c.Opts.ResourceVersion)
	}
	return out
}

func TestReflectorWatch_AppliesEventsAndFollowsResourceVersions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rfSetup(t, false)
		stream := newRFStream(false,
			rfEvent(watch.Added, rfPod("a", "11")),
			rfEvent(watch.Modified, rfPod("a", "12")),
			rfEvent(watch.Bookmark, &v1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "13"}}),
			rfEvent(watch.Deleted, rfPod("a", "14")),
		)
		var timeout *int64
		lw := &rfLW{listFn: rfLists(rfReply{obj: rfPodList("10", "")})}
		lw.watchFn = func(_ context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			timeout = opts.TimeoutSeconds
			return stream, nil
		}
		store := rfBookmarkStore{newRFStore()}
		r := NewReflector(lw, &v1.Pod{}, store, 0)
		stop := rfRun(r)
		synctest.Wait()
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		want := []string{
			"replace@10 []",
			"add a@11", "rv=11",
			"update a@12", "rv=12",
			"bookmark@13", "rv=13",
			"delete a@14", "rv=14",
		}
		if diff := cmp.Diff(want, store.recorded()); diff != "" {
			t.Errorf("store calls (-want +got):\n%s", diff)
		}
		if got := r.LastSyncResourceVersion(); got != "14" {
			t.Errorf("LastSyncResourceVersion() = %q, want 14", got)
		}
		if timeout == nil || *timeout < 300 || *timeout >= 600 {
			t.Errorf("watch TimeoutSeconds = %v, want in [300, 600)", timeout)
		}
	})
}

func TestReflectorWatch_WatchFromNoVersionWaitsPastSyntheticAdds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rfSetup(t, false)
		stream := newRFStream(false,
			rfEvent(watch.Added, rfPod("a", "5")),
			rfEvent(watch.Added, rfPod("b", "3")),
		)
		lw := &rfLW{listFn: rfLists(rfReply{obj: rfPodList("", "")}), watchFn: rfWatches(rfWatchReply{stream: stream})}
		store := rfBookmarkStore{newRFStore()}
		r := NewReflector(lw, &v1.Pod{}, store, 0)
		stop := rfRun(r)
		synctest.Wait()
		if got := r.LastSyncResourceVersion(); got != "" {
			t.Errorf("synthetic ADDED events moved the resource version to %q", got)
		}
		stream.send(rfEvent(watch.Modified, rfPod("b", "6")))
		synctest.Wait()
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		want := []string{"replace@ []", "add a@5", "add b@3", "update b@6", "rv=6"}
		if diff := cmp.Diff(want, store.recorded()); diff != "" {
			t.Errorf("store calls (-want +got):\n%s", diff)
		}
		if got := r.LastSyncResourceVersion(); got != "6" {
			t.Errorf("LastSyncResourceVersion() = %q, want 6", got)
		}
	})
}

// rfNoMeta is an object without object metadata.
type rfNoMeta struct{ metav1.TypeMeta }

func (o *rfNoMeta) DeepCopyObject() runtime.Object { c := *o; return &c }

func rfUnstructured(gvk schema.GroupVersionKind, name, rv string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]interface{}{}}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace("ns")
	u.SetName(name)
	u.SetResourceVersion(rv)
	return u
}

func TestReflectorWatch_SkipsObjectsItCannotStore(t *testing.T) {
	widget := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	gadget := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Gadget"}
	cases := map[string]struct {
		expected interface{}
		bad      []watch.Event
		good     runtime.Object
		want     []string
	}{
		"wrong Go type": {
			expected: &v1.Pod{},
			bad:      []watch.Event{rfEvent(watch.Added, &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s", ResourceVersion: "11"}})},
			good:     rfPod("a", "12"),
			want:     []string{"a@12"},
		},
		"no object": {
			expected: &v1.Pod{},
			bad:      []watch.Event{rfEvent(watch.Added, nil)},
			good:     rfPod("a", "12"),
			want:     []string{"a@12"},
		},
		"no object with any type accepted": {
			expected: nil,
			bad:      []watch.Event{rfEvent(watch.Modified, nil)},
			good:     rfPod("a", "12"),
			want:     []string{"a@12"},
		},
		"wrong kind of unstructured": {
			expected: rfUnstructured(widget, "", ""),
			bad:      []watch.Event{rfEvent(watch.Added, rfUnstructured(gadget, "g", "11"))},
			good:     rfUnstructured(widget, "w", "12"),
			want:     []string{"w@12"},
		},
		"a table": {
			expected: nil,
			bad:      []watch.Event{rfEvent(watch.Added, rfUnstructured(metav1.SchemeGroupVersion.WithKind("Table"), "t", "11"))},
			good:     rfPod("a", "12"),
			want:     []string{"a@12"},
		},
		"object without metadata": {
			expected: nil,
			bad:      []watch.Event{rfEvent(watch.Added, &rfNoMeta{})},
			good:     rfPod("a", "12"),
			want:     []string{"a@12"},
		},
		"unknown event type": {
			expected: &v1.Pod{},
			bad:      []watch.Event{rfEvent("SURPRISE", rfPod("x", "11"))},
			good:     rfPod("a", "12"),
			want:     []string{"a@12"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				handled := rfSetup(t, false)
				events := append(slices.Clone(tc.bad), rfEvent(watch.Added, tc.good))
				lw := &rfLW{listFn: rfLists(rfReply{obj: rfPodList("10", "")}), watchFn: rfWatches(rfWatchReply{stream: newRFStream(false, events...)})}
				store := newRFStore()
				r := NewReflector(lw, tc.expected, store, 0)
				stop := rfRun(r)
				synctest.Wait()
				if err := stop(); err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tc.want, store.content()); diff != "" {
					t.Errorf("store content (-want +got):\n%s", diff)
				}
				if got := handled(); got != len(tc.bad) {
					t.Errorf("%d errors reported, want one per skipped event (%d)", got, len(tc.bad))
				}
				if got := r.LastSyncResourceVersion(); got != "12" {
					t.Errorf("LastSyncResourceVersion() = %q, want 12", got)
				}
			})
		})
	}
}

func TestReflectorWatch_StoreErrorsAreReportedAndTheWatchGoesOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		handled := rfSetup(t, false)
		stream := newRFStream(false,
			rfEvent(watch.Added, rfPod("bad", "11")),
			rfEvent(watch.Added, rfPod("a", "12")),
		)
		lw := &rfLW{listFn: rfLists(rfReply{obj: rfPodList("10", "")}), watchFn: rfWatches(rfWatchReply{stream: stream})}
		store := newRFStore()
		store.failName = "bad"
		r := NewReflector(lw, &v1.Pod{}, store, 0)
		stop := rfRun(r)
		synctest.Wait()
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"a@12"}, store.content()); diff != "" {
			t.Errorf("store content (-want +got):\n%s", diff)
		}
		if handled() != 1 {
			t.Errorf("%d errors reported, want 1", handled())
		}
	})
}

func TestReflectorWatch_ErrorEventsDecideBetweenRewatchAndRelist(t *testing.T) {
	internal := apierrors.NewInternalError(errors.New("etcdserver: no leader"))
	cases := map[string]struct {
		maxInternal time.Duration
		watches     func() []rfWatchReply
		wantEnded   bool
		wantCalls   []string
		// wantCallsIn bounds the number of requests when wantCalls is nil.
		wantCallsIn [2]int
	}{
		"410 ends the cycle": {
			watches: func() []rfWatchReply {
				return []rfWatchReply{{stream: newRFStream(false, rfStatusEvent(apierrors.NewResourceExpired("too old")))}}
			},
			wantEnded: true,
			wantCalls: []string{"list@0", "watch@10"},
		},
		"internal error without a budget ends the cycle": {
			watches:   func() []rfWatchReply { return []rfWatchReply{{stream: newRFStream(false, rfStatusEvent(internal))}} },
			wantEnded: true,
			wantCalls: []string{"list@0", "watch@10"},
		},
		"internal errors within the budget reopen the watch": {
			maxInternal: time.Minute,
			watches: func() []rfWatchReply {
				return []rfWatchReply{
					{stream: newRFStream(false, rfStatusEvent(internal))},
					{stream: newRFStream(false, rfStatusEvent(internal))},
				}
			},
			wantCalls: []string{"list@0", "watch@10", "watch@10", "watch@10"},
		},
		"internal errors past the budget end the cycle": {
			// Each stream fails a second after it opens: the errors come at
			// 1s, 2s, 3s and 4s; the fourth is past the 2s budget.
			maxInternal: 2 * time.Second,
			watches: func() []rfWatchReply {
				return []rfWatchReply{
					{stream: rfStreamFailingAfter(time.Second, internal)},
					{stream: rfStreamFailingAfter(time.Second, internal)},
					{stream: rfStreamFailingAfter(time.Second, internal)},
					{stream: rfStreamFailingAfter(time.Second, internal)},
					{stream: rfStreamFailingAfter(time.Second, internal)},
				}
			},
			wantEnded: true,
			wantCalls: []string{"list@0", "watch@10", "watch@10", "watch@10", "watch@10"},
		},
		"429 reopens the watch from the same version": {
			watches: func() []rfWatchReply {
				return []rfWatchReply{
					{stream: newRFStream(false, rfStatusEvent(apierrors.NewTooManyRequests("slow down", 1)))},
				}
			},
			wantCalls: []string{"list@0", "watch@10", "watch@10"},
		},
		"another status ends the cycle": {
			watches: func() []rfWatchReply {
				return []rfWatchReply{{stream: newRFStream(false, rfStatusEvent(apierrors.NewBadRequest("no")))}}
			},
			wantEnded: true,
			wantCalls: []string{"list@0", "watch@10"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rfSetup(t, false)
				lw := &rfLW{listFn: rfLists(rfReply{obj: rfPodList("10", "")}), watchFn: rfWatches(tc.watches()...)}
				r := NewReflector(lw, &v1.Pod{}, newRFStore(), 0)
				r.MaxInternalErrorRetryDuration = tc.maxInternal
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				done := make(chan error, 1)
				go func() { done <- r.ListAndWatchWithContext(ctx) }()
				time.Sleep(10 * time.Minute)
				synctest.Wait()
				select {
				case err := <-done:
					if err != nil {
						t.Errorf("ListAndWatch: %v", err)
					}
					if !tc.wantEnded {
						t.Error("ListAndWatch ended, want it still watching")
					}
				default:
					if tc.wantEnded {
						t.Error("ListAndWatch still runs, want the cycle ended")
					}
					cancel()
					if err := <-done; err != nil {
						t.Errorf("ListAndWatch: %v", err)
					}
				}
				calls := rfVerbs(lw.recorded())
				if tc.wantCalls != nil {
					if diff := cmp.Diff(tc.wantCalls, calls); diff != "" {
						t.Errorf("requests (-want +got):\n%s", diff)
					}
				}
				if n := len(calls); tc.wantCalls == nil && (n < tc.wantCallsIn[0] || n > tc.wantCallsIn[1]) {
					t.Errorf("%d requests, want %d to %d: %v", n, tc.wantCallsIn[0], tc.wantCallsIn[1], calls)
				}
			})
		})
	}
}

func TestReflectorWatch_RetriesAreSpacedByTheBackoff(t *testing.T) {
	cases := map[string]func() rfWatchReply{
		"watch refused":   func() rfWatchReply { return rfWatchReply{err: syscall.ECONNREFUSED} },
		"watch throttled": func() rfWatchReply { return rfWatchReply{err: apierrors.NewTooManyRequests("slow down", 1)} },
		"stream throttled": func() rfWatchReply {
			return rfWatchReply{stream: newRFStream(false, rfStatusEvent(apierrors.NewTooManyRequests("slow down", 1)))}
		},
	}
	for name, failure := range cases {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rfSetup(t, false)
				var mu sync.Mutex
				var at []time.Time
				replies := rfWatches(failure(), rfWatchReply{stream: newRFStream(false)})
				lw := &rfLW{listFn: rfLists(rfReply{obj: rfPodList("10", "")})}
				lw.watchFn = func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
					mu.Lock()
					at = append(at, time.Now())
					mu.Unlock()
					return replies(ctx, opts)
				}
				r := NewReflectorWithOptions(lw, &v1.Pod{}, newRFStore(), ReflectorOptions{Backoff: &rfFixedBackoff})
				r.MaxInternalErrorRetryDuration = time.Hour
				stop := rfRun(r)
				time.Sleep(time.Minute)
				synctest.Wait()
				if err := stop(); err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff([]string{"list@0", "watch@10", "watch@10"}, rfVerbs(lw.recorded())); diff != "" {
					t.Errorf("requests (-want +got):\n%s", diff)
				}
				if len(at) == 2 && at[1].Sub(at[0]) != 7*time.Second {
					t.Errorf("retried after %v, want the 7s backoff", at[1].Sub(at[0]))
				}
			})
		})
	}
}

// rfFixedBackoff always waits 7s.
var rfFixedBackoff = wait.Backoff{Duration: 7 * time.Second}

func TestReflectorWatch_OtherWatchStartErrorsAreReturned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rfSetup(t, false)
		forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("no"))
		lw := &rfLW{listFn: rfLists(rfReply{obj: rfPodList("10", "")}), watchFn: rfWatches(rfWatchReply{err: forbidden})}
		r := NewReflector(lw, &v1.Pod{}, newRFStore(), 0)
		err := r.ListAndWatchWithContext(context.Background())
		if !errors.Is(err, forbidden) {
			t.Errorf("ListAndWatch error = %v, want %v", err, forbidden)
		}
	})
}

func TestReflectorWatch_ClosedStreams(t *testing.T) {
	cases := map[string]struct {
		first     func() *rfStream
		wantEnded bool
		wantCalls []string
	}{
		"closed at once without events is a very short watch that ends the cycle": {
			first:     func() *rfStream { return newRFStream(true) },
			wantEnded: true,
			wantCalls: []string{"list@0", "watch@10"},
		},
		"closed after events reopens from the last version": {
			first:     func() *rfStream { return newRFStream(true, rfEvent(watch.Added, rfPod("a", "11"))) },
			wantCalls: []string{"list@0", "watch@10", "watch@11"},
		},
		"closed after a quiet while reopens from the same version": {
			first: func() *rfStream {
				s := newRFStream(false)
				go func() {
					time.Sleep(2 * time.Second)
					close(s.ch)
				}()
				return s
			},
			wantCalls: []string{"list@0", "watch@10", "watch@10"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rfSetup(t, false)
				lw := &rfLW{listFn: rfLists(rfReply{obj: rfPodList("10", "")}), watchFn: rfWatches(rfWatchReply{stream: tc.first()})}
				r := NewReflector(lw, &v1.Pod{}, newRFStore(), 0)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				done := make(chan error, 1)
				go func() { done <- r.ListAndWatchWithContext(ctx) }()
				time.Sleep(time.Minute)
				synctest.Wait()
				select {
				case err := <-done:
					if err != nil || !tc.wantEnded {
						t.Errorf("ListAndWatch ended with %v, wantEnded %v", err, tc.wantEnded)
					}
				default:
					if tc.wantEnded {
						t.Error("ListAndWatch still runs, want the cycle ended")
					}
					cancel()
					<-done
				}
				if diff := cmp.Diff(tc.wantCalls, rfVerbs(lw.recorded())); diff != "" {
					t.Errorf("requests (-want +got):\n%s", diff)
				}
			})
		})
	}
}

func TestVeryShortWatchError_NamesTheReflector(t *testing.T) {
	err := error(&VeryShortWatchError{Name: "pods"})
	if !strings.HasPrefix(err.Error(), "very short watch: pods: ") {
		t.Errorf("Error() = %q", err.Error())
	}
	var vs *VeryShortWatchError
	if !errors.As(fmt.Errorf("wrapped: %w", err), &vs) || vs.Name != "pods" {
		t.Error("VeryShortWatchError is not found by errors.As")
	}
}

func TestDefaultWatchErrorHandler_LogsEachKindAtItsLevel(t *testing.T) {
	type entry struct {
		Type      ktesting.LogType
		Verbosity int
	}
	cases := map[string]struct {
		err  error
		want []entry
	}{
		"expired is routine":       {err: apierrors.NewResourceExpired("old"), want: []entry{{ktesting.LogInfo, 4}}},
		"gone is routine":          {err: fmt.Errorf("watch: %w", goneError("old")), want: []entry{{ktesting.LogInfo, 4}}},
		"clean end is silent":      {err: io.EOF, want: []entry{}},
		"cut connection is logged": {err: io.ErrUnexpectedEOF, want: []entry{{ktesting.LogInfo, 1}}},
		"anything else is an error": {
			err:  errors.New("boom"),
			want: []entry{{ktesting.LogError, 0}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(10), ktesting.BufferLogs(true)))
			ctx := klog.NewContext(context.Background(), logger)
			r := NewNamedReflector("pods", &rfLW{}, &v1.Pod{}, newRFStore(), 0)
			DefaultWatchErrorHandler(ctx, r, tc.err)
			got := []entry{}
			for _, e := range logger.GetSink().(ktesting.Underlier).GetBuffer().Data() {
				got = append(got, entry{e.Type, e.Verbosity})
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("log entries (-want +got):\n%s", diff)
			}
		})
	}
}

func TestErrorClassification(t *testing.T) {
	tooLarge := apierrors.NewTimeoutError("too large resource version", 1)
	tooLarge.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge}}
	plainTimeout := apierrors.NewTimeoutError("slow", 1)
	cases := map[string]struct {
		err                                 error
		expired, tooLargeRV, watchRetriable bool
	}{
		"nil":                     {err: nil},
		"expired":                 {err: apierrors.NewResourceExpired("x"), expired: true},
		"gone":                    {err: goneError("x"), expired: true},
		"wrapped expired":         {err: fmt.Errorf("list: %w", apierrors.NewResourceExpired("x")), expired: true},
		"too large":               {err: tooLarge, tooLargeRV: true},
		"wrapped too large":       {err: fmt.Errorf("list: %w", tooLarge), tooLargeRV: true},
		"old too large":           {err: apierrors.NewTimeoutError("Too large resource version", 1), tooLargeRV: true},
		"plain timeout":           {err: plainTimeout},
		"connection refused":      {err: fmt.Errorf("dial: %w", syscall.ECONNREFUSED), watchRetriable: true},
		"too many requests":       {err: apierrors.NewTooManyRequests("x", 1), watchRetriable: true},
		"internal error":          {err: apierrors.NewInternalError(errors.New("x"))},
		"plain error":             {err: errors.New("x")},
		"connection reset is not": {err: syscall.ECONNRESET},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := [3]bool{isExpiredError(tc.err), isTooLargeResourceVersionError(tc.err), isWatchErrorRetriable(tc.err)}
			want := [3]bool{tc.expired, tc.tooLargeRV, tc.watchRetriable}
			if got != want {
				t.Errorf("(expired, tooLarge, retriable) = %v, want %v", got, want)
			}
		})
	}
}
