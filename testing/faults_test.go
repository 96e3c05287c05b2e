package framework_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	cache "github.com/kcache/cache"
	framework "github.com/kcache/cache/testing"
)

// The injector is a ListerWatcher in both forms, as reflectors take them.
var (
	_ cache.ListerWatcher            = (*framework.FaultyListerWatcher)(nil)
	_ cache.ListerWatcherWithContext = (*framework.FaultyListerWatcher)(nil)
)

// faultSummary summarises an event as "TYPE name@rv", or "ERROR code" for
// an ERROR event.
func faultSummary(t *testing.T, e watch.Event) string {
	t.Helper()
	if e.Type == watch.Error {
		status, ok := e.Object.(*metav1.Status)
		if !ok {
			t.Fatalf("ERROR event carries %T, want *metav1.Status", e.Object)
		}
		return fmt.Sprintf("ERROR %d", status.Code)
	}
	m, err := meta.Accessor(e.Object)
	if err != nil {
		t.Fatalf("%s event without metadata: %v", e.Type, err)
	}
	return fmt.Sprintf("%s %s@%s", e.Type, m.GetName(), m.GetResourceVersion())
}

// readAll reads w until it closes. Inside a synctest bubble a stream that
// neither closes nor delivers is a deadlock the bubble reports.
func readAll(t *testing.T, w watch.Interface) []string {
	t.Helper()
	var got []string
	for e := range w.ResultChan() {
		got = append(got, faultSummary(t, e))
	}
	return got
}

// sourceWithPods returns a fake source that recorded n changes: pods p0..
// added, so that a watch from "0" replays them as ADDED@1..n, then a
// modification of p0 at n+1 when modify is set.
func sourceWithPods(n int, modify bool) *framework.FakeControllerSource {
	src := framework.NewFakeControllerSource()
	for i := range n {
		src.Add(pod(fmt.Sprint("p", i)))
	}
	if modify {
		src.Modify(pod("p0"))
	}
	return src
}

func TestFaultyListerWatcher_CallFaultsFailWithTheAPIErrorOfTheirKind(t *testing.T) {
	isTimeout := func(err error) bool {
		return apierrors.IsTimeout(err) || errors.Is(err, context.DeadlineExceeded)
	}
	tests := []struct {
		name    string
		cfg     framework.FaultConfig
		call    func(f *framework.FaultyListerWatcher) error
		check   func(error) bool
		counted framework.FaultKind
	}{
		{"list gone", framework.FaultConfig{ListGone: 1}, listCall(""), apierrors.IsResourceExpired, framework.FaultListGone},
		{"continue gone", framework.FaultConfig{ContinueGone: 1}, listCall("token"), apierrors.IsResourceExpired, framework.FaultContinueGone},
		{"list internal error", framework.FaultConfig{ListInternalError: 1}, listCall(""), apierrors.IsInternalError, framework.FaultListInternalError},
		{"list timeout", framework.FaultConfig{ListTimeout: 1}, listCall(""), isTimeout, framework.FaultListTimeout},
		{"watch gone", framework.FaultConfig{WatchGone: 1}, watchCall, apierrors.IsResourceExpired, framework.FaultWatchGone},
		{"watch internal error", framework.FaultConfig{WatchInternalError: 1}, watchCall, apierrors.IsInternalError, framework.FaultWatchInternalError},
		{"watch timeout", framework.FaultConfig{WatchTimeout: 1}, watchCall, isTimeout, framework.FaultWatchTimeout},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := sourceWithPods(1, false)
			defer src.Shutdown()
			f := framework.NewFaultyListerWatcher(src, tc.cfg)
			for range 4 {
				if err := tc.call(f); !tc.check(err) {
					t.Fatalf("got error %v, not of the expected kind", err)
				}
			}
			var want [framework.NumFaultKinds]int64
			want[tc.counted] = 4
			if diff := cmp.Diff(want, f.Stats().Injected); diff != "" {
				t.Errorf("injected counts (-want +got):\n%s", diff)
			}
		})
	}
}

func listCall(continueToken string) func(*framework.FaultyListerWatcher) error {
	return func(f *framework.FaultyListerWatcher) error {
		_, err := f.List(metav1.ListOptions{Continue: continueToken})
		return err
	}
}

func watchCall(f *framework.FaultyListerWatcher) error {
	w, err := f.Watch(metav1.ListOptions{ResourceVersion: "0"})
	if err == nil {
		w.Stop()
	}
	return err
}

func TestFaultyListerWatcher_ContinueGoneSparesFirstPages(t *testing.T) {
	src := sourceWithPods(2, false)
	defer src.Shutdown()
	f := framework.NewFaultyListerWatcher(src, framework.FaultConfig{ContinueGone: 1})
	if _, err := f.List(metav1.ListOptions{}); err != nil {
		t.Fatalf("first page: %v", err)
	}
	if _, err := f.List(metav1.ListOptions{Continue: "next"}); !apierrors.IsResourceExpired(err) {
		t.Fatalf("page with a continue token: got %v, want 410", err)
	}
	if got := f.Stats(); got.Lists != 2 || got.Total() != 1 {
		t.Errorf("stats %v, want 2 lists and 1 fault", got)
	}
}

func TestFaultyListerWatcher_StreamFaults(t *testing.T) {
	tests := []struct {
		name string
		cfg  framework.FaultConfig
		// from is the watch's resource version; bookmarks asks for them.
		from      string
		bookmarks bool
		want      []string
		// oneOf, if set, replaces want: the result must be one of these.
		oneOf   [][]string
		counted map[framework.FaultKind]int64
	}{
		{
			name: "no faults relay every event",
			from: "0", bookmarks: true,
			want: []string{"ADDED p0@1", "ADDED p1@2", "MODIFIED p0@3"},
		},
		{
			name: "closed stream delivers nothing",
			cfg:  framework.FaultConfig{StreamClosed: 1},
			from: "0",
			want: nil, counted: map[framework.FaultKind]int64{framework.FaultStreamClosed: 1},
		},
		{
			name: "dropped stream ends before the event that was due",
			cfg:  framework.FaultConfig{StreamDropped: 1},
			from: "0",
			want: nil, counted: map[framework.FaultKind]int64{framework.FaultStreamDropped: 1},
		},
		{
			name:  "error event replaces the event and ends the stream",
			cfg:   framework.FaultConfig{ErrorEvent: 1},
			from:  "0",
			oneOf: [][]string{{"ERROR 410"}, {"ERROR 500"}}, counted: map[framework.FaultKind]int64{framework.FaultErrorEvent: 1},
		},
		{
			name: "bookmarks follow live events at their resource version",
			cfg:  framework.FaultConfig{Bookmark: 1},
			from: "1", bookmarks: true,
			want:    []string{"ADDED p1@2", "BOOKMARK @2", "MODIFIED p0@3", "BOOKMARK @3"},
			counted: map[framework.FaultKind]int64{framework.FaultBookmark: 2},
		},
		{
			name: "no bookmark amid synthetic adds",
			cfg:  framework.FaultConfig{Bookmark: 1},
			from: "0", bookmarks: true,
			want:    []string{"ADDED p0@1", "ADDED p1@2", "MODIFIED p0@3", "BOOKMARK @3"},
			counted: map[framework.FaultKind]int64{framework.FaultBookmark: 1},
		},
		{
			name: "no bookmark unless asked for",
			cfg:  framework.FaultConfig{Bookmark: 1},
			from: "1",
			want: []string{"ADDED p1@2", "MODIFIED p0@3"},
		},
		{
			name: "delayed events keep their order",
			cfg:  framework.FaultConfig{Delay: 1, MaxDelay: time.Second},
			from: "0",
			want: []string{"ADDED p0@1", "ADDED p1@2", "MODIFIED p0@3"}, counted: map[framework.FaultKind]int64{framework.FaultDelay: 3},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				src := sourceWithPods(2, true)
				defer src.Shutdown()
				f := framework.NewFaultyListerWatcher(src, tc.cfg)
				w, err := f.Watch(metav1.ListOptions{ResourceVersion: tc.from, AllowWatchBookmarks: tc.bookmarks})
				if err != nil {
					t.Fatal(err)
				}
				defer w.Stop()
				var got []string
				if tc.want != nil || tc.oneOf != nil {
					got = readUntilQuiet(t, w)
				} else {
					got = readAll(t, w)
				}
				switch {
				case tc.oneOf != nil:
					if !containsSeq(tc.oneOf, got) {
						t.Errorf("events %q, want one of %q", got, tc.oneOf)
					}
				default:
					if diff := cmp.Diff(tc.want, got); diff != "" {
						t.Errorf("events (-want +got):\n%s", diff)
					}
				}
				var want [framework.NumFaultKinds]int64
				for k, n := range tc.counted {
					want[k] = n
				}
				if diff := cmp.Diff(want, f.Stats().Injected); diff != "" {
					t.Errorf("injected counts (-want +got):\n%s", diff)
				}
			})
		})
	}
}

// readUntilQuiet reads w until it closes or, inside a synctest bubble,
// until every goroutine is blocked with nothing left to deliver.
func readUntilQuiet(t *testing.T, w watch.Interface) []string {
	t.Helper()
	var got []string
	for {
		synctest.Wait()
		select {
		case e, ok := <-w.ResultChan():
			if !ok {
				return got
			}
			got = append(got, faultSummary(t, e))
		default:
			// Delayed events wait on the bubble's fake clock: let it run.
			timer := time.NewTimer(2 * time.Second)
			select {
			case e, ok := <-w.ResultChan():
				timer.Stop()
				if !ok {
					return got
				}
				got = append(got, faultSummary(t, e))
			case <-timer.C:
				return got
			}
		}
	}
}

func containsSeq(options [][]string, got []string) bool {
	for _, o := range options {
		if cmp.Equal(o, got) {
			return true
		}
	}
	return false
}

// TestFaultyListerWatcher_StreamsAreOrderedPrefixesOfTheTruth checks, over
// random fault mixes, what a consumer may rely on: the events that get
// through are the source's in order without duplicates, bookmarks only
// repeat the resource version just delivered, and an ERROR event is last.
func TestFaultyListerWatcher_StreamsAreOrderedPrefixesOfTheTruth(t *testing.T) {
	seed := faultSeed(t)
	for run := range 30 {
		t.Run(fmt.Sprint("run", run), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, uint64(run)))
				src := sourceWithPods(0, false)
				defer src.Shutdown()
				truth := make([]string, 0, 40)
				for i := range 40 {
					p := pod(fmt.Sprint("p", i%7))
					if i < 7 {
						src.Add(p)
						truth = append(truth, fmt.Sprintf("ADDED %s@%d", p.Name, i+1))
					} else {
						src.Modify(p)
						truth = append(truth, fmt.Sprintf("MODIFIED %s@%d", p.Name, i+1))
					}
				}
				cfg := framework.FaultConfig{
					Rand: rng, StreamClosed: 0.05, StreamDropped: rng.Float64() * 0.1,
					ErrorEvent: rng.Float64() * 0.05, Bookmark: rng.Float64(), Delay: rng.Float64(), MaxDelay: time.Second,
				}
				f := framework.NewFaultyListerWatcher(src, cfg)
				from := rng.IntN(40)
				w, err := f.Watch(metav1.ListOptions{ResourceVersion: strconv.Itoa(from), AllowWatchBookmarks: true})
				if err != nil {
					t.Fatal(err)
				}
				defer w.Stop()
				got := readUntilQuiet(t, w)
				checkFaultyStream(t, truth[from:], got)
			})
		})
	}
}

// checkFaultyStream checks got against the events a faultless stream would
// have carried.
func checkFaultyStream(t *testing.T, want, got []string) {
	t.Helper()
	next, lastRV := 0, ""
	for i, e := range got {
		switch {
		case strings.HasPrefix(e, "ERROR "):
			if i != len(got)-1 {
				t.Fatalf("ERROR event is not last: %q", got)
			}
		case strings.HasPrefix(e, "BOOKMARK "):
			if lastRV == "" || e != "BOOKMARK @"+lastRV {
				t.Fatalf("event %d %q: a bookmark must repeat the resource version just delivered (%q): %q", i, e, lastRV, got)
			}
		default:
			if next >= len(want) || e != want[next] {
				t.Fatalf("event %d %q is not the next event of the source; got %q, want a prefix of %q", i, e, got, want)
			}
			next++
			lastRV = e[strings.LastIndex(e, "@")+1:]
		}
	}
}

func faultSeed(t *testing.T) uint64 {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("bad SEED %q: %v", s, err)
		}
		seed = v
	}
	t.Logf("seed %d (rerun with SEED=%d)", seed, seed)
	return seed
}

func TestFaultyListerWatcher_DisabledPassesEverythingThrough(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := sourceWithPods(2, true)
		defer src.Shutdown()
		all := framework.FaultConfig{
			ListGone: 1, ListInternalError: 1, ListTimeout: 1, WatchGone: 1, WatchInternalError: 1,
			WatchTimeout: 1, StreamClosed: 1, StreamDropped: 1, ErrorEvent: 1, Bookmark: 1, Delay: 1, MaxDelay: time.Second,
		}
		f := framework.NewFaultyListerWatcher(src, all)
		f.SetEnabled(false)
		if _, err := f.List(metav1.ListOptions{}); err != nil {
			t.Fatalf("list: %v", err)
		}
		w, err := f.Watch(metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			t.Fatalf("watch: %v", err)
		}
		defer w.Stop()
		want := []string{"ADDED p0@1", "ADDED p1@2", "MODIFIED p0@3"}
		if diff := cmp.Diff(want, readUntilQuiet(t, w)); diff != "" {
			t.Errorf("events (-want +got):\n%s", diff)
		}
		stats := f.Stats()
		if stats.Total() != 0 || stats.Lists != 1 || stats.Watches != 1 || stats.Events != 3 {
			t.Errorf("stats %v, want 1 list, 1 watch, 3 events and no fault", stats)
		}
	})
}

func TestFaultyListerWatcher_StopEndsTheRelayAndTheWrappedStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := sourceWithPods(3, false)
		defer src.Shutdown()
		f := framework.NewFaultyListerWatcher(src, framework.FaultConfig{Delay: 1, MaxDelay: time.Hour})
		w, err := f.Watch(metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // the relay now holds the first event back for up to an hour
		w.Stop()
		w.Stop()
		if got := readAll(t, w); len(got) != 0 {
			t.Errorf("a stopped stream delivered %q", got)
		}
	})
}

// contextLW records the contexts it is called with.
type contextLW struct {
	src  *framework.FakeControllerSource
	seen []context.Context
}

func (c *contextLW) ListWithContext(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	c.seen = append(c.seen, ctx)
	return c.src.List(o)
}

func (c *contextLW) WatchWithContext(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	c.seen = append(c.seen, ctx)
	return c.src.Watch(o)
}

type ctxKey struct{}

func TestFaultyListerWatcher_WrapsContextAwareSources(t *testing.T) {
	src := sourceWithPods(1, false)
	defer src.Shutdown()
	inner := &contextLW{src: src}
	f := framework.NewFaultyListerWatcherWithContext(inner, framework.FaultConfig{})
	ctx := context.WithValue(context.Background(), ctxKey{}, "mine")
	if _, err := f.ListWithContext(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	w, err := f.WatchWithContext(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	w.Stop()
	readAllEvents(w)
	if len(inner.seen) != 2 || inner.seen[0].Value(ctxKey{}) != "mine" || inner.seen[1].Value(ctxKey{}) != "mine" {
		t.Errorf("the wrapped source did not get the caller's context: %v", inner.seen)
	}
}

// readAllEvents drains w until it closes.
func readAllEvents(w watch.Interface) []watch.Event {
	var out []watch.Event
	for e := range w.ResultChan() {
		out = append(out, e)
	}
	return out
}

// noWatchList is a source that says it cannot serve streaming lists.
type noWatchList struct {
	*framework.FakeControllerSource
}

func (noWatchList) IsWatchListSemanticsUnSupported() bool { return true }

func TestFaultyListerWatcher_PassesOnTheStreamingListProbe(t *testing.T) {
	src := framework.NewFakeControllerSource()
	defer src.Shutdown()
	if framework.NewFaultyListerWatcher(src, framework.FaultConfig{}).IsWatchListSemanticsUnSupported() {
		t.Error("a source that says nothing must be taken to support streaming lists")
	}
	if !framework.NewFaultyListerWatcher(noWatchList{src}, framework.FaultConfig{}).IsWatchListSemanticsUnSupported() {
		t.Error("the wrapped source's refusal was not passed on")
	}
}

func TestFaultConfig_Validate(t *testing.T) {
	tests := []struct {
		name string
		cfg  framework.FaultConfig
		want string
	}{
		{"zero value", framework.FaultConfig{}, ""},
		{"all certain", framework.FaultConfig{ListGone: 1, Delay: 1, MaxDelay: time.Millisecond}, ""},
		{"above one", framework.FaultConfig{WatchGone: 1.5}, "probability of watchGone is 1.5"},
		{"negative", framework.FaultConfig{Bookmark: -0.1}, "probability of bookmark is -0.1"},
		{"delay without maximum", framework.FaultConfig{Delay: 0.5}, "MaxDelay is 0s"},
		{"negative list delay", framework.FaultConfig{ListDelay: -time.Second}, "ListDelay is -1s"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got error %v, want one containing %q", err, tc.want)
			}
			src := framework.NewFakeControllerSource()
			defer src.Shutdown()
			defer func() {
				if recover() == nil {
					t.Error("the constructor accepted an invalid config")
				}
			}()
			framework.NewFaultyListerWatcher(src, tc.cfg)
		})
	}
}

func TestFaultStats_StringNamesEveryKind(t *testing.T) {
	var s framework.FaultStats
	s.Lists, s.Injected[framework.FaultDelay] = 3, 2
	got := s.String()
	for k := range framework.NumFaultKinds {
		if !strings.Contains(got, " "+k.String()+"=") {
			t.Errorf("%q does not name %s", got, k)
		}
	}
	if !strings.HasPrefix(got, "lists=3 watches=0 events=0 faults=2") || !strings.Contains(got, "delay=2") {
		t.Errorf("String() = %q", got)
	}
	if got := framework.FaultKind(99).String(); got != "FaultKind(99)" {
		t.Errorf("unknown kind renders as %q", got)
	}
}

// The streaming list of the fake goes through untouched until its
// initial-events-end bookmark, after which bookmarks may be injected.
func TestFaultyListerWatcher_StreamingListGetsBookmarksOnlyWhenLive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := sourceWithPods(2, false)
		defer src.Shutdown()
		f := framework.NewFaultyListerWatcher(src, framework.FaultConfig{Bookmark: 1})
		w, err := f.Watch(metav1.ListOptions{SendInitialEvents: ptr.To(true), AllowWatchBookmarks: true, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		synctest.Wait()
		src.Modify(pod("p1"))
		want := []string{"ADDED p0@1", "ADDED p1@2", "BOOKMARK @2", "BOOKMARK @2", "MODIFIED p1@3", "BOOKMARK @3"}
		if diff := cmp.Diff(want, readUntilQuiet(t, w)); diff != "" {
			t.Errorf("events (-want +got):\n%s", diff)
		}
	})
}

func TestFaultyListerWatcher_ListDelayWaitsOnTheClock(t *testing.T) {
	tests := map[string]struct {
		delay    time.Duration
		disabled bool
		cancel   bool
		wantWait time.Duration
		wantErr  error
	}{
		"no delay":                  {},
		"a delay":                   {delay: 3 * time.Second, wantWait: 3 * time.Second},
		"a delay while disabled":    {delay: 3 * time.Second, disabled: true},
		"a context that ends first": {delay: time.Hour, cancel: true, wantWait: time.Minute, wantErr: context.DeadlineExceeded},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			// Inside the bubble the real clock is synctest's fake one: time
			// moves only when every goroutine waits.
			synctest.Test(t, func(t *testing.T) {
				src := sourceWithPods(1, false)
				defer src.Shutdown()
				f := framework.NewFaultyListerWatcher(src, framework.FaultConfig{ListDelay: tc.delay})
				f.SetEnabled(!tc.disabled)
				ctx := context.Background()
				if tc.cancel {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, time.Minute)
					defer cancel()
				}
				start := time.Now()
				_, err := f.ListWithContext(ctx, metav1.ListOptions{})
				if !errors.Is(err, tc.wantErr) {
					t.Errorf("List: error = %v, want %v", err, tc.wantErr)
				}
				if waited := time.Since(start); waited != tc.wantWait {
					t.Errorf("List took %v, want %v", waited, tc.wantWait)
				}
			})
		})
	}
}
