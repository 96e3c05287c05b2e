package cache

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/klog/v2/textlogger"
)

// logSite is one log line reduced to the source location it was attributed
// to (file base name and line) and its message.
type logSite struct {
	File    string
	Line    int
	Message string
}

// textLineHeader matches the start of a klog text line up to its message:
// severity and date, time, thread id, "file:line]" and the quoted message.
var textLineHeader = regexp.MustCompile(`^[IWEF]\d{4} [0-9:.]+ +\d+ ([^ :]+):(\d+)\] "((?:[^"\\]|\\.)*)"`)

// textSites parses klog text output into log sites. Continuation lines
// (multi-line values) are skipped.
func textSites(t *testing.T, out string) []logSite {
	t.Helper()
	var sites []logSite
	for _, line := range bytes.Split([]byte(out), []byte("\n")) {
		m := textLineHeader.FindSubmatch(line)
		if m == nil {
			continue
		}
		n, err := strconv.Atoi(string(m[2]))
		if err != nil {
			t.Fatalf("line number in %q: %v", line, err)
		}
		msg, err := strconv.Unquote(`"` + string(m[3]) + `"`)
		if err != nil {
			t.Fatalf("message in %q: %v", line, err)
		}
		sites = append(sites, logSite{File: string(m[1]), Line: n, Message: msg})
	}
	return sites
}

// siteRecorder is a logger whose lines can be read back as log sites.
type siteRecorder interface {
	logger() klog.Logger
	sites(t *testing.T) []logSite
}

// callDepthRecorder is klog's text logger writing to a buffer: a sink that
// finds the caller by counting frames (logr.CallDepthLogSink), as klog's
// own output does.
type callDepthRecorder struct {
	buf syncBuffer
	l   klog.Logger
}

func newCallDepthRecorder() *callDepthRecorder {
	r := &callDepthRecorder{}
	r.l = textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(&r.buf)))
	return r
}

func (r *callDepthRecorder) logger() klog.Logger          { return r.l }
func (r *callDepthRecorder) sites(t *testing.T) []logSite { return textSites(t, r.buf.String()) }

// syncBuffer is a bytes.Buffer safe for concurrent writers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// stackHelperRecorder is ktesting's logger over a ktesting.TL that places
// each line as testing.T places t.Log output: at the nearest caller that
// did not declare itself a helper. It stands for sinks that find the
// caller through helper marks (logr.CallStackHelperLogSink).
type stackHelperRecorder struct {
	l klog.Logger

	// mu guards helpers and lines.
	mu sync.Mutex
	// helpers holds the names of functions that called Helper.
	helpers map[string]bool
	lines   []logSite
}

func newStackHelperRecorder() *stackHelperRecorder {
	r := &stackHelperRecorder{helpers: map[string]bool{}}
	r.l = ktesting.NewLogger(r, ktesting.NewConfig())
	return r
}

func (r *stackHelperRecorder) logger() klog.Logger { return r.l }

func (r *stackHelperRecorder) sites(*testing.T) []logSite {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]logSite(nil), r.lines...)
}

// Helper marks the calling function as a helper.
func (r *stackHelperRecorder) Helper() {
	var pc [1]uintptr
	if runtime.Callers(2, pc[:]) == 0 {
		return
	}
	frame, _ := runtime.CallersFrames(pc[:]).Next()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.helpers[frame.Function] = true
}

// Log records the line at the first caller that is no helper. ktesting
// passes the header first and the message second.
func (r *stackHelperRecorder) Log(args ...interface{}) {
	var pcs [64]uintptr
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs[:])])
	r.mu.Lock()
	defer r.mu.Unlock()
	site := logSite{File: "?"}
	if len(args) > 1 {
		site.Message = fmt.Sprint(args[1])
	}
	for {
		frame, more := frames.Next()
		if !r.helpers[frame.Function] {
			site.File, site.Line = filepath.Base(frame.File), frame.Line
			break
		}
		if !more {
			break
		}
	}
	r.lines = append(r.lines, site)
}

// waitForHere calls WaitFor and returns its result and the line of the
// call, where WaitFor's log lines must be attributed.
func waitForHere(ctx context.Context, what string, checkers ...DoneChecker) (bool, int) {
	_, _, line, _ := runtime.Caller(0)
	return WaitFor(ctx, what, checkers...), line + 1
}

// Every line WaitFor logs names WaitFor's caller, on every way the wait
// can end, for both ways a sink can find the caller, as client-go's does.
func TestWaitFor_EveryLogLineNamesTheCaller(t *testing.T) {
	sinks := map[string]func() siteRecorder{
		"call-depth sink":   func() siteRecorder { return newCallDepthRecorder() },
		"stack-helper sink": func() siteRecorder { return newStackHelperRecorder() },
	}
	tests := map[string]struct {
		checkers []time.Duration // done after; 0: at once
		// end is how ctx ends: 0 never; -1 canceled before the call;
		// > 0 after that long, with cause when cause is set, else a
		// deadline.
		end          time.Duration
		cause        string
		wantDone     bool
		wantMessages []string
	}{
		"no checkers": {
			wantDone:     true,
			wantMessages: []string{"Waiting"},
		},
		"synced: done at once and later": {
			checkers:     []time.Duration{0, 5 * time.Second},
			wantDone:     true,
			wantMessages: []string{"Waiting", "Done waiting", "Done waiting"},
		},
		"timed out": {
			checkers:     []time.Duration{0, 5 * time.Second, neverDone},
			end:          time.Minute,
			wantMessages: []string{"Waiting", "Done waiting", "Done waiting", "Timed out waiting"},
		},
		"canceled before the call, some done": {
			checkers:     []time.Duration{10 * time.Second, neverDone, 0},
			end:          -1,
			wantMessages: []string{"Waiting", "Done waiting", "Timed out waiting"},
		},
		"canceled before the call, all done": {
			checkers:     []time.Duration{0, 0},
			end:          -1,
			wantDone:     true,
			wantMessages: []string{"Waiting", "Done waiting", "Done waiting"},
		},
		"canceled with a cause while waiting": {
			checkers:     []time.Duration{0, 10 * time.Second, neverDone},
			end:          5 * time.Second,
			cause:        "shutting down",
			wantMessages: []string{"Waiting", "Done waiting", "Timed out waiting"},
		},
	}
	for sinkName, newSink := range sinks {
		for name, tc := range tests {
			t.Run(sinkName+"/"+name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					rec := newSink()
					ctx := klog.NewContext(context.Background(), rec.logger())
					switch {
					case tc.end < 0:
						canceled, cancel := context.WithCancel(ctx)
						cancel()
						ctx = canceled
					case tc.end > 0 && tc.cause != "":
						withCause, cancel := context.WithCancelCause(ctx)
						defer cancel(nil)
						timer := time.AfterFunc(tc.end, func() { cancel(errors.New(tc.cause)) })
						defer timer.Stop()
						ctx = withCause
					case tc.end > 0:
						withTimeout, cancel := context.WithTimeout(ctx, tc.end)
						defer cancel()
						ctx = withTimeout
					}
					var checkers []DoneChecker
					for i, d := range tc.checkers {
						checkers = append(checkers, checkerDoneAfter(t, fmt.Sprint("c", i), d))
					}

					done, line := waitForHere(ctx, "caches", checkers...)

					if done != tc.wantDone {
						t.Errorf("WaitFor() = %v, want %v", done, tc.wantDone)
					}
					var want []logSite
					for _, msg := range tc.wantMessages {
						want = append(want, logSite{File: "sync_wait_log_test.go", Line: line, Message: msg})
					}
					if diff := cmp.Diff(want, rec.sites(t)); diff != "" {
						t.Errorf("log sites (-want +got):\n%s", diff)
					}
				})
			})
		}
	}
}

// The named cache-sync waits log from the library, not from their caller,
// as client-go's do: the lines name sync_wait.go, client-go's name its
// shared_informer.go. That includes "Unable to sync caches", which goes
// through utilruntime.HandleErrorWithContext.
func TestNamedCacheSyncWaits_LogLinesNameTheLibrary(t *testing.T) {
	synced := func() bool { return true }
	unsynced := func() bool { return false }
	tests := map[string]struct {
		// wait runs the wait with a context holding logger.
		wait         func(ctx context.Context) bool
		wantDone     bool
		wantMessages []string
	}{
		"with a context: synced": {
			wait:         func(ctx context.Context) bool { return WaitForNamedCacheSyncWithContext(ctx, synced) },
			wantDone:     true,
			wantMessages: []string{"Waiting for caches to sync", "Caches are synced"},
		},
		"with a context: canceled": {
			wait: func(ctx context.Context) bool {
				canceled, cancel := context.WithCancel(ctx)
				cancel()
				return WaitForNamedCacheSyncWithContext(canceled, unsynced)
			},
			wantMessages: []string{"Waiting for caches to sync", "Unable to sync caches"},
		},
		"with a name: synced": {
			wait:         func(context.Context) bool { return WaitForNamedCacheSync("c", nil, synced) },
			wantDone:     true,
			wantMessages: []string{"Waiting for caches to sync", "Caches are synced"},
		},
		"with a name: stopped": {
			wait:         func(context.Context) bool { return WaitForNamedCacheSync("c", closedChannel(), unsynced) },
			wantMessages: []string{"Waiting for caches to sync", "Unable to sync caches"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			rec := newCallDepthRecorder()
			// WaitForNamedCacheSync logs with klog.Background().
			defer klog.CaptureState().Restore()
			klog.SetLogger(rec.logger())

			done := tc.wait(klog.NewContext(context.Background(), rec.logger()))

			if done != tc.wantDone {
				t.Errorf("wait = %v, want %v", done, tc.wantDone)
			}
			var got []logSite
			for _, s := range rec.sites(t) {
				s.Line = 0 // the library's lines are not pinned
				got = append(got, s)
			}
			var want []logSite
			for _, msg := range tc.wantMessages {
				want = append(want, logSite{File: "sync_wait.go", Message: msg})
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("log sites (-want +got):\n%s", diff)
			}
		})
	}
}

// WaitForNamedCacheSync passes the controller's name as key and value of
// each call, as client-go's does, so that utilruntime.ErrorHandlers see it
// among their keysAndValues.
func TestWaitForNamedCacheSync_GivesTheNameToErrorHandlers(t *testing.T) {
	type handled struct {
		Message       string
		KeysAndValues []interface{}
	}
	var mu sync.Mutex
	var got []handled
	defer klog.CaptureState().Restore()
	klog.SetLogger(newCallDepthRecorder().logger()) // keeps the output quiet
	old := utilruntime.ErrorHandlers
	defer func() { utilruntime.ErrorHandlers = old }()
	utilruntime.ErrorHandlers = []utilruntime.ErrorHandler{func(_ context.Context, _ error, msg string, keysAndValues ...interface{}) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, handled{Message: msg, KeysAndValues: keysAndValues})
	}}

	if WaitForNamedCacheSync("pod-controller", closedChannel(), func() bool { return false }) {
		t.Fatal("WaitForNamedCacheSync() = true, want false")
	}
	want := []handled{{Message: "Unable to sync caches", KeysAndValues: []interface{}{"controller", "pod-controller"}}}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("error handlers saw (-want +got):\n%s", diff)
	}
}
