package cache

import (
	"context"
	"errors"
	"io"
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	framework "github.com/kcache/cache/testing"
)

// fidelityStoppedInformer returns an informer that ran and stopped.
func fidelityStoppedInformer(t *testing.T) SharedIndexInformer {
	t.Helper()
	src := framework.NewFakeControllerSource()
	t.Cleanup(src.Shutdown)
	inf := NewSharedIndexInformer(src, &v1.Pod{}, 0, Indexers{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		inf.RunWithContext(ctx)
	}()
	cancel()
	<-done
	return inf
}

// fidelityStartedInformer returns an informer that runs, and has synced,
// until the test ends.
func fidelityStartedInformer(t *testing.T) SharedIndexInformer {
	t.Helper()
	src := framework.NewFakeControllerSource()
	inf := NewSharedIndexInformer(src, &v1.Pod{}, 0, Indexers{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		inf.RunWithContext(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		src.Shutdown()
	})
	if !WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("the informer did not sync")
	}
	return inf
}

// fidelityForeignHandle is a registration no informer handed out.
type fidelityForeignHandle struct{}

func (fidelityForeignHandle) HasSynced() bool               { return true }
func (fidelityForeignHandle) HasSyncedChecker() DoneChecker { return nil }

// TestErrorTexts pins, text for text, the errors a caller of client-go's
// tools/cache v0.37.2 gets, so that code matching on them keeps working.
func TestErrorTexts(t *testing.T) {
	namedPod := &v1.Pod{}
	namedPod.Namespace, namedPod.Name = "ns", "a"
	indexer := func() Indexer {
		return NewIndexer(MetaNamespaceKeyFunc, Indexers{NamespaceIndex: MetaNamespaceIndexFunc})
	}
	tests := []struct {
		name string
		err  func(t *testing.T) error
		want string
		// is, when set, must be found by errors.Is.
		is error
	}{
		{"KeyError", func(*testing.T) error { return KeyError{Obj: "x", Err: io.EOF} },
			"couldn't create key for object x: EOF", io.EOF},
		{"store Add without metadata", func(*testing.T) error { return NewStore(MetaNamespaceKeyFunc).Add("x") },
			"couldn't create key for object x: object has no meta: object does not implement the Object interfaces", nil},
		{"store transform error", func(*testing.T) error {
			return NewStore(MetaNamespaceKeyFunc, WithTransformer(func(interface{}) (interface{}, error) { return nil, io.EOF })).Add(namedPod)
		}, "transforming: EOF", io.EOF},
		{"TransactionError", func(*testing.T) error {
			return &TransactionError{SuccessfulIndices: []int{0}, TotalTransactions: 3, Errors: []error{io.EOF, io.ErrUnexpectedEOF}}
		}, "failed to execute (2/3) transactions failed due to: [EOF unexpected EOF]", nil},
		{"Index of an unknown index", func(*testing.T) error { _, err := indexer().Index("nope", namedPod); return err },
			"Index with name nope does not exist", nil},
		{"ByIndex of an unknown index", func(*testing.T) error { _, err := indexer().ByIndex("nope", "v"); return err },
			"Index with name nope does not exist", nil},
		{"IndexKeys of an unknown index", func(*testing.T) error { _, err := indexer().IndexKeys("nope", "v"); return err },
			"Index with name nope does not exist", nil},
		{"Index whose function fails returns the function's error", func(*testing.T) error {
			s := NewIndexer(MetaNamespaceKeyFunc, Indexers{"f": func(interface{}) ([]string, error) { return nil, io.EOF }})
			_, err := s.Index("f", namedPod)
			return err
		}, "EOF", io.EOF},
		{"AddIndexers with a taken name", func(*testing.T) error {
			return indexer().AddIndexers(Indexers{NamespaceIndex: MetaNamespaceIndexFunc, "other": MetaNamespaceIndexFunc})
		}, "indexer conflict: map[namespace:{}]", nil},
		{"MetaNamespaceIndexFunc without metadata", func(*testing.T) error { _, err := MetaNamespaceIndexFunc("x"); return err },
			"object has no meta: object does not implement the Object interfaces", nil},
		{"ObjectToName without metadata", func(*testing.T) error { _, err := ObjectToName("x"); return err },
			"object has no meta: object does not implement the Object interfaces", nil},
		{"SplitMetaNamespaceKey", func(*testing.T) error { _, _, err := SplitMetaNamespaceKey("a/b/c"); return err },
			`unexpected key format: "a/b/c"`, nil},
		{"IndexFuncToKeyFuncAdapter with two values", func(*testing.T) error {
			_, err := IndexFuncToKeyFuncAdapter(func(interface{}) ([]string, error) { return []string{"a", "b"}, nil })(namedPod)
			return err
		}, "too many keys: [a b]", nil},
		{"IndexFuncToKeyFuncAdapter with none", func(*testing.T) error {
			_, err := IndexFuncToKeyFuncAdapter(func(interface{}) ([]string, error) { return nil, nil })(namedPod)
			return err
		}, "unexpected empty indexKeys", nil},
		{"ErrFIFOClosed", func(*testing.T) error { return ErrFIFOClosed }, "DeltaFIFO: manipulating with closed queue", nil},
		{"DeltaFIFO KeyOf of empty Deltas", func(*testing.T) error {
			_, err := NewDeltaFIFOWithOptions(DeltaFIFOOptions{}).KeyOf(Deltas{})
			return err
		}, "couldn't create key for object []: 0 length Deltas object; can't get key", ErrZeroLengthDeltasObject},
		{"DeltaFIFO Add without metadata", func(*testing.T) error { return NewDeltaFIFOWithOptions(DeltaFIFOOptions{}).Add("x") },
			"couldn't create key for object x: object has no meta: object does not implement the Object interfaces", nil},
		{"DeltaFIFO transform error is returned as it is", func(*testing.T) error {
			f := NewDeltaFIFOWithOptions(DeltaFIFOOptions{Transformer: func(interface{}) (interface{}, error) { return nil, io.EOF }})
			return f.Add(namedPod)
		}, "EOF", io.EOF},
		{"RealFIFO transform error is returned as it is", func(*testing.T) error {
			f := NewRealFIFOWithOptions(RealFIFOOptions{KnownObjects: newFakeKnown(), Transformer: func(interface{}) (interface{}, error) { return nil, io.EOF }})
			return f.Add(namedPod)
		}, "EOF", io.EOF},
		{"FIFO Add without metadata", func(*testing.T) error { return NewFIFO(MetaNamespaceKeyFunc).Add("x") },
			"couldn't create key for object x: object has no meta: object does not implement the Object interfaces", nil},
		{"Heap Add once closed", func(*testing.T) error {
			h := NewHeap(MetaNamespaceKeyFunc, func(a, b interface{}) bool { return false })
			h.Close()
			return h.Add(namedPod)
		}, "heap is closed", nil},
		{"Heap Delete of an absent object", func(*testing.T) error {
			return NewHeap(MetaNamespaceKeyFunc, func(a, b interface{}) bool { return false }).Delete(namedPod)
		}, "object not found", nil},
		{"informer name empty", func(*testing.T) error { _, err := NewInformerName(""); return err },
			"informer name cannot be empty", nil},
		{"informer name taken", func(t *testing.T) error {
			n, err := NewInformerName("fidelity-taken")
			if err != nil {
				t.Fatal(err)
			}
			defer n.Release()
			_, err = NewInformerName("fidelity-taken")
			return err
		}, `informer name "fidelity-taken" is already registered`, nil},
		{"mutation cache ByIndex without an indexer", func(*testing.T) error {
			_, err := NewIntegerResourceVersionMutationCache(klog.Background(), NewStore(MetaNamespaceKeyFunc), nil, 0, false).ByIndex("i", "v")
			return err
		}, "no indexer has been provided to the mutation cache", nil},
		{"VeryShortWatchError", func(*testing.T) error { return &VeryShortWatchError{Name: "r"} },
			"very short watch: r: Unexpected watch close - watch lasted less than a second and no items received", nil},
		{"SyncResult.AsError", func(*testing.T) error {
			return SyncResult{Err: context.Canceled, Synced: map[reflect.Type]bool{reflect.TypeFor[*v1.Pod](): false, reflect.TypeFor[*v1.Secret](): true}}.AsError()
		}, "failed to sync all caches: *v1.Pod: context canceled", context.Canceled},
		{"SetTransform after start", func(t *testing.T) error {
			return fidelityStartedInformer(t).SetTransform(func(o interface{}) (interface{}, error) { return o, nil })
		}, "informer has already started", nil},
		{"SetWatchErrorHandler after start", func(t *testing.T) error {
			return fidelityStartedInformer(t).SetWatchErrorHandler(func(*Reflector, error) {})
		}, "informer has already started", nil},
		{"AddIndexers after stop", func(t *testing.T) error {
			return fidelityStoppedInformer(t).AddIndexers(Indexers{"x": MetaNamespaceIndexFunc})
		}, "indexer was not added because it has stopped already", nil},
		{"AddEventHandler after stop", func(t *testing.T) error {
			_, err := fidelityStoppedInformer(t).AddEventHandler(ResourceEventHandlerFuncs{})
			return err
		}, "handler {<nil> <nil> <nil>} was not added to shared informer because it has stopped already", nil},
		{"RemoveEventHandler of a foreign handle", func(t *testing.T) error {
			return fidelityStartedInformer(t).RemoveEventHandler(fidelityForeignHandle{})
		}, "invalid key type {}", nil},
		{"ShutDownEventHandler of a foreign handle", func(t *testing.T) error {
			return ShutDownEventHandler(fidelityStartedInformer(t), fidelityForeignHandle{})
		}, "invalid key type {}", nil},
		{"AddTypedEventHandler with two options", func(t *testing.T) error {
			_, err := NewTypedSharedIndexInformer[*v1.Pod](fidelityStartedInformer(t)).AddTypedEventHandler(TypedResourceEventHandlerFuncs[*v1.Pod]{}, HandlerOptions{}, HandlerOptions{})
			return err
		}, "at most one HandlerOptions may be passed, got 2", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.err(t)
			if got := errText(err); got != tc.want {
				t.Errorf("error text:\n got %q\nwant %q", got, tc.want)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("errors.Is(%v, %v) = false, want true", err, tc.is)
			}
		})
	}
}
