package harness

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

func testSnapshot(n int, rv string) Snapshot {
	return Snapshot{Len: n, RV: rv, Fill: func(dst *v1.Pod, i int) { ClusterLayout.FillPod(dst, i, uint64(i+1), 0) }}
}

func names(list *v1.PodList) []string {
	var out []string
	for _, p := range list.Items {
		out = append(out, p.Name)
	}
	return out
}

func TestFakeLWList(t *testing.T) {
	l := ClusterLayout
	tests := []struct {
		name         string
		opts         metav1.ListOptions
		wantPods     []int
		wantContinue string
		wantErr      bool
	}{
		{name: "whole list", opts: metav1.ListOptions{}, wantPods: []int{0, 1, 2, 3, 4}},
		{name: "limit ignored at resourceVersion 0", opts: metav1.ListOptions{ResourceVersion: "0", Limit: 2}, wantPods: []int{0, 1, 2, 3, 4}},
		{name: "first page", opts: metav1.ListOptions{Limit: 2}, wantPods: []int{0, 1}, wantContinue: "2"},
		{name: "middle page", opts: metav1.ListOptions{Limit: 2, Continue: "2"}, wantPods: []int{2, 3}, wantContinue: "4"},
		{name: "last page", opts: metav1.ListOptions{Limit: 2, Continue: "4"}, wantPods: []int{4}},
		{name: "bad continue", opts: metav1.ListOptions{Limit: 2, Continue: "x"}, wantErr: true},
		{name: "continue past the end", opts: metav1.ListOptions{Limit: 2, Continue: "9"}, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lw := NewFakeLW(testSnapshot(5, "77"), false)
			obj, err := lw.List(tc.opts)
			if (err != nil) != tc.wantErr {
				t.Fatalf("List error = %v, want error %t", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			list := obj.(*v1.PodList)
			var want []string
			for _, i := range tc.wantPods {
				want = append(want, l.name(i))
			}
			if diff := cmp.Diff(want, names(list)); diff != "" {
				t.Errorf("pods (-want +got):\n%s", diff)
			}
			if list.Continue != tc.wantContinue || list.ResourceVersion != "77" {
				t.Errorf("continue %q, resourceVersion %q; want %q and 77", list.Continue, list.ResourceVersion, tc.wantContinue)
			}
		})
	}
	if !NewFakeLW(testSnapshot(1, "1"), false).IsWatchListSemanticsUnSupported() ||
		NewFakeLW(testSnapshot(1, "1"), true).IsWatchListSemanticsUnSupported() {
		t.Error("IsWatchListSemanticsUnSupported does not follow the watchList argument")
	}
}

func receive(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("result channel closed")
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10s")
	}
	return watch.Event{}
}

func TestFakeLWStreamingListThenPushedEventsThenExpiry(t *testing.T) {
	ctx := context.Background()
	lw := NewFakeLW(testSnapshot(3, "3"), true)
	readyc := make(chan *Watch, 1)
	go func() {
		w, err := lw.ReadyWatch(ctx)
		if err != nil {
			t.Error(err)
		}
		readyc <- w
	}()
	yes := true
	wi, err := lw.Watch(metav1.ListOptions{SendInitialEvents: &yes})
	if err != nil {
		t.Fatal(err)
	}
	defer wi.Stop()
	var got []string
	for range 3 {
		ev := receive(t, wi)
		if ev.Type != watch.Added {
			t.Fatalf("initial event type %s, want ADDED", ev.Type)
		}
		got = append(got, ev.Object.(*v1.Pod).Name)
	}
	want := []string{ClusterLayout.name(0), ClusterLayout.name(1), ClusterLayout.name(2)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("initial events (-want +got):\n%s", diff)
	}
	bm := receive(t, wi)
	if p := bm.Object.(*v1.Pod); bm.Type != watch.Bookmark || p.ResourceVersion != "3" ||
		p.Annotations[metav1.InitialEventsAnnotationKey] != "true" {
		t.Fatalf("got %s %+v, want the initial-events-end bookmark at resourceVersion 3", bm.Type, p.ObjectMeta)
	}
	w := <-readyc
	if w != wi {
		t.Fatal("ReadyWatch returned another watch")
	}
	pushed := ClusterLayout.Pod(9, 50, 1)
	if err := w.Send(ctx, watch.Event{Type: watch.Modified, Object: pushed}); err != nil {
		t.Fatal(err)
	}
	if ev := receive(t, wi); ev.Type != watch.Modified || ev.Object != pushed {
		t.Fatalf("got %s, want the pushed MODIFIED event", ev.Type)
	}
	if err := w.Expire(ctx); err != nil {
		t.Fatal(err)
	}
	ev := receive(t, wi)
	if st, ok := ev.Object.(*metav1.Status); ev.Type != watch.Error || !ok || st.Code != http.StatusGone {
		t.Fatalf("got %s %v, want an ERROR event with a 410 status", ev.Type, ev.Object)
	}
	if _, ok := <-wi.ResultChan(); ok {
		t.Fatal("result channel still open after Expire")
	}
}

func TestFakeLWSendToStoppedWatch(t *testing.T) {
	ctx := context.Background()
	lw := NewFakeLW(testSnapshot(1, "1"), false)
	wi, err := lw.Watch(metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := lw.ReadyWatch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wi.Stop()
	wi.Stop() // idempotent
	if err := w.Send(ctx, watch.Event{Type: watch.Modified, Object: &v1.Pod{}}); err != ErrWatchStopped {
		// The channel has room, so Send may win the race with stopped.
		if err != nil {
			t.Fatalf("Send = %v, want nil or ErrWatchStopped", err)
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := lw.ReadyWatch(cctx); err == nil {
		t.Fatal("ReadyWatch returned a stopped watch")
	}
}
