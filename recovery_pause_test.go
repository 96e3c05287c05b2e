package cache

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
)

// With utilruntime.ReallyCrash false, every loop that survives a panic
// waits before it goes on, as client-go's do, so that user code that
// panics every time costs a call per wait instead of a busy core. The
// listener's wait is pinned in processor_test.go; these pin the
// controller's and the reflector's.

// callTimes records when calls happened, from a start.
type callTimes struct {
	start time.Time

	// mu guards at.
	mu sync.Mutex
	at []time.Duration
}

func newCallTimes() *callTimes { return &callTimes{start: time.Now()} }

// record notes a call now and returns its index.
func (c *callTimes) record() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.at = append(c.at, time.Since(c.start))
	return len(c.at) - 1
}

func (c *callTimes) all() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.at...)
}

// The controller pops under wait.UntilWithContext with a one-second
// period, as client-go's does: after a Process call panicked, popping
// resumes a second later; an error from Process costs no wait.
func TestController_ProcessLoopResumesASecondAfterAPanic(t *testing.T) {
	tests := map[string]struct {
		// fail is what the first Process call does.
		fail       func() error
		wantCalled []time.Duration
	}{
		"first call panics": {
			fail:       func() error { panic("process bug") },
			wantCalled: []time.Duration{0, time.Second, time.Second},
		},
		"first call fails": {
			fail:       func() error { return errors.New("process error") },
			wantCalled: []time.Duration{0, 0, 0},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			keepServing(t)
			synctest.Test(t, func(t *testing.T) {
				calls := newCallTimes()
				ctrl := New(&Config{
					Queue:         NewDeltaFIFOWithOptions(DeltaFIFOOptions{KeyFunction: MetaNamespaceKeyFunc}),
					ListerWatcher: infSource(t, 3),
					ObjectType:    &v1.Pod{},
					Process: func(interface{}, bool) error {
						if calls.record() == 0 {
							return tc.fail()
						}
						return nil
					},
				})
				stop := infRun(t, ctrl)
				time.Sleep(time.Minute)
				synctest.Wait()
				stop()
				if diff := cmp.Diff(tc.wantCalled, calls.all()); diff != "" {
					t.Errorf("Process call times (-want +got):\n%s", diff)
				}
			})
		})
	}
}

// A Reflector run handles a cycle that panicked like one that failed: the
// next cycle starts after the backoff, as under client-go's
// wait.BackoffUntil.
func TestReflector_RunRestartsAPanickedCycleAfterTheBackoff(t *testing.T) {
	tests := map[string]func() (runtime.Object, error){
		"list panics": func() (runtime.Object, error) { panic("list bug") },
		"list fails":  func() (runtime.Object, error) { return nil, errors.New("list error") },
	}
	for name, firstList := range tests {
		t.Run(name, func(t *testing.T) {
			keepServing(t)
			synctest.Test(t, func(t *testing.T) {
				rfSetup(t, false)
				lists := newCallTimes()
				lw := &rfLW{
					listFn: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
						if lists.record() == 0 {
							return firstList()
						}
						return rfPodList("10", ""), nil
					},
					watchFn: rfWatches(), // streams that stay open
				}
				backoff := wait.Backoff{Duration: 7 * time.Second}
				r := NewReflectorWithOptions(lw, &v1.Pod{}, newRFStore(), ReflectorOptions{Backoff: &backoff})
				stop := rfRunForever(r)
				time.Sleep(time.Minute)
				synctest.Wait()
				stop()
				if diff := cmp.Diff([]time.Duration{0, 7 * time.Second}, lists.all()); diff != "" {
					t.Errorf("list call times (-want +got):\n%s", diff)
				}
			})
		})
	}
}
