package cache

import (
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clocktesting "k8s.io/utils/clock/testing"
)

// changesOf drains f and returns the change each Pop handed out.
func changesOf(t *testing.T, f *RealFIFO) []Delta {
	t.Helper()
	var out []Delta
	for _, obj := range drainObjs(t, f) {
		ds := obj.(Deltas)
		if len(ds) != 1 {
			t.Fatalf("Pop handed out %d changes, want 1", len(ds))
		}
		out = append(out, ds[0])
	}
	return out
}

func opBookmark(rv string) queueOp {
	return func(t *testing.T, q Queue) { t.Helper(); mustOK(t, q.(*RealFIFO).Bookmark(rv)) }
}

func TestRealFIFO_AtomicEventsAndBookmarks(t *testing.T) {
	a1, b1, c1 := queuePod("a", "1"), queuePod("b", "1"), queuePod("c", "1")
	tests := map[string]struct {
		transform bool
		ops       []queueOp
		want      []Delta
		wantCalls int
	}{
		"replace queues one ReplacedAll with the list and version": {
			ops: []queueOp{opAdd(a1), opReplace(b1, c1)},
			want: []Delta{
				{Added, a1},
				{ReplacedAll, ReplacedAllInfo{ResourceVersion: "7", Objects: objs(b1, c1)}},
			},
		},
		"resync queues one SyncAll": {
			ops:  []queueOp{opResync()},
			want: []Delta{{SyncAll, SyncAllInfo{}}},
		},
		"bookmark queues its resource version in order": {
			ops:  []queueOp{opAdd(a1), opBookmark("9"), opAdd(b1)},
			want: []Delta{{Added, a1}, {Bookmark, BookmarkInfo{ResourceVersion: "9"}}, {Added, b1}},
		},
		"replace transforms the whole list": {
			transform: true,
			ops:       []queueOp{opReplace(a1, b1)},
			want: []Delta{
				{ReplacedAll, ReplacedAllInfo{ResourceVersion: "7", Objects: objs(transformedPod(a1), transformedPod(b1))}},
			},
			wantCalls: 2,
		},
		"replace leaves keys to the consumer": {
			ops: []queueOp{opReplace(noMeta{"x"})},
			want: []Delta{
				{ReplacedAll, ReplacedAllInfo{ResourceVersion: "7", Objects: objs(noMeta{"x"})}},
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			opts := RealFIFOOptions{AtomicEvents: true, EmitDeltaTypeBookmark: true}
			transform, calls := countingTransform()
			if tc.transform {
				opts.Transformer = transform
			}
			f := NewRealFIFOWithOptions(opts)
			runOps(t, f, tc.ops)
			if diff := cmp.Diff(tc.want, changesOf(t, f)); diff != "" {
				t.Errorf("popped changes (-want +got):\n%s", diff)
			}
			if *calls != tc.wantCalls {
				t.Errorf("transform called %d times, want %d", *calls, tc.wantCalls)
			}
		})
	}
}

func TestRealFIFO_Transformer(t *testing.T) {
	a1, b1 := queuePod("a", "1"), queuePod("b", "1")
	tests := map[string]struct {
		known     []*v1.Pod
		ops       []queueOp
		want      []Delta
		wantCalls int
	}{
		"add, update and delete transform their object": {
			ops:       []queueOp{opAdd(a1), opUpdate(a1), opDelete(a1)},
			want:      []Delta{{Added, transformedPod(a1)}, {Updated, transformedPod(a1)}, {Deleted, transformedPod(a1)}},
			wantCalls: 3,
		},
		"a deleted tombstone is not transformed": {
			ops:  []queueOp{opDelete(tombstone("a", a1))},
			want: []Delta{{Deleted, tombstone("a", a1)}},
		},
		"replace transforms listed objects, not inferred tombstones": {
			known:     []*v1.Pod{b1},
			ops:       []queueOp{opReplace(a1)},
			want:      []Delta{{Deleted, tombstone("b", b1)}, {Replaced, transformedPod(a1)}},
			wantCalls: 1,
		},
		"resync does not transform known objects again": {
			known: []*v1.Pod{a1},
			ops:   []queueOp{opResync()},
			want:  []Delta{{Sync, a1}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			transform, calls := countingTransform()
			f := NewRealFIFO(MetaNamespaceKeyFunc, newFakeKnown(tc.known...), transform)
			if f.Transformer() == nil {
				t.Fatal("Transformer() = nil")
			}
			runOps(t, f, tc.ops)
			if diff := cmp.Diff(tc.want, changesOf(t, f)); diff != "" {
				t.Errorf("popped changes (-want +got):\n%s", diff)
			}
			if *calls != tc.wantCalls {
				t.Errorf("transform called %d times, want %d", *calls, tc.wantCalls)
			}
		})
	}
}

// A failing call leaves the queue unchanged, except a Replace without
// AtomicEvents failing a transform: as in client-go, the deletions it
// inferred and the objects before the failing one stay queued, and the
// error wraps the transform's.
func TestRealFIFO_Failures(t *testing.T) {
	a1 := queuePod("a", "1")
	tests := map[string]struct {
		atomic     bool
		op         func(f *RealFIFO) error
		wantKeyErr bool
		wantSynced bool // the failed call still ended the initial sync
		// wantPanic: the call panics (user code's panic goes on, as in
		// client-go); the queue is still unchanged.
		wantPanic bool
		// wantQueued counts the changes the call queued before failing.
		wantQueued int
		// wantWrapped: the error is "couldn't enqueue object: " wrapping
		// the transform's error.
		wantWrapped bool
	}{
		"add nil":                    {op: func(f *RealFIFO) error { return f.Add(nil) }, wantKeyErr: true, wantSynced: true},
		"update without metadata":    {op: func(f *RealFIFO) error { return f.Update(noMeta{"x"}) }, wantKeyErr: true, wantSynced: true},
		"delete without metadata":    {op: func(f *RealFIFO) error { return f.Delete(noMeta{"x"}) }, wantKeyErr: true, wantSynced: true},
		"replace with one bad entry": {op: func(f *RealFIFO) error { return f.Replace(objs(queuePod("b", "1"), noMeta{"x"}), "1") }, wantKeyErr: true},
		"add failing the transform":  {op: func(f *RealFIFO) error { return f.Add(queuePod("bad", "1")) }, wantSynced: true},
		"add panicking in transform": {op: func(f *RealFIFO) error { return f.Add(queuePod("panic", "1")) }, wantPanic: true},
		"replace failing the transform": {
			op: func(f *RealFIFO) error {
				return f.Replace(objs(queuePod("b", "1"), queuePod("bad", "1"), queuePod("c", "1")), "1")
			},
			wantQueued:  2, // a's tombstone, then b
			wantWrapped: true,
		},
		"atomic replace failing the transform": {
			atomic: true,
			op:     func(f *RealFIFO) error { return f.Replace(objs(queuePod("b", "1"), queuePod("bad", "1")), "1") },
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			opts := RealFIFOOptions{Transformer: failOn("bad"), AtomicEvents: tc.atomic}
			if !tc.atomic {
				opts.KnownObjects = newFakeKnown(a1)
			}
			f := NewRealFIFOWithOptions(opts)
			mustOK(t, f.Resync()) // queues something without ending the initial sync
			before := queuedLen(f)
			var err error
			p := capturePanic(func() { err = tc.op(f) })
			switch {
			case tc.wantPanic && p == nil:
				t.Fatal("no panic")
			case !tc.wantPanic && p != nil:
				t.Fatalf("panic %v", p)
			case !tc.wantPanic && err == nil:
				t.Fatal("no error")
			}
			if !tc.wantPanic {
				var keyErr KeyError
				if got := errors.As(err, &keyErr); got != tc.wantKeyErr {
					t.Errorf("error %q: is a KeyError = %v, want %v", err, got, tc.wantKeyErr)
				}
				if got := f.HasSynced(); got != tc.wantSynced {
					t.Errorf("HasSynced() = %v, want %v", got, tc.wantSynced)
				}
				if tc.wantWrapped && (err.Error() != "couldn't enqueue object: cannot transform bad" || errors.Unwrap(err) == nil) {
					t.Errorf("error %q (wraps %v), want client-go's wrapping of the transform's error", err, errors.Unwrap(err))
				}
			}
			if got := queuedLen(f); got != before+tc.wantQueued {
				t.Errorf("%d changes queued after the failure, want %d", got, before+tc.wantQueued)
			}
		})
	}
}

func TestRealFIFO_KeyOfUnwrapsQueuedForms(t *testing.T) {
	f := NewRealFIFO(nil, newFakeKnown(), nil)
	a1 := queuePod("a", "1")
	tests := map[string]struct {
		obj     interface{}
		wantKey string
		wantErr error
	}{
		"object":       {obj: a1, wantKey: "ns/a"},
		"delta":        {obj: Delta{Added, a1}, wantKey: "ns/a"},
		"deltas":       {obj: Deltas{{Added, queuePod("x", "1")}, {Updated, a1}}, wantKey: "ns/a"},
		"tombstone":    {obj: Delta{Deleted, DeletedFinalStateUnknown{Key: "t/k"}}, wantKey: "t/k"},
		"empty deltas": {obj: Deltas{}, wantErr: ErrZeroLengthDeltasObject},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			key, err := f.keyOf(tc.obj)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("keyOf error = %v, want %v", err, tc.wantErr)
			}
			if key != tc.wantKey {
				t.Errorf("keyOf = %q, want %q", key, tc.wantKey)
			}
		})
	}
}

func TestRealFIFO_HasSyncedAndInitialList(t *testing.T) {
	a1, b1, c1 := queuePod("a", "1"), queuePod("b", "1"), queuePod("c", "1")
	tests := map[string]struct {
		atomic       bool
		known        []*v1.Pod
		ops          []queueOp
		wantSynced   bool
		wantInitials []bool
	}{
		"nothing happened":       {wantSynced: false},
		"add before any replace": {ops: []queueOp{opAdd(a1)}, wantSynced: true, wantInitials: []bool{false}},
		"delete before replace":  {ops: []queueOp{opDelete(a1)}, wantSynced: true, wantInitials: []bool{false}},
		"empty first replace":    {ops: []queueOp{opReplace()}, wantSynced: true},
		"first replace owes each change, inferred deletions included": {
			known:        []*v1.Pod{c1},
			ops:          []queueOp{opReplace(a1, b1), opPop()},
			wantSynced:   false,
			wantInitials: []bool{true, true},
		},
		"first replace fully popped": {
			ops:        []queueOp{opReplace(a1, b1), opPop(), opPop()},
			wantSynced: true,
		},
		"later changes are not initial": {
			ops:          []queueOp{opReplace(a1), opAdd(b1)},
			wantInitials: []bool{true, false},
		},
		"atomic replace owes one change": {
			atomic:     true,
			ops:        []queueOp{opReplace(a1, b1), opPop()},
			wantSynced: true,
		},
		"changes queued before the first replace are owed too": {
			atomic:       true,
			ops:          []queueOp{opBookmark("3"), opResync(), opReplace(a1)},
			wantInitials: []bool{true, true, true},
		},
		"bookmark does not end the initial sync": {
			atomic:       true,
			ops:          []queueOp{opBookmark("3")},
			wantInitials: []bool{true},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			opts := RealFIFOOptions{AtomicEvents: tc.atomic, EmitDeltaTypeBookmark: tc.atomic}
			if !tc.atomic {
				opts.KnownObjects = newFakeKnown(tc.known...)
			}
			f := NewRealFIFOWithOptions(opts)
			runOps(t, f, tc.ops)
			if got := f.HasSynced(); got != tc.wantSynced {
				t.Errorf("HasSynced() = %v, want %v", got, tc.wantSynced)
			}
			if got := IsDone(f.HasSyncedChecker()); got != tc.wantSynced {
				t.Errorf("IsDone(HasSyncedChecker()) = %v, want %v", got, tc.wantSynced)
			}
			var initials []bool
			for _, p := range drain(t, f) {
				initials = append(initials, p.Initial)
			}
			if diff := cmp.Diff(tc.wantInitials, initials); diff != "" {
				t.Errorf("isInInitialList of the remaining pops (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRealFIFO_ReplaceDuringUnlockedProcessingOwesOnlyItsOwnItems(t *testing.T) {
	f := NewRealFIFOWithOptions(RealFIFOOptions{AtomicEvents: true, UnlockWhileProcessing: true})
	mustOK(t, f.Resync()) // queued before any Replace: not populated yet
	_, err := f.Pop(func(interface{}, bool) error {
		// The first Replace arrives while the SyncAll is being processed.
		return f.Replace(objs(queuePod("a", "1")), "1")
	})
	mustOK(t, err)
	if f.HasSynced() {
		t.Fatal("HasSynced() = true while the first Replace's change is still queued")
	}
	if p := popNow(t, f); !p.Initial {
		t.Error("the first Replace's change was not handed out as initial")
	}
	if !f.HasSynced() {
		t.Error("HasSynced() = false after the first Replace's change was processed")
	}
}

// batchCall is one call PopBatch made.
type batchCall struct {
	Single  bool
	Deltas  []Delta
	Initial bool
}

// popBatches closes f and calls PopBatch until the queue is drained.
func popBatches(t *testing.T, f *RealFIFO) []batchCall {
	t.Helper()
	f.Close()
	var calls []batchCall
	for {
		err := f.PopBatch(
			func(deltas []Delta, isInInitialList bool) error {
				calls = append(calls, batchCall{Deltas: append([]Delta(nil), deltas...), Initial: isInInitialList})
				return nil
			},
			func(obj interface{}, isInInitialList bool) error {
				calls = append(calls, batchCall{Single: true, Deltas: append([]Delta(nil), obj.(Deltas)...), Initial: isInInitialList})
				return nil
			})
		if errors.Is(err, ErrFIFOClosed) {
			return calls
		}
		mustOK(t, err)
	}
}

func TestRealFIFO_PopBatch(t *testing.T) {
	a1, a2, b1, c1, d1 := queuePod("a", "1"), queuePod("a", "2"), queuePod("b", "1"), queuePod("c", "1"), queuePod("d", "1")
	tests := map[string]struct {
		atomic    bool
		known     []*v1.Pod
		batchSize int
		ops       []queueOp
		want      []batchCall
	}{
		"the initial list comes as one batch": {
			ops:  []queueOp{opReplace(a1, b1, c1)},
			want: []batchCall{{Deltas: []Delta{{Replaced, a1}, {Replaced, b1}, {Replaced, c1}}, Initial: true}},
		},
		"the batch size splits, a lone change goes to processSingle": {
			batchSize: 2,
			ops:       []queueOp{opReplace(a1, b1, c1)},
			want: []batchCall{
				{Deltas: []Delta{{Replaced, a1}, {Replaced, b1}}, Initial: true},
				{Single: true, Deltas: []Delta{{Replaced, c1}}, Initial: true},
			},
		},
		"initial changes are not mixed with later ones": {
			ops: []queueOp{opReplace(a1, b1), opUpdate(c1), opUpdate(d1)},
			want: []batchCall{
				{Deltas: []Delta{{Replaced, a1}, {Replaced, b1}}, Initial: true},
				{Deltas: []Delta{{Updated, c1}, {Updated, d1}}},
			},
		},
		"a second change to an object ends the batch": {
			ops: []queueOp{opAdd(a1), opAdd(b1), opUpdate(a2), opDelete(c1)},
			want: []batchCall{
				{Deltas: []Delta{{Added, a1}, {Added, b1}}},
				{Deltas: []Delta{{Updated, a2}, {Deleted, c1}}},
			},
		},
		"deletions and syncs batch": {
			known: []*v1.Pod{a1, b1},
			ops:   []queueOp{opAdd(c1), opResync(), opReplace()},
			want: []batchCall{
				{Deltas: []Delta{{Added, c1}, {Sync, a1}, {Sync, b1}}},
				{Deltas: []Delta{{Deleted, tombstone("c", c1)}, {Deleted, tombstone("a", a1)}, {Deleted, tombstone("b", b1)}}},
			},
		},
		"a whole-queue change goes alone and ends a batch": {
			atomic: true,
			ops:    []queueOp{opAdd(a1), opAdd(b1), opBookmark("4"), opResync(), opAdd(c1)},
			want: []batchCall{
				{Deltas: []Delta{{Added, a1}, {Added, b1}}},
				{Single: true, Deltas: []Delta{{Bookmark, BookmarkInfo{ResourceVersion: "4"}}}},
				{Single: true, Deltas: []Delta{{SyncAll, SyncAllInfo{}}}},
				{Single: true, Deltas: []Delta{{Added, c1}}},
			},
		},
		"an atomic initial list is a single change": {
			atomic: true,
			ops:    []queueOp{opReplace(a1, b1), opAdd(c1), opAdd(d1)},
			want: []batchCall{
				{Single: true, Deltas: []Delta{{ReplacedAll, ReplacedAllInfo{ResourceVersion: "7", Objects: objs(a1, b1)}}}, Initial: true},
				{Deltas: []Delta{{Added, c1}, {Added, d1}}},
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			opts := RealFIFOOptions{AtomicEvents: tc.atomic, EmitDeltaTypeBookmark: tc.atomic}
			if !tc.atomic {
				opts.KnownObjects = newFakeKnown(tc.known...)
			}
			f := NewRealFIFOWithOptions(opts)
			if tc.batchSize > 0 {
				f.batchSize = tc.batchSize
			}
			runOps(t, f, tc.ops)
			if diff := cmp.Diff(tc.want, popBatches(t, f)); diff != "" {
				t.Errorf("PopBatch calls (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRealFIFO_PopBatchDefaultSizeIs1000(t *testing.T) {
	f := NewRealFIFOWithOptions(RealFIFOOptions{AtomicEvents: true})
	for i := range 1001 {
		mustOK(t, f.Add(queuePod(string(rune('a'+i%26))+string(rune('a'+i/26%26))+string(rune('a'+i/676)), "1")))
	}
	var sizes []int
	for _, c := range popBatches(t, f) {
		sizes = append(sizes, len(c.Deltas))
	}
	if diff := cmp.Diff([]int{1000, 1}, sizes); diff != "" {
		t.Errorf("batch sizes (-want +got):\n%s", diff)
	}
}

func TestRealFIFO_LockWhileProcessing(t *testing.T) {
	tests := map[string]struct {
		unlock     bool
		batchSize  int
		queued     int
		wantLocked []bool // per Pop: was the lock held while processing
	}{
		"locked by default": {
			queued:     2,
			wantLocked: []bool{true, true},
		},
		"unlocked with UnlockWhileProcessing": {
			unlock:     true,
			queued:     2,
			wantLocked: []bool{false, false},
		},
		"kept locked while two batches wait (backpressure)": {
			unlock:     true,
			batchSize:  1,
			queued:     4,
			wantLocked: []bool{true, true, false, false},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f := NewRealFIFOWithOptions(RealFIFOOptions{AtomicEvents: true, UnlockWhileProcessing: tc.unlock})
			if tc.batchSize > 0 {
				f.batchSize = tc.batchSize
			}
			for i := range tc.queued {
				mustOK(t, f.Add(queuePod(string(rune('a'+i)), "1")))
			}
			var locked []bool
			for range tc.queued {
				_, err := f.Pop(func(interface{}, bool) error {
					if !f.mu.TryLock() {
						locked = append(locked, true)
						return nil
					}
					f.mu.Unlock()
					locked = append(locked, false)
					// Unlocked: producers can queue while we process.
					return f.Add(queuePod("during", "1"))
				})
				mustOK(t, err)
			}
			if diff := cmp.Diff(tc.wantLocked, locked); diff != "" {
				t.Errorf("lock held while processing (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRealFIFO_OptionChecks(t *testing.T) {
	known := newFakeKnown()
	tests := map[string]struct {
		opts      RealFIFOOptions
		wantPanic bool
	}{
		"known objects without atomic events": {opts: RealFIFOOptions{KnownObjects: known}},
		"atomic events without known objects": {opts: RealFIFOOptions{AtomicEvents: true, UnlockWhileProcessing: true, EmitDeltaTypeBookmark: true}},
		"no known objects without atomic":     {opts: RealFIFOOptions{}, wantPanic: true},
		"known objects with atomic events":    {opts: RealFIFOOptions{AtomicEvents: true, KnownObjects: known}, wantPanic: true},
		"unlock while processing, not atomic": {opts: RealFIFOOptions{KnownObjects: known, UnlockWhileProcessing: true}, wantPanic: true},
		"bookmarks without atomic events":     {opts: RealFIFOOptions{KnownObjects: known, EmitDeltaTypeBookmark: true}, wantPanic: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if got := recover() != nil; got != tc.wantPanic {
					t.Errorf("panicked = %v, want %v", got, tc.wantPanic)
				}
			}()
			NewRealFIFOWithOptions(tc.opts)
		})
	}
}

func TestRealFIFO_Names(t *testing.T) {
	name, err := NewInformerName("realfifo-names-test")
	mustOK(t, err)
	defer name.Release()
	tests := map[string]struct {
		opts RealFIFOOptions
		want string
	}{
		"default":                {opts: RealFIFOOptions{AtomicEvents: true}, want: "RealFIFO"},
		"name option":            {opts: RealFIFOOptions{AtomicEvents: true, Name: "pods"}, want: "pods"},
		"identifier name wins":   {opts: RealFIFOOptions{AtomicEvents: true, Name: "pods", Identifier: name.WithResource(schema.GroupVersionResource{Resource: "pods"})}, want: "realfifo-names-test"},
		"deprecated constructor": {opts: RealFIFOOptions{KnownObjects: newFakeKnown()}, want: "RealFIFO"},
	}
	for n, tc := range tests {
		t.Run(n, func(t *testing.T) {
			f := NewRealFIFOWithOptions(tc.opts)
			if f.Name() != tc.want || f.HasSyncedChecker().Name() != tc.want {
				t.Errorf("Name() = %q, checker Name() = %q, want %q", f.Name(), f.HasSyncedChecker().Name(), tc.want)
			}
			if f.Done() != f.HasSyncedChecker().Done() {
				t.Error("Done() is not the checker's channel")
			}
		})
	}
}

// recordingMetrics is an InformerMetricsProvider that records what the
// queue reports.
type recordingMetrics struct {
	mu        sync.Mutex
	depths    []float64
	latencies []float64
}

func (m *recordingMetrics) Set(v float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.depths = append(m.depths, v)
}

type recordingHistogram struct{ m *recordingMetrics }

func (h recordingHistogram) Observe(v float64) {
	h.m.mu.Lock()
	defer h.m.mu.Unlock()
	h.m.latencies = append(h.m.latencies, v)
}

func (m *recordingMetrics) NewQueuedItemMetric(InformerNameAndResource) GaugeMetric { return m }
func (m *recordingMetrics) NewProcessingLatencyMetric(InformerNameAndResource) HistogramMetric {
	return recordingHistogram{m}
}
func (m *recordingMetrics) NewStoreResourceVersionMetric(InformerNameAndResource) GaugeMetric {
	return noopMetric{}
}

func TestRealFIFO_Metrics(t *testing.T) {
	name, err := NewInformerName("realfifo-metrics-test")
	mustOK(t, err)
	defer name.Release()
	id := name.WithResource(schema.GroupVersionResource{Version: "v1", Resource: "pods"})

	tests := map[string]struct {
		id            InformerNameAndResource
		wantDepths    []float64
		wantLatencies []float64
	}{
		"a reserved identity publishes queue length and latency": {
			id:            id,
			wantDepths:    []float64{1, 2, 3, 2, 1, 0},
			wantLatencies: []float64{2, 3, 0},
		},
		"without an identity nothing is published": {id: InformerNameAndResource{}},
	}
	for n, tc := range tests {
		t.Run(n, func(t *testing.T) {
			m := &recordingMetrics{}
			clk := clocktesting.NewFakePassiveClock(time.Unix(100, 0))
			f := NewRealFIFOWithOptions(RealFIFOOptions{AtomicEvents: true, EmitDeltaTypeBookmark: true, Identifier: tc.id, MetricsProvider: m})
			f.clock = clk
			mustOK(t, f.Add(queuePod("a", "1")))
			mustOK(t, f.Add(queuePod("b", "1")))
			mustOK(t, f.Bookmark("3"))
			for _, took := range []time.Duration{2 * time.Second, 3 * time.Second, 0} {
				_, err := f.Pop(func(interface{}, bool) error { clk.SetTime(clk.Now().Add(took)); return nil })
				mustOK(t, err)
			}
			m.mu.Lock()
			defer m.mu.Unlock()
			if diff := cmp.Diff(tc.wantDepths, m.depths); diff != "" {
				t.Errorf("queued items gauge (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantLatencies, m.latencies); diff != "" {
				t.Errorf("processing latencies (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRealFIFO_CloseWakesAWaitingPopBatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := NewRealFIFOWithOptions(RealFIFOOptions{AtomicEvents: true, UnlockWhileProcessing: true})
		errc := make(chan error, 1)
		go func() {
			errc <- f.PopBatch(
				func([]Delta, bool) error { return errors.New("nothing to pop") },
				func(interface{}, bool) error { return errors.New("nothing to pop") })
		}()
		synctest.Wait()
		select {
		case err := <-errc:
			t.Fatalf("PopBatch returned %v before Close", err)
		default:
		}
		f.Close()
		if err := <-errc; !errors.Is(err, ErrFIFOClosed) {
			t.Errorf("PopBatch after Close = %v, want ErrFIFOClosed", err)
		}
	})
}

// TestRealFIFO_StaysUnsyncedWhileTheInitialListIsProcessed pins a bug the
// soak test found: with UnlockWhileProcessing, a change queued while the
// first Replace's item was being processed (the reflector starts watching
// right after the list) ended the initial sync early, so an informer's
// handlers could report HasSynced before their initial list was delivered.
func TestRealFIFO_StaysUnsyncedWhileTheInitialListIsProcessed(t *testing.T) {
	for _, batch := range []bool{false, true} {
		name := "Pop"
		if batch {
			name = "PopBatch"
		}
		t.Run(name, func(t *testing.T) {
			f := NewRealFIFOWithOptions(RealFIFOOptions{
				KeyFunction: MetaNamespaceKeyFunc, AtomicEvents: true, UnlockWhileProcessing: true,
			})
			if err := f.Replace([]interface{}{testPod("ns", "a", "1")}, "1"); err != nil {
				t.Fatal(err)
			}
			var syncedDuring, initial bool
			process := func(_ interface{}, isInInitialList bool) error {
				initial = isInInitialList
				if err := f.Add(testPod("ns", "b", "2")); err != nil {
					t.Errorf("Add while processing: %v", err)
				}
				syncedDuring = f.HasSynced()
				return nil
			}
			var err error
			if batch {
				err = f.PopBatch(func(d []Delta, initial bool) error { return process(d, initial) }, process)
			} else {
				_, err = f.Pop(process)
			}
			if err != nil {
				t.Fatal(err)
			}
			if !initial {
				t.Error("the first Replace's item was not marked as part of the initial list")
			}
			if syncedDuring {
				t.Error("HasSynced was true while the first Replace's item was still being processed")
			}
			if !f.HasSynced() {
				t.Error("HasSynced is false after the first Replace's item was processed")
			}
		})
	}
}
