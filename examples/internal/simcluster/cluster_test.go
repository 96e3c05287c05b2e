package simcluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
)

// newTestCluster returns a cluster holding pods p1..pn in namespace ns,
// app=web for odd numbers and app=api for even ones.
func newTestCluster(t *testing.T, n int, opts Options) *Cluster {
	t.Helper()
	c := New(opts)
	t.Cleanup(c.Close)
	for i := 1; i <= n; i++ {
		app := "web"
		if i%2 == 0 {
			app = "api"
		}
		if _, err := c.Create(NewPod("ns", fmt.Sprintf("p%d", i), app)); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// page is what a test checks of a list page.
type page struct {
	Names     []string
	RV        string
	Remaining int64
	More      bool
}

func listAll(t *testing.T, c *Cluster, opts metav1.ListOptions) ([]page, error) {
	t.Helper()
	var pages []page
	for {
		obj, err := c.List(context.Background(), opts)
		if err != nil {
			return pages, err
		}
		list := obj.(*v1.PodList)
		p := page{RV: list.ResourceVersion, More: list.Continue != ""}
		for _, pod := range list.Items {
			p.Names = append(p.Names, pod.Name)
		}
		if list.RemainingItemCount != nil {
			p.Remaining = *list.RemainingItemCount
		}
		pages = append(pages, p)
		if list.Continue == "" {
			return pages, nil
		}
		opts = metav1.ListOptions{Limit: opts.Limit, Continue: list.Continue}
	}
}

func TestList_PagesSelectsAndChecksResourceVersions(t *testing.T) {
	tests := map[string]struct {
		opts     metav1.ListOptions
		want     []page
		wantGone bool
	}{
		"one page without a limit": {
			opts: metav1.ListOptions{},
			want: []page{{Names: []string{"p1", "p2", "p3", "p4", "p5"}, RV: "5"}},
		},
		"pages of two with the remaining count": {
			opts: metav1.ListOptions{Limit: 2},
			want: []page{
				{Names: []string{"p1", "p2"}, RV: "5", Remaining: 3, More: true},
				{Names: []string{"p3", "p4"}, RV: "5", Remaining: 1, More: true},
				{Names: []string{"p5"}, RV: "5"},
			},
		},
		"label selector": {
			opts: metav1.ListOptions{LabelSelector: "app=api"},
			want: []page{{Names: []string{"p2", "p4"}, RV: "5"}},
		},
		"field selector": {
			opts: metav1.ListOptions{FieldSelector: "metadata.name=p3"},
			want: []page{{Names: []string{"p3"}, RV: "5"}},
		},
		"current resource version": {
			opts: metav1.ListOptions{ResourceVersion: "5", Limit: 10},
			want: []page{{Names: []string{"p1", "p2", "p3", "p4", "p5"}, RV: "5"}},
		},
	}
	c := newTestCluster(t, 5, Options{})
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := listAll(t, c, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("pages (-want +got):\n%s", diff)
			}
		})
	}
}

func TestList_AfterExpireOldVersionsAndContinueTokensAreGone(t *testing.T) {
	c := newTestCluster(t, 5, Options{})
	first, err := c.List(context.Background(), metav1.ListOptions{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Expire(func(tx Tx) error { return tx.Delete("ns", "p1") }); err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		opts     metav1.ListOptions
		wantGone bool
	}{
		"old continue token":   {opts: metav1.ListOptions{Limit: 2, Continue: first.(*v1.PodList).Continue}, wantGone: true},
		"old resource version": {opts: metav1.ListOptions{ResourceVersion: "5"}, wantGone: true},
		"newest state":         {opts: metav1.ListOptions{}},
		"any state":            {opts: metav1.ListOptions{ResourceVersion: "0"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := c.List(context.Background(), tc.opts)
			if got := apierrors.IsResourceExpired(err); got != tc.wantGone {
				t.Errorf("IsResourceExpired(%v) = %v, want %v", err, got, tc.wantGone)
			}
		})
	}
	pages, err := listAll(t, c, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []page{{Names: []string{"p2", "p3", "p4", "p5"}, RV: "7"}}
	if diff := cmp.Diff(want, pages); diff != "" {
		t.Errorf("list after Expire (-want +got):\n%s", diff)
	}
}

func TestList_FutureResourceVersionIsTooLarge(t *testing.T) {
	c := newTestCluster(t, 1, Options{})
	_, err := c.List(context.Background(), metav1.ListOptions{ResourceVersion: "99"})
	if !apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge) {
		t.Errorf("List from the future: got %v, want a ResourceVersionTooLarge cause", err)
	}
}

// event is what a test checks of a watch event.
type event struct {
	Type watch.EventType
	Name string
	RV   string
	// Reason is the reason of an ERROR event's status.
	Reason metav1.StatusReason
}

func eventOf(ev watch.Event) event {
	switch obj := ev.Object.(type) {
	case *v1.Pod:
		return event{Type: ev.Type, Name: obj.Name, RV: obj.ResourceVersion}
	case *metav1.Status:
		return event{Type: ev.Type, Reason: obj.Reason}
	}
	return event{Type: ev.Type, Name: fmt.Sprintf("%T", ev.Object)}
}

// collect reads n events from w, or all events until it closes when n is
// negative.
func collect(t *testing.T, w watch.Interface, n int) []event {
	t.Helper()
	var got []event
	timeout := time.After(10 * time.Second)
	for n < 0 || len(got) < n {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				if n >= 0 {
					t.Fatalf("watch closed after %d events, want %d: %v", len(got), n, got)
				}
				return got
			}
			got = append(got, eventOf(ev))
		case <-timeout:
			t.Fatalf("timed out after %d events: %v", len(got), got)
		}
	}
	return got
}

func TestWatch_StartsWhereAsked(t *testing.T) {
	tests := map[string]struct {
		opts      metav1.ListOptions
		streaming bool
		want      []event
		closed    bool
	}{
		"from zero: current state as ADDED, then live": {
			opts: metav1.ListOptions{ResourceVersion: "0"},
			want: []event{
				{Type: watch.Added, Name: "p1", RV: "5"},
				{Type: watch.Added, Name: "p2", RV: "4"},
				{Type: watch.Added, Name: "p3", RV: "3"},
				{Type: watch.Modified, Name: "p1", RV: "6"},
			},
		},
		"from a version: the changes after it, then live": {
			opts: metav1.ListOptions{ResourceVersion: "3"},
			want: []event{
				{Type: watch.Modified, Name: "p2", RV: "4"},
				{Type: watch.Modified, Name: "p1", RV: "5"},
				{Type: watch.Modified, Name: "p1", RV: "6"},
			},
		},
		"with a label selector": {
			opts: metav1.ListOptions{ResourceVersion: "2", LabelSelector: "app=web"},
			want: []event{
				{Type: watch.Added, Name: "p3", RV: "3"},
				{Type: watch.Modified, Name: "p1", RV: "5"},
				{Type: watch.Modified, Name: "p1", RV: "6"},
			},
		},
		"streaming list: ADDED, the end bookmark, then live": {
			opts:      metav1.ListOptions{SendInitialEvents: ptr.To(true), AllowWatchBookmarks: true},
			streaming: true,
			want: []event{
				{Type: watch.Added, Name: "p1", RV: "5"},
				{Type: watch.Added, Name: "p2", RV: "4"},
				{Type: watch.Added, Name: "p3", RV: "3"},
				{Type: watch.Bookmark, RV: "5"},
				{Type: watch.Modified, Name: "p1", RV: "6"},
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := newTestCluster(t, 3, Options{StreamingLists: tc.streaming})
			for _, name := range []string{"p2", "p1"} {
				p, _ := c.Get("ns", name)
				if _, err := c.Update(WithPhase(p, v1.PodRunning)); err != nil {
					t.Fatal(err)
				}
			}
			w, err := c.Watch(context.Background(), tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			p, _ := c.Get("ns", "p1")
			if _, err := c.Update(WithPhase(p, v1.PodSucceeded)); err != nil {
				t.Fatal(err)
			}
			got := collect(t, w, len(tc.want))
			for i := range got {
				if got[i].Type == watch.Bookmark {
					got[i].Name = "" // bookmarks carry no name
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWatch_StreamingListBookmarkIsMarked(t *testing.T) {
	c := newTestCluster(t, 1, Options{StreamingLists: true})
	w, err := c.Watch(context.Background(), metav1.ListOptions{SendInitialEvents: ptr.To(true), AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	<-w.ResultChan()
	ev := <-w.ResultChan()
	if got := ev.Object.(*v1.Pod).Annotations[metav1.InitialEventsAnnotationKey]; ev.Type != watch.Bookmark || got != "true" {
		t.Errorf("second event = %s with annotation %q, want a BOOKMARK marked true", ev.Type, got)
	}
}

func TestWatch_StreamingListRefusedUnlessEnabled(t *testing.T) {
	c := newTestCluster(t, 1, Options{})
	if !c.IsWatchListSemanticsUnSupported() {
		t.Error("IsWatchListSemanticsUnSupported() = false, want true")
	}
	_, err := c.Watch(context.Background(), metav1.ListOptions{SendInitialEvents: ptr.To(true)})
	if !apierrors.IsBadRequest(err) {
		t.Errorf("Watch(sendInitialEvents) = %v, want a BadRequest", err)
	}
}

func TestWatch_ServerSideEnds(t *testing.T) {
	gone := event{Type: watch.Error, Reason: metav1.StatusReasonExpired}
	tests := map[string]struct {
		// act ends the watch opened at resource version 3.
		act  func(*Cluster)
		want []event
	}{
		"DropWatches closes the stream": {
			act:  func(c *Cluster) { c.DropWatches() },
			want: nil,
		},
		"Expire sends 410 Gone and closes": {
			act:  func(c *Cluster) { _ = c.Expire(nil) },
			want: []event{gone},
		},
		"Close closes the stream": {
			act:  (*Cluster).Close,
			want: nil,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := newTestCluster(t, 3, Options{})
			w, err := c.Watch(context.Background(), metav1.ListOptions{ResourceVersion: "3"})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			tc.act(c)
			if diff := cmp.Diff(tc.want, collect(t, w, -1)); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWatch_FromCompactedVersionGetsGone(t *testing.T) {
	c := newTestCluster(t, 3, Options{})
	if err := c.Expire(nil); err != nil {
		t.Fatal(err)
	}
	w, err := c.Watch(context.Background(), metav1.ListOptions{ResourceVersion: "3"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	want := []event{{Type: watch.Error, Reason: metav1.StatusReasonExpired}}
	if diff := cmp.Diff(want, collect(t, w, -1)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if got := c.Stats().GoneErrors; got != 1 {
		t.Errorf("Stats().GoneErrors = %d, want 1", got)
	}
}

func TestWatch_HistoryLimitCompacts(t *testing.T) {
	c := newTestCluster(t, 10, Options{HistoryLimit: 4})
	// The history is trimmed back to 4 entries whenever it exceeds 5:
	// after 10 changes it holds versions 7 to 10.
	w, err := c.Watch(context.Background(), metav1.ListOptions{ResourceVersion: "4"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if got := collect(t, w, -1); len(got) != 1 || got[0].Reason != metav1.StatusReasonExpired {
		t.Errorf("watch from a trimmed version: %v, want one 410 Gone", got)
	}
	w2, err := c.Watch(context.Background(), metav1.ListOptions{ResourceVersion: "8"})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Stop()
	want := []event{{Type: watch.Added, Name: "p9", RV: "9"}, {Type: watch.Added, Name: "p10", RV: "10"}}
	if diff := cmp.Diff(want, collect(t, w2, 2)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestWatch_SlowWatcherIsEnded(t *testing.T) {
	c := newTestCluster(t, 0, Options{WatchBacklogLimit: 3})
	w, err := c.Watch(context.Background(), metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	// Nobody reads: the run goroutine holds at most one event in hand,
	// so a handful more overflow the backlog.
	for i := range 10 {
		if _, err := c.Create(NewPod("ns", fmt.Sprintf("p%d", i), "web")); err != nil {
			t.Fatal(err)
		}
	}
	got := collect(t, w, -1)
	if len(got) >= 10 {
		t.Errorf("slow watcher got all %d events, want it ended early", len(got))
	}
	if s := c.Stats().SlowWatchesEnded; s != 1 {
		t.Errorf("Stats().SlowWatchesEnded = %d, want 1", s)
	}
}

func TestWatch_StopForgetsTheWatcher(t *testing.T) {
	c := newTestCluster(t, 0, Options{})
	w, err := c.Watch(context.Background(), metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	w.Stop()
	w.Stop()
	if got := collect(t, w, -1); len(got) != 0 {
		t.Errorf("events after Stop: %v", got)
	}
	c.mu.Lock()
	n := len(c.watchers)
	c.mu.Unlock()
	if n != 0 {
		t.Errorf("%d watchers registered after Stop, want 0", n)
	}
}

func TestWrites_ReportAPIErrors(t *testing.T) {
	c := newTestCluster(t, 1, Options{})
	stale, _ := c.Get("ns", "p1")
	if _, err := c.Update(WithPhase(stale, v1.PodRunning)); err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		do   func() error
		want func(error) bool
	}{
		"create existing": {do: func() error { _, err := c.Create(NewPod("ns", "p1", "web")); return err }, want: apierrors.IsAlreadyExists},
		"update missing":  {do: func() error { _, err := c.Update(NewPod("ns", "nope", "web")); return err }, want: apierrors.IsNotFound},
		"update stale":    {do: func() error { _, err := c.Update(stale); return err }, want: apierrors.IsConflict},
		"delete missing":  {do: func() error { return c.Delete("ns", "nope") }, want: apierrors.IsNotFound},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if err := tc.do(); !tc.want(err) {
				t.Errorf("got %v", err)
			}
		})
	}
}
