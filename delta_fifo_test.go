package cache

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
)

// deltasOf drains f and returns the Deltas it popped.
func deltasOf(t *testing.T, f *DeltaFIFO) []Deltas {
	t.Helper()
	var out []Deltas
	for _, obj := range drainObjs(t, f) {
		out = append(out, obj.(Deltas))
	}
	return out
}

func TestDeltaFIFO_HasSyncedAndInitialList(t *testing.T) {
	a1, a2, b1, c1 := queuePod("a", "1"), queuePod("a", "2"), queuePod("b", "1"), queuePod("c", "1")
	tests := map[string]struct {
		known        []*v1.Pod
		ops          []queueOp
		wantSynced   bool
		wantInitials []bool // isInInitialList of the remaining pops
	}{
		"nothing happened":               {wantSynced: false},
		"add before any replace":         {ops: []queueOp{opAdd(a1)}, wantSynced: true, wantInitials: []bool{false}},
		"an ignored delete still counts": {ops: []queueOp{opDelete(a1)}, wantSynced: true},
		"empty first replace":            {ops: []queueOp{opReplace()}, wantSynced: true},
		"first replace owes every key":   {ops: []queueOp{opReplace(a1, b1), opPop()}, wantSynced: false, wantInitials: []bool{true}},
		"first replace fully popped":     {ops: []queueOp{opReplace(a1, b1), opPop(), opPop()}, wantSynced: true},
		"later changes are not initial": {
			ops:          []queueOp{opReplace(a1), opAdd(c1)},
			wantSynced:   false,
			wantInitials: []bool{true, false},
		},
		"inferred deletions belong to the initial list": {
			known:        []*v1.Pod{a1},
			ops:          []queueOp{opReplace(b1), opPop()},
			wantSynced:   false,
			wantInitials: []bool{true},
		},
		"a resync before the first replace merges into its keys": {
			known:      []*v1.Pod{a1},
			ops:        []queueOp{opResync(), opReplace(a2), opPop()},
			wantSynced: true,
		},
		"a resync before any replace does not end the sync": {
			known:        []*v1.Pod{a1},
			ops:          []queueOp{opResync()},
			wantSynced:   false,
			wantInitials: []bool{true},
		},
		"later replace does not reopen the sync": {
			ops:          []queueOp{opAdd(a1), opReplace(b1, c1)},
			wantSynced:   true,
			wantInitials: []bool{false, false, false},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			opts := DeltaFIFOOptions{}
			if tc.known != nil {
				opts.KnownObjects = newFakeKnown(tc.known...)
			}
			f := NewDeltaFIFOWithOptions(opts)
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

func TestDeltaFIFO_CheckerClosesAfterTheLastInitialItemIsProcessed(t *testing.T) {
	f := NewDeltaFIFOWithOptions(DeltaFIFOOptions{Name: "pods"})
	checker := f.HasSyncedChecker()
	if checker.Name() != "pods" || f.Name() != "pods" {
		t.Errorf("checker Name() = %q, queue Name() = %q, want pods", checker.Name(), f.Name())
	}
	mustOK(t, f.Replace(objs(queuePod("a", "1"), queuePod("b", "1")), "1"))
	for i, wantDoneAfter := range []bool{false, true} {
		_, err := f.Pop(func(interface{}, bool) error {
			if IsDone(checker) {
				t.Errorf("pop %d: checker done while the item is being processed", i)
			}
			return nil
		})
		mustOK(t, err)
		if got := IsDone(checker); got != wantDoneAfter {
			t.Errorf("after pop %d: IsDone = %v, want %v", i, got, wantDoneAfter)
		}
	}
	if f.Done() != checker.Done() {
		t.Error("Done() is not the checker's channel")
	}
}

func TestDeltaFIFO_Transformer(t *testing.T) {
	a1, b1 := queuePod("a", "1"), queuePod("b", "1")
	tests := map[string]struct {
		known     []*v1.Pod
		ops       []queueOp
		want      []Deltas
		wantCalls int
	}{
		"add, update and delete transform their object": {
			ops:       []queueOp{opAdd(a1), opUpdate(a1), opDelete(a1)},
			want:      []Deltas{{{Added, transformedPod(a1)}, {Updated, transformedPod(a1)}, {Deleted, transformedPod(a1)}}},
			wantCalls: 3,
		},
		"a deleted tombstone is not transformed": {
			known:     []*v1.Pod{a1},
			ops:       []queueOp{opDelete(tombstone("a", a1))},
			want:      []Deltas{{{Deleted, tombstone("a", a1)}}},
			wantCalls: 0,
		},
		"replace transforms listed objects, not inferred tombstones": {
			known:     []*v1.Pod{b1},
			ops:       []queueOp{opReplace(a1)},
			want:      []Deltas{{{Sync, transformedPod(a1)}}, {{Deleted, tombstone("b", b1)}}},
			wantCalls: 1,
		},
		"resync does not transform known objects again": {
			known:     []*v1.Pod{a1},
			ops:       []queueOp{opResync()},
			want:      []Deltas{{{Sync, a1}}},
			wantCalls: 0,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			transform, calls := countingTransform()
			opts := DeltaFIFOOptions{Transformer: transform}
			if tc.known != nil {
				opts.KnownObjects = newFakeKnown(tc.known...)
			}
			f := NewDeltaFIFOWithOptions(opts)
			if f.Transformer() == nil {
				t.Fatal("Transformer() = nil")
			}
			runOps(t, f, tc.ops)
			if diff := cmp.Diff(tc.want, deltasOf(t, f)); diff != "" {
				t.Errorf("popped Deltas (-want +got):\n%s", diff)
			}
			if *calls != tc.wantCalls {
				t.Errorf("transform called %d times, want %d", *calls, tc.wantCalls)
			}
		})
	}
}

// failOn returns a transform that fails for the Pod named name and passes
// other objects through.
func failOn(name string) TransformFunc {
	return func(obj interface{}) (interface{}, error) {
		if p, ok := obj.(*v1.Pod); ok && p.Name == name {
			return nil, fmt.Errorf("cannot transform %s", name)
		}
		if p, ok := obj.(*v1.Pod); ok && p.Name == "panic" {
			panic("transform panicked on purpose")
		}
		return obj, nil
	}
}

// A failing call leaves the queue unchanged, except a Replace: as in
// client-go, the objects before the failing one stay queued.
func TestDeltaFIFO_Failures(t *testing.T) {
	a1, b1 := queuePod("a", "1"), queuePod("b", "1")
	tests := map[string]struct {
		op          func(f *DeltaFIFO) error
		wantKeyErr  bool
		wantPopProp bool // the failed call still ended the initial sync
		// wantPanic: the call panics (user code's panic goes on, as in
		// client-go); the queue is still unchanged.
		wantPanic bool
		// wantAlso is what the call queued before failing.
		wantAlso []Deltas
		// wantErr, if set, is the error's exact text.
		wantErr string
	}{
		"add nil":                       {op: func(f *DeltaFIFO) error { return f.Add(nil) }, wantKeyErr: true, wantPopProp: true},
		"update without metadata":       {op: func(f *DeltaFIFO) error { return f.Update(noMeta{"x"}) }, wantKeyErr: true, wantPopProp: true},
		"delete without metadata":       {op: func(f *DeltaFIFO) error { return f.Delete(noMeta{"x"}) }, wantKeyErr: true},
		"replace with one bad entry":    {op: func(f *DeltaFIFO) error { return f.Replace(objs(b1, noMeta{"x"}), "1") }, wantKeyErr: true, wantAlso: []Deltas{{{Sync, b1}}}},
		"add failing the transform":     {op: func(f *DeltaFIFO) error { return f.Add(queuePod("bad", "1")) }, wantPopProp: true},
		"add panicking in transform":    {op: func(f *DeltaFIFO) error { return f.Add(queuePod("panic", "1")) }, wantPanic: true},
		"replace failing the transform": {op: func(f *DeltaFIFO) error { return f.Replace(objs(b1, queuePod("bad", "1"), a1), "1") }, wantAlso: []Deltas{{{Sync, b1}}}, wantErr: "couldn't enqueue object: cannot transform bad"},
		"delete failing the transform":  {op: func(f *DeltaFIFO) error { return f.Delete(queuePod("bad", "1")) }, wantPopProp: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			known := newFakeKnown(a1, queuePod("bad", "0"))
			f := NewDeltaFIFOWithOptions(DeltaFIFOOptions{KnownObjects: known, Transformer: failOn("bad")})
			// Queue a1 without ending the initial sync.
			mustOK(t, f.Resync())
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
				if got := f.HasSynced(); got != tc.wantPopProp {
					t.Errorf("HasSynced() = %v, want %v", got, tc.wantPopProp)
				}
				if tc.wantErr != "" && err.Error() != tc.wantErr {
					t.Errorf("error %q, want %q", err, tc.wantErr)
				}
			}
			want := append([]Deltas{{{Sync, a1}}, {{Sync, queuePod("bad", "0")}}}, tc.wantAlso...)
			if diff := cmp.Diff(want, deltasOf(t, f)); diff != "" {
				t.Errorf("queue content (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDeltaFIFO_KeyOf(t *testing.T) {
	a1 := queuePod("a", "1")
	tests := map[string]struct {
		obj      interface{}
		wantKey  string
		wantErr  bool
		wantZero bool
	}{
		"object":                     {obj: a1, wantKey: "ns/a"},
		"tombstone":                  {obj: DeletedFinalStateUnknown{Key: "some/key"}, wantKey: "some/key"},
		"deltas take the newest":     {obj: Deltas{{Added, queuePod("x", "1")}, {Updated, a1}}, wantKey: "ns/a"},
		"deltas ending in tombstone": {obj: Deltas{{Deleted, DeletedFinalStateUnknown{Key: "t/k"}}}, wantKey: "t/k"},
		"empty deltas":               {obj: Deltas{}, wantErr: true, wantZero: true},
		"object without metadata":    {obj: noMeta{"x"}, wantErr: true},
		"nil":                        {obj: nil, wantErr: true},
	}
	f := NewDeltaFIFOWithOptions(DeltaFIFOOptions{})
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			key, err := f.KeyOf(tc.obj)
			if (err != nil) != tc.wantErr {
				t.Fatalf("KeyOf error = %v, want error %v", err, tc.wantErr)
			}
			if got := errors.Is(err, ErrZeroLengthDeltasObject); got != tc.wantZero {
				t.Errorf("errors.Is(err, ErrZeroLengthDeltasObject) = %v, want %v", got, tc.wantZero)
			}
			if key != tc.wantKey {
				t.Errorf("KeyOf = %q, want %q", key, tc.wantKey)
			}
		})
	}
}

func TestDeltaFIFO_ProcessRunsUnderTheQueueLock(t *testing.T) {
	known := newFakeKnown()
	f := NewDeltaFIFOWithOptions(DeltaFIFOOptions{KnownObjects: known})
	mustOK(t, f.Add(queuePod("a", "1")))
	_, err := f.Pop(func(obj interface{}, _ bool) error {
		if f.mu.TryLock() {
			f.mu.Unlock()
			t.Error("process ran without the queue's lock")
		}
		// The documented use: update the known objects in step with the queue.
		d := obj.(Deltas).Newest()
		known.set(podKey("a"), d.Object)
		return nil
	})
	mustOK(t, err)
	if _, ok, _ := known.GetByKey(podKey("a")); !ok {
		t.Error("process did not reach the known objects")
	}
}

func TestDeltaFIFO_DefaultsAndDeprecatedConstructor(t *testing.T) {
	known := newFakeKnown(queuePod("a", "1"))
	f := NewDeltaFIFO(nil, known)
	if f.Name() != "DeltaFIFO" {
		t.Errorf("Name() = %q, want DeltaFIFO", f.Name())
	}
	if f.Transformer() != nil {
		t.Error("Transformer() != nil without a transformer")
	}
	// nil KeyFunction means MetaNamespaceKeyFunc, and EmitDeltaTypeReplaced
	// is off: Replace queues Sync.
	mustOK(t, f.Replace(objs(queuePod("b", "1")), "1"))
	want := []Deltas{{{Sync, queuePod("b", "1")}}, {{Deleted, tombstone("a", queuePod("a", "1"))}}}
	if diff := cmp.Diff(want, deltasOf(t, f)); diff != "" {
		t.Errorf("popped Deltas (-want +got):\n%s", diff)
	}
}
