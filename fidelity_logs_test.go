package cache

import (
	"context"
	"io"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	framework "github.com/kcache/cache/testing"
)

// fidelityLine is a log call as client-go's would be compared: its level,
// message and the names of its keys, in order.
type fidelityLine struct {
	Error     bool
	Verbosity int
	Message   string
	Keys      []string
}

// fidelityLogger returns a logger at verbosity 10 that buffers every call,
// and a function returning the calls so far whose message is in messages.
func fidelityLogger(t *testing.T) (klog.Logger, func(messages ...string) []fidelityLine) {
	t.Helper()
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true), ktesting.Verbosity(10)))
	underlier, ok := logger.GetSink().(ktesting.Underlier)
	if !ok {
		t.Fatalf("ktesting logger sink %T has no buffer", logger.GetSink())
	}
	return logger, func(messages ...string) []fidelityLine {
		var lines []fidelityLine
		for _, e := range underlier.GetBuffer().Data() {
			if !slices.Contains(messages, e.Message) {
				continue
			}
			l := fidelityLine{Error: e.Type == ktesting.LogError, Verbosity: e.Verbosity, Message: e.Message}
			for i := 0; i < len(e.ParameterKVList); i += 2 {
				l.Keys = append(l.Keys, e.ParameterKVList[i].(string))
			}
			lines = append(lines, l)
		}
		return lines
	}
}

// TestLogLines pins the level, message and keys of log lines a user of
// client-go v0.37.2 sees, for the same situations.
func TestLogLines(t *testing.T) {
	expired := apierrors.NewResourceExpired("too old")
	tests := []struct {
		name string
		run  func(t *testing.T, logger klog.Logger)
		want []fidelityLine
	}{
		{
			name: "watch error handler: expired resource version",
			run: func(t *testing.T, logger klog.Logger) {
				DefaultWatchErrorHandler(klog.NewContext(context.Background(), logger), &Reflector{name: "r"}, expired)
			},
			want: []fidelityLine{{Verbosity: 4, Message: "Watch closed", Keys: []string{"reflector", "type", "err"}}},
		},
		{
			name: "watch error handler: unexpected EOF",
			run: func(t *testing.T, logger klog.Logger) {
				DefaultWatchErrorHandler(klog.NewContext(context.Background(), logger), &Reflector{name: "r"}, io.ErrUnexpectedEOF)
			},
			want: []fidelityLine{{Verbosity: 1, Message: "Watch closed with unexpected EOF", Keys: []string{"reflector", "type", "err"}}},
		},
		{
			name: "watch error handler: anything else",
			run: func(t *testing.T, logger klog.Logger) {
				DefaultWatchErrorHandler(klog.NewContext(context.Background(), logger), &Reflector{name: "r"}, apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "x"))
			},
			want: []fidelityLine{{Error: true, Message: "Failed to watch", Keys: []string{"reflector", "type"}}},
		},
		{
			name: "named cache sync wait",
			run: func(t *testing.T, logger klog.Logger) {
				WaitForNamedCacheSyncWithContext(klog.NewContext(context.Background(), logger), func() bool { return true })
			},
			want: []fidelityLine{{Message: "Waiting for caches to sync"}, {Message: "Caches are synced"}},
		},
		{
			name: "named cache sync wait without a context",
			run: func(t *testing.T, logger klog.Logger) {
				defer klog.CaptureState().Restore()
				klog.SetLogger(logger)
				WaitForNamedCacheSync("c", nil, func() bool { return true })
			},
			want: []fidelityLine{
				{Message: "Waiting for caches to sync", Keys: []string{"controller"}},
				{Message: "Caches are synced", Keys: []string{"controller"}},
			},
		},
		{
			name: "resync period below the minimum",
			run: func(t *testing.T, logger klog.Logger) {
				src := framework.NewFakeControllerSource()
				defer src.Shutdown()
				inf := NewSharedIndexInformer(src, &v1.Pod{}, time.Minute, Indexers{})
				period := time.Millisecond
				if _, err := inf.AddEventHandlerWithOptions(ResourceEventHandlerFuncs{}, HandlerOptions{Logger: &logger, ResyncPeriod: &period}); err != nil {
					t.Fatal(err)
				}
			},
			want: []fidelityLine{{Message: "Warning: resync period is too small. Changing it to the minimum allowed value", Keys: []string{"resyncPeriod", "minimumResyncPeriod"}}},
		},
		{
			name: "resync period on an informer that does not resync",
			run: func(t *testing.T, logger klog.Logger) {
				src := framework.NewFakeControllerSource()
				defer src.Shutdown()
				inf := NewSharedIndexInformer(src, &v1.Pod{}, 0, Indexers{})
				period := time.Hour
				if _, err := inf.AddEventHandlerWithOptions(ResourceEventHandlerFuncs{}, HandlerOptions{Logger: &logger, ResyncPeriod: &period}); err != nil {
					t.Fatal(err)
				}
			},
			want: []fidelityLine{{Message: "Warning: the specified resyncPeriod is invalid because this shared informer doesn't support resyncing", Keys: []string{"desired"}}},
		},
		{
			name: "second Run",
			run: func(t *testing.T, logger klog.Logger) {
				src := framework.NewFakeControllerSource()
				defer src.Shutdown()
				inf := NewSharedIndexInformer(src, &v1.Pod{}, 0, Indexers{})
				ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
				done := make(chan struct{})
				go func() {
					defer close(done)
					inf.RunWithContext(ctx)
				}()
				WaitForCacheSync(ctx.Done(), inf.HasSynced)
				inf.RunWithContext(ctx)
				cancel()
				<-done
			},
			want: []fidelityLine{{Message: "Warning: the sharedIndexInformer has started, run more than once is not allowed"}},
		},
		{
			name: "reflector start, list and stop",
			run: func(t *testing.T, logger klog.Logger) {
				src := framework.NewFakeControllerSource()
				defer src.Shutdown()
				store := &replaceSignalStore{Store: NewStore(MetaNamespaceKeyFunc), replaced: make(chan struct{})}
				r := NewReflector(pagedOnly{src}, &v1.Pod{}, store, 0)
				ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
				done := make(chan struct{})
				go func() {
					defer close(done)
					r.RunWithContext(ctx)
				}()
				// The reflector logs "Caches populated" after the Replace on
				// its way back, whether or not the context is canceled by then.
				<-store.replaced
				cancel()
				<-done
			},
			want: []fidelityLine{
				{Verbosity: 3, Message: "Starting reflector", Keys: []string{"type", "resyncPeriod", "reflector"}},
				{Verbosity: 3, Message: "Listing and watching", Keys: []string{"type", "reflector"}},
				{Verbosity: 2, Message: "Caches populated", Keys: []string{"type", "reflector"}},
				{Verbosity: 3, Message: "Stopping reflector", Keys: []string{"type", "resyncPeriod", "reflector"}},
			},
		},
		{
			name: "handler panic with the keep-serving opt-in",
			run: func(t *testing.T, logger klog.Logger) {
				keepServing(t)
				src := framework.NewFakeControllerSource()
				defer src.Shutdown()
				src.Add(testPod("ns", "a", ""))
				inf := NewSharedIndexInformer(src, &v1.Pod{}, 0, Indexers{})
				panicked := make(chan struct{})
				handler := ResourceEventHandlerFuncs{AddFunc: func(interface{}) {
					close(panicked)
					panic("handler bug")
				}}
				if _, err := inf.AddEventHandlerWithOptions(handler, HandlerOptions{Logger: &logger}); err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan struct{})
				go func() {
					defer close(done)
					inf.RunWithContext(ctx)
				}()
				<-panicked
				cancel()
				<-done
			},
			want: []fidelityLine{{Error: true, Message: "Observed a panic", Keys: []string{"panic", "stacktrace"}}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			logger, lines := fidelityLogger(t)
			tc.run(t, logger)
			var messages []string
			for _, l := range tc.want {
				messages = append(messages, l.Message)
			}
			if diff := cmp.Diff(tc.want, lines(messages...)); diff != "" {
				t.Errorf("log lines (-want +got):\n%s", diff)
			}
		})
	}
}

// replaceSignalStore is a Store that closes replaced after its first Replace.
type replaceSignalStore struct {
	Store
	once     sync.Once
	replaced chan struct{}
}

func (s *replaceSignalStore) Replace(list []interface{}, rv string) error {
	defer s.once.Do(func() { close(s.replaced) })
	return s.Store.Replace(list, rv)
}
