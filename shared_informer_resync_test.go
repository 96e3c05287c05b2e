package cache

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	testingclock "k8s.io/utils/clock/testing"
)

func TestSharedInformer_ResyncPeriodRules(t *testing.T) {
	dur := func(d time.Duration) *time.Duration { return &d }
	cases := map[string]struct {
		defaultResync time.Duration
		// requests are the handlers' periods, in registration order; nil
		// means the informer's default.
		requests []*time.Duration
		// startAfter registers the handlers from this index on after Run.
		startAfter  int
		wantPeriods []time.Duration
		wantCheck   time.Duration
	}{
		"informer without resync ignores handler periods": {
			requests: []*time.Duration{nil, dur(5 * time.Second)}, startAfter: 2,
			wantPeriods: []time.Duration{0, 0}, wantCheck: 0,
		},
		"default period": {
			defaultResync: 10 * time.Second, requests: []*time.Duration{nil}, startAfter: 1,
			wantPeriods: []time.Duration{10 * time.Second}, wantCheck: 10 * time.Second,
		},
		"zero opts out": {
			defaultResync: 10 * time.Second, requests: []*time.Duration{dur(0), dur(-time.Second)}, startAfter: 2,
			wantPeriods: []time.Duration{0, 0}, wantCheck: 10 * time.Second,
		},
		"below the minimum is raised to one second": {
			defaultResync: 10 * time.Second, requests: []*time.Duration{dur(10 * time.Millisecond)}, startAfter: 1,
			wantPeriods: []time.Duration{time.Second}, wantCheck: time.Second,
		},
		"a shorter period before Run lowers the check period": {
			defaultResync: 10 * time.Second,
			requests:      []*time.Duration{nil, dur(4 * time.Second), dur(0), dur(30 * time.Second)}, startAfter: 4,
			wantPeriods: []time.Duration{10 * time.Second, 4 * time.Second, 0, 30 * time.Second}, wantCheck: 4 * time.Second,
		},
		"a shorter period after Run is raised to the check period": {
			defaultResync: 10 * time.Second,
			requests:      []*time.Duration{dur(4 * time.Second), dur(500 * time.Millisecond)}, startAfter: 0,
			wantPeriods: []time.Duration{10 * time.Second, 10 * time.Second}, wantCheck: 10 * time.Second,
		},
		"a longer period after Run is kept": {
			defaultResync: 10 * time.Second,
			requests:      []*time.Duration{nil, dur(time.Minute)}, startAfter: 0,
			wantPeriods: []time.Duration{10 * time.Second, time.Minute}, wantCheck: 10 * time.Second,
		},
		"after Run, a check period lowered before Run applies": {
			defaultResync: 10 * time.Second,
			requests:      []*time.Duration{dur(2 * time.Second), dur(time.Second), dur(3 * time.Second)}, startAfter: 1,
			wantPeriods: []time.Duration{2 * time.Second, 2 * time.Second, 3 * time.Second}, wantCheck: 2 * time.Second,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				src := infSource(t, 1)
				clk := testingclock.NewFakeClock(time.Unix(1000, 0))
				inf := newSharedIndexInformer(src, &v1.Pod{}, SharedIndexInformerOptions{ResyncPeriod: tc.defaultResync}, clk)
				regs := make([]ResourceEventHandlerRegistration, len(tc.requests))
				for i, req := range tc.requests {
					if i == tc.startAfter {
						infRun(t, inf)
						<-inf.HasSyncedChecker().Done()
					}
					var err error
					regs[i], err = inf.AddEventHandlerWithOptions(&infRecorder{}, HandlerOptions{ResyncPeriod: req})
					if err != nil {
						t.Fatalf("adding handler %d: %v", i, err)
					}
				}
				got := make([]time.Duration, len(regs))
				for i, reg := range regs {
					l := reg.(*processorListener)
					l.resyncMu.Lock()
					got[i] = l.resyncPeriod
					l.resyncMu.Unlock()
				}
				if diff := cmp.Diff(tc.wantPeriods, got); diff != "" {
					t.Errorf("handler resync periods (-want +got):\n%s", diff)
				}
				inf.mu.Lock()
				check := inf.resyncCheckPeriod
				inf.mu.Unlock()
				if check != tc.wantCheck {
					t.Errorf("resync check period = %v, want %v", check, tc.wantCheck)
				}
			})
		})
	}
}

func TestSharedInformer_ResyncReachesOnlyTheHandlersWhosePeriodElapsed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := infSource(t, 3)
		clk := testingclock.NewFakeClock(time.Unix(1000, 0))
		inf := newSharedIndexInformer(src, &v1.Pod{}, SharedIndexInformerOptions{ResyncPeriod: 3 * time.Second}, clk)
		everySecond, everyThree, never := &infRecorder{}, &infRecorder{}, &infRecorder{}
		// One second lowers the informer's check period from three.
		if _, err := inf.AddEventHandlerWithResyncPeriod(everySecond, time.Second); err != nil {
			t.Fatal(err)
		}
		infAdd(t, inf, everyThree)
		if _, err := inf.AddEventHandlerWithResyncPeriod(never, 0); err != nil {
			t.Fatal(err)
		}
		infRun(t, inf)
		<-inf.HasSyncedChecker().Done()
		synctest.Wait()

		resyncs := func(r *infRecorder) int {
			n := 0
			for _, e := range r.snapshot() {
				if e.Kind == "update" && e.OldRV == e.RV {
					n++
				}
			}
			return n
		}
		want := [][3]int{{3, 0, 0}, {6, 0, 0}, {9, 3, 0}, {12, 3, 0}, {15, 3, 0}, {18, 6, 0}}
		for step, w := range want {
			if !clk.HasWaiters() {
				t.Fatalf("step %d: nothing waits on the clock; the resync loop is not running", step)
			}
			clk.Step(time.Second)
			synctest.Wait()
			got := [3]int{resyncs(everySecond), resyncs(everyThree), resyncs(never)}
			if got != w {
				t.Errorf("after %ds: resync updates (1s, 3s, none) = %v, want %v", step+1, got, w)
			}
		}
		// A real change still reaches everybody, as an update with a new
		// resource version.
		src.Modify(testPod("ns", "p0", ""))
		synctest.Wait()
		for name, r := range map[string]*infRecorder{"1s": everySecond, "3s": everyThree, "none": never} {
			if got := r.count("update") - resyncs(r); got != 1 {
				t.Errorf("%s handler got %d real updates, want 1", name, got)
			}
		}
	})
}

func TestSharedInformer_RegistrationSyncsOnlyAfterItsHandlerProcessedItsInitialList(t *testing.T) {
	for _, late := range []bool{false, true} {
		name := "registered before Run"
		if late {
			name = "registered after the informer synced"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				src := infSource(t, 5)
				inf := infNewPodInformer(src)
				// The handler is held in its first call, then in its last
				// initial one.
				first, last := newInfLatch(), newInfLatch()
				var calls atomic.Int32
				stuck := &infRecorder{before: func(infEvent) {
					switch calls.Add(1) {
					case 1:
						first.wait()
					case 5:
						last.wait()
					}
				}}
				quick := &infRecorder{}
				var stuckReg, quickReg ResourceEventHandlerRegistration
				register := func() {
					stuckReg = infAdd(t, inf, stuck)
					quickReg = infAdd(t, inf, quick)
				}
				if !late {
					register()
				}
				infRun(t, inf)
				t.Cleanup(first.open)
				t.Cleanup(last.open)
				<-inf.HasSyncedChecker().Done()
				if late {
					register()
				}
				synctest.Wait()
				if !inf.HasSynced() {
					t.Errorf("informer not synced")
				}
				if !quickReg.HasSynced() {
					t.Errorf("registration of the handler that processed everything is not synced")
				}
				if stuckReg.HasSynced() {
					t.Errorf("registration synced while its handler is stuck in its first OnAdd")
				}
				first.open()
				synctest.Wait()
				if stuckReg.HasSynced() {
					t.Errorf("registration synced while its handler is still in its last initial OnAdd")
				}
				last.open()
				<-stuckReg.HasSyncedChecker().Done()
				if got := stuck.count("add"); got != 5 {
					t.Errorf("registration synced after %d of 5 initial adds", got)
				}
				if !strings.Contains(stuckReg.HasSyncedChecker().Name(), "infRecorder") {
					t.Errorf("checker name %q does not name the handler", stuckReg.HasSyncedChecker().Name())
				}
			})
		})
	}
}

func TestSharedInformer_TransformRunsBeforeTheStoreAndTheHandlers(t *testing.T) {
	for _, streaming := range []bool{false, true} {
		name := "paginated list"
		if streaming {
			name = "streaming list"
		}
		t.Run(name, func(t *testing.T) {
			defer setFeatureForTesting(featureWatchListClient, streaming)()
			testTransformRuns(t, streaming)
		})
	}
}

// testTransformRuns checks that the transform runs on every object state
// before the store and the handlers see it: once, except for the objects of
// a streaming list, transformed twice as in the reference.
func testTransformRuns(t *testing.T, streaming bool) {
	synctest.Test(t, func(t *testing.T) {
		src := infSource(t, 3)
		inf := infNewPodInformer(src)
		var calls atomic.Int32
		// The transform counts, in an annotation, how often it ran on the
		// object, and drops the labels.
		transform := func(obj interface{}) (interface{}, error) {
			pod, ok := obj.(*v1.Pod)
			if !ok {
				return obj, nil
			}
			calls.Add(1)
			out := pod.DeepCopy()
			n, _ := strconv.Atoi(out.Annotations["transforms"])
			out.Annotations = map[string]string{"transforms": strconv.Itoa(n + 1)}
			out.Labels = nil
			return out, nil
		}
		if err := inf.SetTransform(transform); err != nil {
			t.Fatalf("SetTransform before Run: %v", err)
		}
		var seenMu sync.Mutex
		var seen []string
		note := func(obj interface{}) {
			pod := obj.(*v1.Pod)
			seenMu.Lock()
			defer seenMu.Unlock()
			seen = append(seen, fmt.Sprintf("%s transforms=%s labels=%d", pod.Name, pod.Annotations["transforms"], len(pod.Labels)))
		}
		infAdd(t, inf, ResourceEventHandlerFuncs{
			AddFunc:    note,
			UpdateFunc: func(_, obj interface{}) { note(obj) },
			DeleteFunc: note,
		})
		infRun(t, inf)
		<-inf.HasSyncedChecker().Done()
		src.Modify(testPod("ns", "p1", "", "app", "web"))
		src.Add(testPod("ns", "p3", "", "app", "web"))
		src.Delete(testPod("ns", "p2", "", "app", "web"))
		synctest.Wait()

		if err := inf.SetTransform(func(obj interface{}) (interface{}, error) { return nil, errors.New("not this one") }); err == nil {
			t.Errorf("SetTransform on a running informer succeeded")
		}
		src.Modify(testPod("ns", "p0", "", "app", "web"))
		synctest.Wait()

		initial := "1"
		wantCalls := int32(7)
		if streaming {
			initial, wantCalls = "2", 10
		}
		want := []string{
			"p0 transforms=" + initial + " labels=0", "p1 transforms=" + initial + " labels=0", "p2 transforms=" + initial + " labels=0",
			"p1 transforms=1 labels=0", "p3 transforms=1 labels=0", "p2 transforms=1 labels=0",
			"p0 transforms=1 labels=0",
		}
		seenMu.Lock()
		got := append([]string(nil), seen...)
		seenMu.Unlock()
		sort.Strings(got[:3]) // the initial list's order is the store's business
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("objects handed to the handler (-want +got):\n%s", diff)
		}
		if n := calls.Load(); n != wantCalls {
			t.Errorf("transform ran %d times for 7 object states, want %d", n, wantCalls)
		}
		for _, obj := range inf.GetStore().List() {
			if pod := obj.(*v1.Pod); pod.Annotations["transforms"] != "1" || pod.Labels != nil {
				t.Errorf("stored %s was not transformed exactly once: %v %v", pod.Name, pod.Annotations, pod.Labels)
			}
		}
	})
}
