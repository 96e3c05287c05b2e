package cache

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// ctxKey tags the contexts tests pass, so a callee can tell which one it got.
type ctxKey struct{}

func taggedContext(tag string) context.Context {
	return context.WithValue(context.Background(), ctxKey{}, tag)
}

func contextTag(ctx context.Context) string {
	tag, _ := ctx.Value(ctxKey{}).(string)
	return tag
}

// recordingListWatch builds a ListWatch whose set functions append
// "name(ctx tag)" to calls.
func recordingListWatch(calls *[]string, set ...string) *ListWatch {
	lw := &ListWatch{}
	list := &v1.PodList{}
	w := watch.NewFake()
	for _, name := range set {
		switch name {
		case "ListFunc":
			lw.ListFunc = func(metav1.ListOptions) (runtime.Object, error) {
				*calls = append(*calls, "ListFunc")
				return list, nil
			}
		case "ListWithContextFunc":
			lw.ListWithContextFunc = func(ctx context.Context, _ metav1.ListOptions) (runtime.Object, error) {
				*calls = append(*calls, "ListWithContextFunc("+contextTag(ctx)+")")
				return list, nil
			}
		case "WatchFunc":
			lw.WatchFunc = func(metav1.ListOptions) (watch.Interface, error) {
				*calls = append(*calls, "WatchFunc")
				return w, nil
			}
		case "WatchFuncWithContext":
			lw.WatchFuncWithContext = func(ctx context.Context, _ metav1.ListOptions) (watch.Interface, error) {
				*calls = append(*calls, "WatchFuncWithContext("+contextTag(ctx)+")")
				return w, nil
			}
		}
	}
	return lw
}

// callAll calls the four methods of lw with a context tagged "caller" and
// returns, per call, "ok", the error text, or "panic" when the call panicked.
func callAll(lw *ListWatch) []string {
	ctx := taggedContext("caller")
	calls := []func() error{
		func() error { _, err := lw.List(metav1.ListOptions{}); return err },
		func() error { _, err := lw.ListWithContext(ctx, metav1.ListOptions{}); return err },
		func() error { _, err := lw.Watch(metav1.ListOptions{}); return err },
		func() error { _, err := lw.WatchWithContext(ctx, metav1.ListOptions{}); return err },
	}
	out := make([]string, 0, len(calls))
	for _, call := range calls {
		out = append(out, outcomeOf(call))
	}
	return out
}

// outcomeOf runs call and names what came of it.
func outcomeOf(call func() error) (outcome string) {
	defer func() {
		if recover() != nil {
			outcome = "panic"
		}
	}()
	if err := call(); err != nil {
		return err.Error()
	}
	return "ok"
}

func TestListWatch_MethodsPreferTheirOwnFormAndFallBack(t *testing.T) {
	tests := map[string]struct {
		set         []string
		wantCalls   []string
		wantResults []string
	}{
		"all four set: each method uses its own form": {
			set:         []string{"ListFunc", "ListWithContextFunc", "WatchFunc", "WatchFuncWithContext"},
			wantCalls:   []string{"ListFunc", "ListWithContextFunc(caller)", "WatchFunc", "WatchFuncWithContext(caller)"},
			wantResults: []string{"ok", "ok", "ok", "ok"},
		},
		"only plain forms: context methods fall back and drop the context": {
			set:         []string{"ListFunc", "WatchFunc"},
			wantCalls:   []string{"ListFunc", "ListFunc", "WatchFunc", "WatchFunc"},
			wantResults: []string{"ok", "ok", "ok", "ok"},
		},
		"only context forms: plain methods use a background context": {
			set:         []string{"ListWithContextFunc", "WatchFuncWithContext"},
			wantCalls:   []string{"ListWithContextFunc()", "ListWithContextFunc(caller)", "WatchFuncWithContext()", "WatchFuncWithContext(caller)"},
			wantResults: []string{"ok", "ok", "ok", "ok"},
		},
		"mixed forms": {
			set:         []string{"ListFunc", "WatchFuncWithContext"},
			wantCalls:   []string{"ListFunc", "ListFunc", "WatchFuncWithContext()", "WatchFuncWithContext(caller)"},
			wantResults: []string{"ok", "ok", "ok", "ok"},
		},
		"nothing set: every method panics, as client-go's do": {
			wantResults: []string{"panic", "panic", "panic", "panic"},
		},
		"only watch set": {
			set:         []string{"WatchFunc"},
			wantCalls:   []string{"WatchFunc", "WatchFunc"},
			wantResults: []string{"panic", "panic", "ok", "ok"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var calls []string
			got := callAll(recordingListWatch(&calls, tc.set...))
			if diff := cmp.Diff(tc.wantResults, got); diff != "" {
				t.Errorf("results (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantCalls, calls); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
		})
	}
}

func TestListWatch_NilReceiverPanics(t *testing.T) {
	var lw *ListWatch
	got := callAll(lw)
	want := []string{"panic", "panic", "panic", "panic"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestListWatch_OptionsAndResultsPassThrough(t *testing.T) {
	wantList := &v1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "7"}}
	wantWatch := watch.NewFake()
	wantErr := errors.New("boom")
	opts := metav1.ListOptions{LabelSelector: "a=b", ResourceVersion: "5", Limit: 3}
	var seen []metav1.ListOptions
	lw := &ListWatch{
		ListWithContextFunc: func(_ context.Context, o metav1.ListOptions) (runtime.Object, error) {
			seen = append(seen, o)
			return wantList, wantErr
		},
		WatchFuncWithContext: func(_ context.Context, o metav1.ListOptions) (watch.Interface, error) {
			seen = append(seen, o)
			return wantWatch, wantErr
		},
	}
	gotList, err := lw.List(opts)
	if gotList != wantList || err != wantErr {
		t.Errorf("List = %v, %v; want the function's own results", gotList, err)
	}
	gotWatch, err := lw.Watch(opts)
	if gotWatch != wantWatch || err != wantErr {
		t.Errorf("Watch = %v, %v; want the function's own results", gotWatch, err)
	}
	if diff := cmp.Diff([]metav1.ListOptions{opts, opts}, seen); diff != "" {
		t.Errorf("options seen (-want +got):\n%s", diff)
	}
}

// Test doubles for the adapters: each implements exactly what its name says.
type (
	plainLister  struct{ calls *[]string }
	plainWatcher struct{ calls *[]string }
	plainLW      struct {
		plainLister
		plainWatcher
	}
	ctxLister struct {
		plainLister
	}
	ctxWatcher struct {
		plainWatcher
	}
	// reportingLW is a legacy ListerWatcher that answers the probe.
	reportingLW struct {
		plainLW
		lacks bool
	}
	// halfCtxLW has the context form of List only.
	halfCtxLW struct {
		ctxLister
		plainWatcher
	}
)

func (l plainLister) List(metav1.ListOptions) (runtime.Object, error) {
	*l.calls = append(*l.calls, "List")
	return &v1.PodList{}, nil
}

func (w plainWatcher) Watch(metav1.ListOptions) (watch.Interface, error) {
	*w.calls = append(*w.calls, "Watch")
	return watch.NewFake(), nil
}

func (l ctxLister) ListWithContext(ctx context.Context, _ metav1.ListOptions) (runtime.Object, error) {
	*l.calls = append(*l.calls, "ListWithContext("+contextTag(ctx)+")")
	return &v1.PodList{}, nil
}

func (w ctxWatcher) WatchWithContext(ctx context.Context, _ metav1.ListOptions) (watch.Interface, error) {
	*w.calls = append(*w.calls, "WatchWithContext("+contextTag(ctx)+")")
	return watch.NewFake(), nil
}

func (r reportingLW) IsWatchListSemanticsUnSupported() bool { return r.lacks }

func TestListWatch_ToListerWithContext(t *testing.T) {
	tests := map[string]struct {
		lister      func(calls *[]string) Lister
		passThrough bool
		wantCalls   []string
	}{
		"legacy lister is adapted": {
			lister:    func(c *[]string) Lister { return plainLister{c} },
			wantCalls: []string{"List"},
		},
		"context lister is returned as is": {
			lister:      func(c *[]string) Lister { return ctxLister{plainLister{c}} },
			passThrough: true,
			wantCalls:   []string{"ListWithContext(caller)"},
		},
		"ListWatch is returned as is": {
			lister: func(c *[]string) Lister {
				return recordingListWatch(c, "ListFunc", "ListWithContextFunc")
			},
			passThrough: true,
			wantCalls:   []string{"ListWithContextFunc(caller)"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var calls []string
			l := tc.lister(&calls)
			got := ToListerWithContext(l)
			if same := any(got) == any(l); same != tc.passThrough {
				t.Errorf("returned the argument itself = %v, want %v", same, tc.passThrough)
			}
			if _, err := got.ListWithContext(taggedContext("caller"), metav1.ListOptions{}); err != nil {
				t.Fatalf("ListWithContext: %v", err)
			}
			if diff := cmp.Diff(tc.wantCalls, calls); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
		})
	}
}

func TestListWatch_ToWatcherWithContext(t *testing.T) {
	tests := map[string]struct {
		watcher     func(calls *[]string) Watcher
		passThrough bool
		wantCalls   []string
	}{
		"legacy watcher is adapted": {
			watcher:   func(c *[]string) Watcher { return plainWatcher{c} },
			wantCalls: []string{"Watch"},
		},
		"context watcher is returned as is": {
			watcher:     func(c *[]string) Watcher { return ctxWatcher{plainWatcher{c}} },
			passThrough: true,
			wantCalls:   []string{"WatchWithContext(caller)"},
		},
		"ListWatch is returned as is": {
			watcher: func(c *[]string) Watcher {
				return recordingListWatch(c, "WatchFunc", "WatchFuncWithContext")
			},
			passThrough: true,
			wantCalls:   []string{"WatchFuncWithContext(caller)"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var calls []string
			w := tc.watcher(&calls)
			got := ToWatcherWithContext(w)
			if same := any(got) == any(w); same != tc.passThrough {
				t.Errorf("returned the argument itself = %v, want %v", same, tc.passThrough)
			}
			if _, err := got.WatchWithContext(taggedContext("caller"), metav1.ListOptions{}); err != nil {
				t.Fatalf("WatchWithContext: %v", err)
			}
			if diff := cmp.Diff(tc.wantCalls, calls); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
		})
	}
}

func TestListWatch_ToListerWatcherWithContext(t *testing.T) {
	tests := map[string]struct {
		lw          func(calls *[]string) ListerWatcher
		passThrough bool
		wantCalls   []string
		wantLacks   bool
	}{
		"legacy pair is adapted": {
			lw:        func(c *[]string) ListerWatcher { return plainLW{plainLister{c}, plainWatcher{c}} },
			wantCalls: []string{"List", "Watch"},
		},
		"half context-aware: the context half is kept": {
			lw: func(c *[]string) ListerWatcher {
				return halfCtxLW{ctxLister{plainLister{c}}, plainWatcher{c}}
			},
			wantCalls: []string{"ListWithContext(caller)", "Watch"},
		},
		"ListWatch is returned as is": {
			lw: func(c *[]string) ListerWatcher {
				return recordingListWatch(c, "ListFunc", "ListWithContextFunc", "WatchFunc", "WatchFuncWithContext")
			},
			passThrough: true,
			wantCalls:   []string{"ListWithContextFunc(caller)", "WatchFuncWithContext(caller)"},
		},
		"adapter keeps a 'cannot stream lists' answer": {
			lw: func(c *[]string) ListerWatcher {
				return reportingLW{plainLW{plainLister{c}, plainWatcher{c}}, true}
			},
			wantCalls: []string{"List", "Watch"},
			wantLacks: true,
		},
		"adapter keeps a 'can stream lists' answer": {
			lw: func(c *[]string) ListerWatcher {
				return reportingLW{plainLW{plainLister{c}, plainWatcher{c}}, false}
			},
			wantCalls: []string{"List", "Watch"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var calls []string
			lw := tc.lw(&calls)
			got := ToListerWatcherWithContext(lw)
			if same := any(got) == any(lw); same != tc.passThrough {
				t.Errorf("returned the argument itself = %v, want %v", same, tc.passThrough)
			}
			ctx := taggedContext("caller")
			if _, err := got.ListWithContext(ctx, metav1.ListOptions{}); err != nil {
				t.Fatalf("ListWithContext: %v", err)
			}
			if _, err := got.WatchWithContext(ctx, metav1.ListOptions{}); err != nil {
				t.Fatalf("WatchWithContext: %v", err)
			}
			if diff := cmp.Diff(tc.wantCalls, calls); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
			if lacks := lacksWatchListSemantics(got); lacks != tc.wantLacks {
				t.Errorf("lacksWatchListSemantics = %v, want %v", lacks, tc.wantLacks)
			}
		})
	}
}

// As in client-go, the adapters of a nil Lister or Watcher are built, and
// their calls panic.
func TestListWatch_AdaptersOfNilPanic(t *testing.T) {
	ctx := context.Background()
	lw := ToListerWatcherWithContext(nil)
	calls := map[string]func() error{
		"ToListerWithContext": func() error {
			_, err := ToListerWithContext(nil).ListWithContext(ctx, metav1.ListOptions{})
			return err
		},
		"ToWatcherWithContext": func() error {
			_, err := ToWatcherWithContext(nil).WatchWithContext(ctx, metav1.ListOptions{})
			return err
		},
		"ToListerWatcherWithContext list": func() error {
			_, err := lw.ListWithContext(ctx, metav1.ListOptions{})
			return err
		},
		"ToListerWatcherWithContext watch": func() error {
			_, err := lw.WatchWithContext(ctx, metav1.ListOptions{})
			return err
		},
	}
	for name, call := range calls {
		if got := outcomeOf(call); got != "panic" {
			t.Errorf("%s: %s, want a panic", name, got)
		}
	}
}

// probeReporter is a client that answers the watch-list capability probe.
type probeReporter bool

func (p probeReporter) IsWatchListSemanticsUnSupported() bool { return bool(p) }

func TestListWatch_ToListWatcherWithWatchListSemantics(t *testing.T) {
	tests := map[string]struct {
		client    any
		wantLacks bool
	}{
		"nil client":                     {client: nil},
		"client without the probe":       {client: struct{}{}},
		"client that can stream lists":   {client: probeReporter(false)},
		"client that cannot":             {client: probeReporter(true), wantLacks: true},
		"pointer to a reporting client":  {client: ptrTo(probeReporter(true)), wantLacks: true},
		"a ListWatch is not a reporter":  {client: &ListWatch{}},
		"a wrapped client that cannot":   {client: ToListWatcherWithWatchListSemantics(&ListWatch{}, probeReporter(true)), wantLacks: true},
		"a wrapped client that can":      {client: ToListWatcherWithWatchListSemantics(&ListWatch{}, probeReporter(false))},
		"legacy ListerWatcher reporting": {client: reportingLW{lacks: true}, wantLacks: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var calls []string
			inner := recordingListWatch(&calls, "ListFunc", "ListWithContextFunc", "WatchFunc", "WatchFuncWithContext")
			got := ToListWatcherWithWatchListSemantics(inner, tc.client)
			if lacks := lacksWatchListSemantics(got); lacks != tc.wantLacks {
				t.Errorf("lacksWatchListSemantics = %v, want %v", lacks, tc.wantLacks)
			}
			// The wrapper must keep every method of the ListWatch, the context
			// forms included, so ToListerWatcherWithContext passes it through.
			lwc := ToListerWatcherWithContext(got)
			if any(lwc) != any(got) {
				t.Errorf("ToListerWatcherWithContext adapted the wrapper instead of passing it through")
			}
			ctx := taggedContext("caller")
			_, _ = got.List(metav1.ListOptions{})
			_, _ = got.Watch(metav1.ListOptions{})
			_, _ = lwc.ListWithContext(ctx, metav1.ListOptions{})
			_, _ = lwc.WatchWithContext(ctx, metav1.ListOptions{})
			want := []string{"ListFunc", "WatchFunc", "ListWithContextFunc(caller)", "WatchFuncWithContext(caller)"}
			if diff := cmp.Diff(want, calls); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
		})
	}
}

func ptrTo[T any](v T) *T { return &v }
