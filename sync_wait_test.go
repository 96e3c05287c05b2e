package cache

import (
	"context"
	"errors"
	"reflect"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
)

// informerSyncedAfter returns an InformerSynced that turns true once d has passed
// on the (fake) clock, and counts its calls in calls.
func informerSyncedAfter(d time.Duration, calls *atomic.Int32) InformerSynced {
	start := time.Now()
	return func() bool {
		calls.Add(1)
		return time.Since(start) >= d
	}
}

const neverDone = time.Duration(1<<63 - 1)

func TestWaitForCacheSync_PollsUntilSyncedOrStopped(t *testing.T) {
	tests := map[string]struct {
		informerSyncedAfter []time.Duration // one InformerSynced per entry
		withNil             bool            // add a nil InformerSynced too
		stopAfter           time.Duration   // 0: stop closed at once; neverDone: not closed
		want                bool
		wantElapsed         time.Duration
		wantCalls           []int32
	}{
		"no functions": {
			stopAfter: neverDone,
			want:      true,
		},
		"all synced at once": {
			informerSyncedAfter: []time.Duration{0, 0},
			stopAfter:           neverDone,
			want:                true,
			wantCalls:           []int32{1, 1},
		},
		"synced at once wins over a closed stop channel": {
			informerSyncedAfter: []time.Duration{0},
			stopAfter:           0,
			want:                true,
			wantCalls:           []int32{1},
		},
		"nil functions are skipped": {
			informerSyncedAfter: []time.Duration{0},
			withNil:             true,
			stopAfter:           neverDone,
			want:                true,
			wantCalls:           []int32{1},
		},
		"synced between polls is seen at the next poll": {
			informerSyncedAfter: []time.Duration{250 * time.Millisecond},
			stopAfter:           neverDone,
			want:                true,
			wantElapsed:         300 * time.Millisecond,
			wantCalls:           []int32{4},
		},
		"later functions are asked only once earlier ones are synced": {
			informerSyncedAfter: []time.Duration{150 * time.Millisecond, 0},
			stopAfter:           neverDone,
			want:                true,
			wantElapsed:         200 * time.Millisecond,
			wantCalls:           []int32{3, 1},
		},
		"stop channel already closed": {
			informerSyncedAfter: []time.Duration{time.Second},
			stopAfter:           0,
			want:                false,
			wantCalls:           []int32{1},
		},
		"stop channel closed while waiting returns at once": {
			informerSyncedAfter: []time.Duration{time.Second},
			stopAfter:           150 * time.Millisecond,
			want:                false,
			wantElapsed:         150 * time.Millisecond,
			wantCalls:           []int32{2},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				calls := make([]atomic.Int32, len(tc.informerSyncedAfter))
				var syncs []InformerSynced
				if tc.withNil {
					syncs = append(syncs, nil)
				}
				for i, d := range tc.informerSyncedAfter {
					syncs = append(syncs, informerSyncedAfter(d, &calls[i]))
				}
				stop := make(chan struct{})
				switch tc.stopAfter {
				case 0:
					close(stop)
				case neverDone:
				default:
					timer := time.AfterFunc(tc.stopAfter, func() { close(stop) })
					defer timer.Stop()
				}

				start := time.Now()
				got := WaitForCacheSync(stop, syncs...)
				elapsed := time.Since(start)

				if got != tc.want {
					t.Errorf("WaitForCacheSync() = %v, want %v", got, tc.want)
				}
				if elapsed != tc.wantElapsed {
					t.Errorf("returned after %v, want %v", elapsed, tc.wantElapsed)
				}
				gotCalls := make([]int32, len(calls))
				for i := range calls {
					gotCalls[i] = calls[i].Load()
				}
				if diff := cmp.Diff(tc.wantCalls, gotCalls, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("calls per function (-want +got):\n%s", diff)
				}
			})
		})
	}
}

func TestWaitForNamedCacheSync_ReturnsWhetherSynced(t *testing.T) {
	tests := map[string]struct {
		synced InformerSynced
		stop   bool
		want   bool
	}{
		"synced":             {synced: func() bool { return true }, want: true},
		"stopped unsynced":   {synced: func() bool { return false }, stop: true, want: false},
		"stopped but synced": {synced: func() bool { return true }, stop: true, want: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			stop := make(chan struct{})
			if tc.stop {
				close(stop)
			}
			if got := WaitForNamedCacheSync("test-controller", stop, tc.synced); got != tc.want {
				t.Errorf("WaitForNamedCacheSync() = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestWaitForNamedCacheSyncWithContext_LogsStartAndOutcome(t *testing.T) {
	tests := map[string]struct {
		synced   bool
		canceled bool
		want     bool
		wantLogs []capturedLog
	}{
		"synced": {
			synced: true,
			want:   true,
			wantLogs: []capturedLog{
				{Type: ktesting.LogInfo, Message: "Waiting for caches to sync"},
				{Type: ktesting.LogInfo, Message: "Caches are synced"},
			},
		},
		"context canceled first": {
			canceled: true,
			want:     false,
			wantLogs: []capturedLog{
				{Type: ktesting.LogInfo, Message: "Waiting for caches to sync"},
				{Type: ktesting.LogError, Message: "Unable to sync caches"},
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			logger, logged := newCapturingLogger(t)
			ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
			defer cancel()
			if tc.canceled {
				cancel()
			}
			got := WaitForNamedCacheSyncWithContext(ctx, func() bool { return tc.synced })
			if got != tc.want {
				t.Errorf("WaitForNamedCacheSyncWithContext() = %v, want %v", got, tc.want)
			}
			if diff := cmp.Diff(tc.wantLogs, logged()); diff != "" {
				t.Errorf("logs (-want +got):\n%s", diff)
			}
		})
	}
}

// timedChecker is a DoneChecker whose channel closes after a delay on the
// (fake) clock.
type timedChecker struct {
	name string
	done chan struct{}
}

func (c *timedChecker) Name() string          { return c.name }
func (c *timedChecker) Done() <-chan struct{} { return c.done }

// checkerDoneAfter returns a checker that is done after d; 0 means already done,
// neverDone means neverDone.
func checkerDoneAfter(t *testing.T, name string, d time.Duration) *timedChecker {
	c := &timedChecker{name: name, done: make(chan struct{})}
	switch d {
	case 0:
		close(c.done)
	case neverDone:
	default:
		timer := time.AfterFunc(d, func() { close(c.done) })
		t.Cleanup(func() { timer.Stop() })
	}
	return c
}

func TestWaitFor_WaitsWithoutPollingAndLogsProgress(t *testing.T) {
	waiting := capturedLog{Type: ktesting.LogInfo, Message: "Waiting", Values: map[string]string{"for": "caches"}}
	doneWaiting := func(instance string) capturedLog {
		return capturedLog{Type: ktesting.LogInfo, Message: "Done waiting", Values: map[string]string{"for": "caches", "instance": instance}}
	}
	tests := map[string]struct {
		what        string
		checkers    map[string]time.Duration // name -> done after
		withNil     bool
		ctxTimeout  time.Duration // 0: none; -1: canceled before the call
		want        bool
		wantElapsed time.Duration
		wantLogs    []capturedLog
	}{
		"no checkers": {
			what:     "caches",
			want:     true,
			wantLogs: []capturedLog{waiting},
		},
		"nil checkers count as done": {
			what:     "caches",
			withNil:  true,
			want:     true,
			wantLogs: []capturedLog{waiting},
		},
		"all done already": {
			what:     "caches",
			checkers: map[string]time.Duration{"a": 0},
			want:     true,
			wantLogs: []capturedLog{waiting, doneWaiting("a")},
		},
		"returns when the last is done, logging each as it finishes": {
			what:        "caches",
			checkers:    map[string]time.Duration{"slow": 30 * time.Millisecond, "fast": 10 * time.Millisecond},
			want:        true,
			wantElapsed: 30 * time.Millisecond,
			wantLogs:    []capturedLog{waiting, doneWaiting("fast"), doneWaiting("slow")},
		},
		"context ends first: the unfinished are named, sorted": {
			what:        "caches",
			checkers:    map[string]time.Duration{"b": neverDone, "a": neverDone, "c": 10 * time.Millisecond},
			ctxTimeout:  20 * time.Millisecond,
			want:        false,
			wantElapsed: 20 * time.Millisecond,
			wantLogs: []capturedLog{waiting, doneWaiting("c"), {
				Type:    ktesting.LogInfo,
				Message: "Timed out waiting",
				Values:  map[string]string{"for": "caches", "cause": "context deadline exceeded", "instances": "[a b]"},
			}},
		},
		"context already canceled but everything done": {
			checkers:   map[string]time.Duration{"a": 0, "b": 0},
			ctxTimeout: -1,
			want:       true,
		},
		"context already canceled, one not done": {
			checkers:   map[string]time.Duration{"a": 0, "b": neverDone},
			ctxTimeout: -1,
			want:       false,
		},
		"empty what logs nothing": {
			checkers:    map[string]time.Duration{"a": 5 * time.Millisecond, "b": neverDone},
			ctxTimeout:  10 * time.Millisecond,
			want:        false,
			wantElapsed: 10 * time.Millisecond,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				logger, logged := newCapturingLogger(t)
				ctx := klog.NewContext(t.Context(), logger)
				switch {
				case tc.ctxTimeout < 0:
					canceled, cancel := context.WithCancel(ctx)
					cancel()
					ctx = canceled
				case tc.ctxTimeout > 0:
					withTimeout, cancel := context.WithTimeout(ctx, tc.ctxTimeout)
					defer cancel()
					ctx = withTimeout
				}
				var checkers []DoneChecker
				if tc.withNil {
					checkers = append(checkers, nil)
				}
				for name, d := range tc.checkers {
					checkers = append(checkers, checkerDoneAfter(t, name, d))
				}

				start := time.Now()
				got := WaitFor(ctx, tc.what, checkers...)
				elapsed := time.Since(start)

				if got != tc.want {
					t.Errorf("WaitFor() = %v, want %v", got, tc.want)
				}
				if elapsed != tc.wantElapsed {
					t.Errorf("returned after %v, want %v", elapsed, tc.wantElapsed)
				}
				if diff := cmp.Diff(tc.wantLogs, logged()); diff != "" {
					t.Errorf("logs (-want +got):\n%s", diff)
				}
			})
		})
	}
}

func TestWaitFor_ReportsTheCancelCause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logger, logged := newCapturingLogger(t)
		ctx, cancel := context.WithCancelCause(klog.NewContext(t.Context(), logger))
		time.AfterFunc(time.Second, func() { cancel(errors.New("controller shutting down")) })

		if WaitFor(ctx, "pods", checkerDoneAfter(t, "pod informer", neverDone)) {
			t.Fatal("WaitFor() = true, want false")
		}
		entries := logged()
		want := map[string]string{"for": "pods", "cause": "controller shutting down", "instances": "[pod informer]"}
		if diff := cmp.Diff(want, entries[len(entries)-1].Values); diff != "" {
			t.Errorf("last log values (-want +got):\n%s", diff)
		}
	})
}

func TestSyncResult_AsErrorNamesUnsyncedTypesAndWrapsTheCause(t *testing.T) {
	podType := reflect.TypeFor[*v1.Pod]()
	secretType := reflect.TypeFor[*v1.Secret]()
	nodeType := reflect.TypeFor[*v1.Node]()
	tests := map[string]struct {
		result  SyncResult
		wantErr string
		wantIs  error
	}{
		"all synced": {
			result: SyncResult{Synced: map[reflect.Type]bool{podType: true}},
		},
		"no error even with unsynced entries": {
			result: SyncResult{Synced: map[reflect.Type]bool{podType: false}},
		},
		"unsynced types are sorted": {
			result: SyncResult{
				Err:    context.DeadlineExceeded,
				Synced: map[reflect.Type]bool{secretType: false, podType: false, nodeType: true},
			},
			wantErr: "failed to sync all caches: *v1.Pod, *v1.Secret: context deadline exceeded",
			wantIs:  context.DeadlineExceeded,
		},
		"error without unsynced types": {
			result:  SyncResult{Err: context.Canceled, Synced: map[reflect.Type]bool{podType: true}},
			wantErr: "failed to sync all caches: : context canceled",
			wantIs:  context.Canceled,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := tc.result.AsError()
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if diff := cmp.Diff(tc.wantErr, gotErr); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			if tc.wantIs != nil && !errors.Is(err, tc.wantIs) {
				t.Errorf("errors.Is(%v, %v) = false, want true", err, tc.wantIs)
			}
		})
	}
}
