package cache

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// The streaming list answered by a test fake's watch: client-go's object
// tracker (behind every generated fake clientset) returns a
// RaceFreeFakeWatcher holding what it replays, and never the
// initial-events-end bookmark. See isBufferedFakeWatch.

// fakeWatches answers each watch request with the next watch make returns,
// and once they run out with an open, empty RaceFreeFakeWatcher.
func fakeWatches(makes ...func() watch.Interface) func(context.Context, metav1.ListOptions) (watch.Interface, error) {
	var mu sync.Mutex
	return func(context.Context, metav1.ListOptions) (watch.Interface, error) {
		mu.Lock()
		defer mu.Unlock()
		if len(makes) == 0 {
			return watch.NewRaceFreeFake(), nil
		}
		next := makes[0]
		makes = makes[1:]
		return next(), nil
	}
}

// trackerWatch is a RaceFreeFakeWatcher filled as client-go's object
// tracker fills one before returning it.
func trackerWatch(events ...watch.Event) func() watch.Interface {
	return func() watch.Interface {
		w := watch.NewRaceFreeFake()
		for _, e := range events {
			w.Action(e.Type, e.Object)
		}
		return w
	}
}

func TestReflectorWatchList_AFakeStreamWithoutEndBookmarkListsAtOnce(t *testing.T) {
	listed := []string{"replace@7 [p1@7]"}
	fallback := []rfCall{
		{Verb: "watch", Opts: rfStreamingOpts("")},
		{Verb: "list", Opts: metav1.ListOptions{ResourceVersion: "0", Limit: 500}},
		{Verb: "watch", Opts: rfWatchOpts("7")},
	}
	cases := map[string]struct {
		first     func() watch.Interface
		wantCalls []rfCall
		wantStore []string
	}{
		"tracker replaying stored objects (client-go v0.36 on)": {
			first:     trackerWatch(rfEvent(watch.Added, rfPod("p0", "1")), rfEvent(watch.Added, rfPod("p1", "2"))),
			wantCalls: fallback, wantStore: listed,
		},
		"tracker replaying nothing (client-go v0.35, or no objects)": {
			first:     trackerWatch(),
			wantCalls: fallback, wantStore: listed,
		},
		"fake holding the end bookmark streams": {
			first:     trackerWatch(rfEvent(watch.Added, rfPod("p0", "1")), rfEndBookmark("3")),
			wantCalls: []rfCall{{Verb: "watch", Opts: rfStreamingOpts("")}},
			wantStore: []string{"replace@3 [p0@1]"},
		},
		"unbuffered fake fed after it is returned streams": {
			first: func() watch.Interface {
				w := watch.NewFake()
				go func() {
					w.Add(rfPod("p0", "1"))
					w.Action(watch.Bookmark, rfEndBookmark("3").Object)
				}()
				return w
			},
			wantCalls: []rfCall{{Verb: "watch", Opts: rfStreamingOpts("")}},
			wantStore: []string{"replace@3 [p0@1]"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rfSetup(t, true)
				lw := &rfLW{
					streaming: true,
					listFn:    rfLists(rfReply{obj: rfPodList("7", "", rfPod("p1", "7"))}),
					watchFn:   fakeWatches(tc.first),
				}
				store := newRFStore()
				r := NewReflector(lw, &v1.Pod{}, store, 0)
				start := time.Now()
				stop := rfRun(r)
				synctest.Wait()
				if waited := time.Since(start); waited != 0 {
					t.Errorf("the reflector waited %v of fake time", waited)
				}
				if err := stop(); err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tc.wantCalls, lw.recorded()); diff != "" {
					t.Errorf("requests (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(tc.wantStore, store.recorded()); diff != "" {
					t.Errorf("store calls (-want +got):\n%s", diff)
				}
			})
		})
	}
}

func TestReflectorWatchList_AfterAFakeStreamFailedLaterCyclesListWithoutAsking(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rfSetup(t, true)
		expired := apierrors.NewResourceExpired("too old resource version")
		lw := &rfLW{
			streaming: true,
			listFn: rfLists(
				rfReply{obj: rfPodList("7", "", rfPod("p1", "7"))},
				rfReply{obj: rfPodList("9", "", rfPod("p1", "7"), rfPod("p2", "9"))},
			),
			watchFn: fakeWatches(trackerWatch(), trackerWatch(rfStatusEvent(expired))),
		}
		store := newRFStore()
		r := NewReflector(lw, &v1.Pod{}, store, 0)
		stop := rfRunForever(r)
		synctest.Wait()
		time.Sleep(time.Minute) // past the backoff after the expired watch
		synctest.Wait()
		stop()
		want := []rfCall{
			{Verb: "watch", Opts: rfStreamingOpts("")},
			{Verb: "list", Opts: metav1.ListOptions{ResourceVersion: "0", Limit: 500}},
			{Verb: "watch", Opts: rfWatchOpts("7")},
			{Verb: "list", Opts: metav1.ListOptions{ResourceVersion: "7"}},
			{Verb: "watch", Opts: rfWatchOpts("9")},
		}
		if diff := cmp.Diff(want, lw.recorded()); diff != "" {
			t.Errorf("requests (-want +got):\n%s", diff)
		}
	})
}
