package cache

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	testingclock "k8s.io/utils/clock/testing"
)

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
