package cache

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
)

// rfStreamingOpts are the options of a streaming list from rv.
func rfStreamingOpts(rv string) metav1.ListOptions {
	return metav1.ListOptions{
		ResourceVersion:      rv,
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		SendInitialEvents:    ptr.To(true),
		AllowWatchBookmarks:  true,
	}
}

// rfWatchOpts are the options of a live watch from rv.
func rfWatchOpts(rv string) metav1.ListOptions {
	return metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true}
}

func TestReflectorWatchList_StreamsTheInitialStateThenWatchesOnTheSameStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rfSetup(t, true)
		stream := newRFStream(false,
			rfEvent(watch.Added, rfPod("p1", "1")),
			rfEvent(watch.Added, rfPod("p2", "2")),
			rfEvent(watch.Modified, rfPod("p1", "3")),
			rfEvent(watch.Added, rfPod("p3", "4")),
			rfEvent(watch.Deleted, rfPod("p3", "5")),
			rfEndBookmark("5"),
			rfEvent(watch.Added, rfPod("p4", "6")),
		)
		lw := &rfLW{streaming: true, watchFn: rfWatches(rfWatchReply{stream: stream})}
		store := rfBookmarkStore{newRFStore()}
		r := NewReflector(lw, &v1.Pod{}, store, 0)
		stop := rfRun(r)
		synctest.Wait()
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]rfCall{{Verb: "watch", Opts: rfStreamingOpts("")}}, lw.recorded()); diff != "" {
			t.Errorf("requests (-want +got):\n%s", diff)
		}
		want := []string{"replace@5 [p1@3 p2@2]", "add p4@6", "rv=6"}
		if diff := cmp.Diff(want, store.recorded()); diff != "" {
			t.Errorf("store calls (-want +got):\n%s", diff)
		}
		if got := r.LastSyncResourceVersion(); got != "6" {
			t.Errorf("LastSyncResourceVersion() = %q, want 6", got)
		}
		if !stream.isStopped() {
			t.Error("the stream was not stopped")
		}
	})
}

func TestReflectorWatchList_FallsBackToAPaginatedList(t *testing.T) {
	cases := map[string]struct {
		stream func() rfWatchReply
		// wait is how long the streaming list is given.
		wait time.Duration
	}{
		"server rejects streaming as invalid": {
			stream: func() rfWatchReply {
				return rfWatchReply{err: apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "", nil)}
			},
		},
		"server fails the request otherwise": {
			stream: func() rfWatchReply { return rfWatchReply{err: errors.New("unsupported")} },
		},
		"stream closes at once": {
			stream: func() rfWatchReply { return rfWatchReply{stream: newRFStream(true)} },
		},
		"stream reports an error": {
			stream: func() rfWatchReply {
				return rfWatchReply{stream: newRFStream(false, rfStatusEvent(apierrors.NewBadRequest("no streaming")))}
			},
		},
		"no end bookmark before the silence limit": {
			stream: func() rfWatchReply {
				return rfWatchReply{stream: newRFStream(false, rfEvent(watch.Added, rfPod("p0", "1")))}
			},
			wait: 3 * time.Minute,
		},
		"a bookmark not marking the end does not complete the stream": {
			stream: func() rfWatchReply {
				return rfWatchReply{stream: newRFStream(false,
					rfEvent(watch.Added, rfPod("p0", "1")),
					watch.Event{Type: watch.Bookmark, Object: &v1.Pod{ObjectMeta: metav1.ObjectMeta{
						ResourceVersion: "1", Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "false"},
					}}},
				)}
			},
			wait: 3 * time.Minute,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rfSetup(t, true)
				first := tc.stream()
				lw := &rfLW{
					streaming: true,
					listFn:    rfLists(rfReply{obj: rfPodList("7", "", rfPod("p1", "7"))}),
					watchFn:   rfWatches(first),
				}
				store := newRFStore()
				r := NewReflector(lw, &v1.Pod{}, store, 0)
				stop := rfRun(r)
				synctest.Wait()
				if tc.wait > 0 {
					if ops := store.recorded(); len(ops) != 0 {
						t.Errorf("store touched before the stream completed: %v", ops)
					}
					time.Sleep(tc.wait)
					synctest.Wait()
				}
				if err := stop(); err != nil {
					t.Fatal(err)
				}
				want := []rfCall{
					{Verb: "watch", Opts: rfStreamingOpts("")},
					{Verb: "list", Opts: metav1.ListOptions{ResourceVersion: "0", Limit: 500}},
					{Verb: "watch", Opts: rfWatchOpts("7")},
				}
				if diff := cmp.Diff(want, lw.recorded()); diff != "" {
					t.Errorf("requests (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff([]string{"replace@7 [p1@7]"}, store.recorded()); diff != "" {
					t.Errorf("store calls (-want +got):\n%s", diff)
				}
				if first.stream != nil && !first.stream.isStopped() {
					t.Error("the abandoned stream was not stopped")
				}
			})
		})
	}
}

func TestReflectorWatchList_SilenceLimitCountsFromTheLastEvent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rfSetup(t, true)
		stream := newRFStream(false)
		lw := &rfLW{streaming: true, watchFn: rfWatches(rfWatchReply{stream: stream})}
		store := newRFStore()
		r := NewReflector(lw, &v1.Pod{}, store, 0)
		r.initialEventsTimeout = time.Minute
		r.initialEventsCheckEvery = 10 * time.Second
		stop := rfRun(r)
		// A slow but steady stream: an event every 50s, for 5 minutes.
		for i := range 6 {
			time.Sleep(50 * time.Second)
			stream.send(rfEvent(watch.Added, rfPod(fmt.Sprintf("p%d", i), fmt.Sprint(i+1))))
		}
		stream.send(rfEndBookmark("6"))
		synctest.Wait()
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if n := len(lw.recorded()); n != 1 {
			t.Errorf("%d requests, want the one stream: %v", n, lw.recorded())
		}
		if diff := cmp.Diff([]string{"replace@6 [p0@1 p1@2 p2@3 p3@4 p4@5 p5@6]"}, store.recorded()); diff != "" {
			t.Errorf("store calls (-want +got):\n%s", diff)
		}
	})
}

func TestReflectorWatchList_RetriesTheStream(t *testing.T) {
	complete := func() rfWatchReply {
		return rfWatchReply{stream: newRFStream(false, rfEvent(watch.Added, rfPod("p1", "8")), rfEndBookmark("9"))}
	}
	cases := map[string]struct {
		knownRV   string
		first     func() rfWatchReply
		wantCalls []rfCall
		// wantDelay is the time between the two streams.
		wantDelay time.Duration
	}{
		"throttled": {
			first:     func() rfWatchReply { return rfWatchReply{err: apierrors.NewTooManyRequests("slow down", 1)} },
			wantCalls: []rfCall{{"watch", rfStreamingOpts("")}, {"watch", rfStreamingOpts("")}},
			wantDelay: 7 * time.Second,
		},
		"connection refused": {
			first:     func() rfWatchReply { return rfWatchReply{err: syscall.ECONNREFUSED} },
			wantCalls: []rfCall{{"watch", rfStreamingOpts("")}, {"watch", rfStreamingOpts("")}},
			wantDelay: 7 * time.Second,
		},
		"closed before the end bookmark restarts at once": {
			first: func() rfWatchReply {
				return rfWatchReply{stream: newRFStream(true, rfEvent(watch.Added, rfPod("p1", "8")))}
			},
			wantCalls: []rfCall{{"watch", rfStreamingOpts("")}, {"watch", rfStreamingOpts("")}},
		},
		"throttled inside the stream": {
			first: func() rfWatchReply {
				return rfWatchReply{stream: newRFStream(false, rfStatusEvent(apierrors.NewTooManyRequests("slow down", 1)))}
			},
			wantCalls: []rfCall{{"watch", rfStreamingOpts("")}, {"watch", rfStreamingOpts("")}},
			wantDelay: 7 * time.Second,
		},
		"expired version restarts at once from the newest state": {
			knownRV:   "5",
			first:     func() rfWatchReply { return rfWatchReply{err: apierrors.NewResourceExpired("too old")} },
			wantCalls: []rfCall{{"watch", rfStreamingOpts("5")}, {"watch", rfStreamingOpts("")}},
		},
		"too large version restarts at once from the newest state": {
			knownRV: "50",
			first: func() rfWatchReply {
				err := apierrors.NewTimeoutError("too large resource version", 1)
				err.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge}}
				return rfWatchReply{err: err}
			},
			wantCalls: []rfCall{{"watch", rfStreamingOpts("50")}, {"watch", rfStreamingOpts("")}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rfSetup(t, true)
				var times []time.Time
				replies := rfWatches(tc.first(), complete())
				lw := &rfLW{streaming: true}
				lw.watchFn = func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
					times = append(times, time.Now())
					return replies(ctx, opts)
				}
				store := newRFStore()
				r := NewReflectorWithOptions(lw, &v1.Pod{}, store, ReflectorOptions{Backoff: &rfFixedBackoff})
				r.setLastSyncResourceVersion(tc.knownRV)
				stop := rfRun(r)
				time.Sleep(time.Minute)
				synctest.Wait()
				if err := stop(); err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tc.wantCalls, lw.recorded()); diff != "" {
					t.Errorf("requests (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff([]string{"replace@9 [p1@8]"}, store.recorded()); diff != "" {
					t.Errorf("store calls (-want +got):\n%s", diff)
				}
				if len(times) == 2 && times[1].Sub(times[0]) != tc.wantDelay {
					t.Errorf("second stream after %v, want %v", times[1].Sub(times[0]), tc.wantDelay)
				}
			})
		})
	}
}

func TestReflectorWatchList_ExpiredLiveWatchAfterAStreamEndsTheCycle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rfSetup(t, true)
		lw := &rfLW{streaming: true, watchFn: rfWatches(
			rfWatchReply{stream: newRFStream(true, rfEvent(watch.Added, rfPod("p1", "1")), rfEndBookmark("2"), rfEvent(watch.Added, rfPod("p3", "3")))},
			rfWatchReply{err: apierrors.NewResourceExpired("rv already expired")},
		)}
		store := newRFStore()
		r := NewReflector(lw, &v1.Pod{}, store, 0)
		err := r.ListAndWatchWithContext(context.Background())
		if !apierrors.IsResourceExpired(err) {
			t.Errorf("ListAndWatch error = %v, want the expired error of the second watch", err)
		}
		want := []rfCall{{"watch", rfStreamingOpts("")}, {"watch", rfWatchOpts("3")}}
		if diff := cmp.Diff(want, lw.recorded()); diff != "" {
			t.Errorf("requests (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"p1@1", "p3@3"}, store.content()); diff != "" {
			t.Errorf("store content (-want +got):\n%s", diff)
		}
	})
}

// rfTransformingStore is an rfStore with a transformer.
type rfTransformingStore struct {
	*rfStore
	transform TransformFunc
}

func (s rfTransformingStore) Transformer() TransformFunc { return s.transform }

func TestReflectorWatchList_TemporaryStoreAppliesTheStoresTransformer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rfSetup(t, true)
		var calls atomic.Int32
		store := rfTransformingStore{rfStore: newRFStore(), transform: func(obj interface{}) (interface{}, error) {
			calls.Add(1)
			p := obj.(*v1.Pod).DeepCopy()
			p.Spec.Hostname = "transformed"
			return p, nil
		}}
		lw := &rfLW{streaming: true, watchFn: rfWatches(rfWatchReply{stream: newRFStream(false,
			rfEvent(watch.Added, rfPod("p1", "1")), rfEvent(watch.Added, rfPod("p2", "2")), rfEndBookmark("2"))})}
		r := NewReflector(lw, &v1.Pod{}, store, 0)
		stop := rfRun(r)
		synctest.Wait()
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if got := calls.Load(); got != 2 {
			t.Errorf("transformer called %d times, want once per streamed object", got)
		}
		for _, obj := range store.items {
			if obj.(*v1.Pod).Spec.Hostname != "transformed" {
				t.Errorf("%s reached the store untransformed", rfDescribe(obj))
			}
		}
	})
}

func TestReflectorWatchList_ConsistencyCheckComparesWithAPlainList(t *testing.T) {
	streamed := func() *rfStream {
		return newRFStream(false, rfEvent(watch.Added, rfPod("p1", "1")), rfEvent(watch.Added, rfPod("p2", "2")), rfEndBookmark("5"))
	}
	cases := map[string]struct {
		list      *v1.PodList
		end       watch.Event
		wantPanic bool
		wantLists []metav1.ListOptions
	}{
		"same objects": {
			list:      rfPodList("5", "", rfPod("p2", "2"), rfPod("p1", "1")),
			wantLists: []metav1.ListOptions{{ResourceVersion: "5", ResourceVersionMatch: metav1.ResourceVersionMatchExact}},
		},
		"an object missing from the stream": {
			list:      rfPodList("5", "", rfPod("p1", "1"), rfPod("p2", "2"), rfPod("p3", "3")),
			wantPanic: true,
			wantLists: []metav1.ListOptions{{ResourceVersion: "5", ResourceVersionMatch: metav1.ResourceVersionMatchExact}},
		},
		"an object that differs": {
			list:      rfPodList("5", "", rfPod("p1", "1"), rfPod("p2", "4")),
			wantPanic: true,
			wantLists: []metav1.ListOptions{{ResourceVersion: "5", ResourceVersionMatch: metav1.ResourceVersionMatchExact}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rfSetup(t, true)
				t.Cleanup(setWatchListConsistencyCheckForTesting(true))
				lw := &rfLW{
					streaming: true,
					listFn:    rfLists(rfReply{err: errors.New("not yet")}, rfReply{obj: tc.list}),
					watchFn:   rfWatches(rfWatchReply{stream: streamed()}),
				}
				r := NewReflector(lw, &v1.Pod{}, newRFStore(), 0)
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan any, 1)
				go func() {
					defer func() { done <- recover() }()
					_ = r.ListAndWatchWithContext(ctx)
				}()
				time.Sleep(time.Minute) // the failed LIST is retried a second later
				synctest.Wait()
				cancel()
				p := <-done
				if (p != nil) != tc.wantPanic {
					t.Errorf("panic = %v, want a panic: %v", p, tc.wantPanic)
				}
				if p != nil && !strings.Contains(fmt.Sprint(p), "data inconsistency detected") {
					t.Errorf("panic %q does not say what happened", p)
				}
				lists := lw.listRequests()
				wantLists := append([]metav1.ListOptions{tc.wantLists[0]}, tc.wantLists...)
				if diff := cmp.Diff(wantLists, lists); diff != "" {
					t.Errorf("list requests (-want +got):\n%s", diff)
				}
			})
		})
	}
}

func TestReflectorWatchList_ConsistencyCheckIsOffByDefault(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rfSetup(t, true)
		t.Cleanup(setWatchListConsistencyCheckForTesting(false))
		lw := &rfLW{streaming: true, watchFn: rfWatches(rfWatchReply{stream: newRFStream(false, rfEvent(watch.Added, rfPod("p1", "1")), rfEndBookmark("5"))})}
		lw.listFn = func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			t.Error("listed although the check is off")
			return nil, errors.New("no")
		}
		r := NewReflector(lw, &v1.Pod{}, newRFStore(), 0)
		stop := rfRun(r)
		synctest.Wait()
		if err := stop(); err != nil {
			t.Fatal(err)
		}
	})
}

func TestReflectorWatchList_QueuesTransformEachObjectTwice(t *testing.T) {
	cases := map[string]func(TransformFunc) Queue{
		"DeltaFIFO": func(tr TransformFunc) Queue {
			return NewDeltaFIFOWithOptions(DeltaFIFOOptions{KeyFunction: MetaNamespaceKeyFunc, Transformer: tr})
		},
		"RealFIFO": func(tr TransformFunc) Queue {
			return NewRealFIFO(MetaNamespaceKeyFunc, NewStore(MetaNamespaceKeyFunc), tr)
		},
		"atomic RealFIFO": func(tr TransformFunc) Queue {
			return NewRealFIFOWithOptions(RealFIFOOptions{AtomicEvents: true, Transformer: tr})
		},
	}
	for name, newQueue := range cases {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rfSetup(t, true)
				log := &transformLog{}
				queue := newQueue(log.transform)
				defer queue.Close()
				lw := &rfLW{streaming: true, watchFn: rfWatches(rfWatchReply{stream: newRFStream(false,
					rfEvent(watch.Added, rfPod("p1", "1")), rfEvent(watch.Added, rfPod("p2", "2")),
					rfEvent(watch.Modified, rfPod("p1", "3")), rfEvent(watch.Added, rfPod("p3", "4")),
					rfEvent(watch.Deleted, rfPod("p3", "5")), rfEndBookmark("5"),
					rfEvent(watch.Added, rfPod("p4", "6")))})}
				r := NewReflector(lw, &v1.Pod{}, queue, 0)
				stop := rfRun(r)
				synctest.Wait()
				if err := stop(); err != nil {
					t.Fatal(err)
				}
				// Every added or modified state as it arrives (the deletion
				// transforms nothing), then the final state of each object
				// of the list, then the live event.
				calls := log.take()
				if len(calls) != 7 {
					t.Fatalf("transform calls %v, want 7", describeCalls(calls))
				}
				checkStreamedTransforms(t, calls[:6], []string{"p1@1", "p2@2", "p1@3", "p3@4"}, []string{"p1@3", "p2@2"})
				if got := calls[6].desc; got != "p4@6#1" {
					t.Errorf("transform call for the live event: %s, want p4@6#1", got)
				}
				var popped []string
				for range 3 {
					_, err := queue.Pop(func(obj interface{}, _ bool) error {
						var objs []interface{}
						switch v := obj.(type) {
						case Deltas:
							objs = append(objs, v.Newest().Object)
						case Delta:
							objs = append(objs, v.Object)
						}
						if info, ok := objs[0].(ReplacedAllInfo); ok {
							objs = info.Objects
						}
						for _, o := range objs {
							p := o.(*v1.Pod)
							popped = append(popped, rfDescribe(o)+" transforms="+p.Annotations["transforms"])
						}
						return nil
					})
					if err != nil {
						t.Fatalf("Pop: %v", err)
					}
					if len(popped) == 3 {
						break
					}
				}
				// The streamed state reaches the queue in no particular order.
				slices.Sort(popped[:2])
				want := []string{"p1@3 transforms=2", "p2@2 transforms=2", "p4@6 transforms=1"}
				if diff := cmp.Diff(want, popped); diff != "" {
					t.Errorf("popped (-want +got):\n%s", diff)
				}
			})
		})
	}
}
