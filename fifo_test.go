package cache

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2/textlogger"
)

func TestRing_KeepsOrderAcrossGrowWrapAndShrink(t *testing.T) {
	tests := map[string]struct {
		// steps: a positive number pushes that many values, a negative one
		// pops that many.
		steps []int
	}{
		"empty":                 {steps: nil},
		"push then pop all":     {steps: []int{5, -5}},
		"grow past first cap":   {steps: []int{40, -3, 10}},
		"wrap around the end":   {steps: []int{12, -10, 12, -5}},
		"shrink after a burst":  {steps: []int{5000, -4990, 30}},
		"refill after emptying": {steps: []int{3, -3, 20, -1}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var r ring[int]
			var model []int
			next := 0
			for _, step := range tc.steps {
				for ; step > 0; step-- {
					r.push(next)
					model = append(model, next)
					next++
				}
				for ; step < 0; step++ {
					if got := r.popFront(); got != model[0] {
						t.Fatalf("popFront = %d, want %d", got, model[0])
					}
					model = model[1:]
				}
			}
			got := make([]int, r.len())
			for i := range got {
				got[i] = r.at(i)
			}
			if diff := cmp.Diff(append([]int{}, model...), got); diff != "" {
				t.Errorf("ring content (-want +got):\n%s", diff)
			}
			if c := len(r.buf); c > ringKeepCap && r.n <= c/4 {
				t.Errorf("ring holds %d values in a buffer of %d: should have shrunk", r.n, c)
			}
		})
	}
}

func TestRing_PopZeroesTheSlot(t *testing.T) {
	var r ring[*int]
	v := 1
	r.push(&v)
	r.push(&v)
	r.popFront()
	for i, p := range r.buf {
		if i != r.head && p != nil {
			t.Errorf("slot %d still references a popped value", i)
		}
	}
}

func TestInitialSync_Transitions(t *testing.T) {
	tests := map[string]struct {
		steps      func(s *initialSync)
		wantSynced bool
	}{
		"fresh":                          {steps: func(s *initialSync) {}, wantSynced: false},
		"add before replace":             {steps: func(s *initialSync) { s.markPopulated() }, wantSynced: true},
		"empty first replace":            {steps: func(s *initialSync) { s.firstReplace(0) }, wantSynced: true},
		"replace owes its items":         {steps: func(s *initialSync) { s.firstReplace(2); s.take(1); s.settle() }, wantSynced: false},
		"all taken but not settled":      {steps: func(s *initialSync) { s.firstReplace(1); s.take(1) }, wantSynced: false},
		"all taken and settled":          {steps: func(s *initialSync) { s.firstReplace(2); s.take(2); s.settle() }, wantSynced: true},
		"add after replace changes none": {steps: func(s *initialSync) { s.firstReplace(1); s.markPopulated() }, wantSynced: false},
		"second replace does not count":  {steps: func(s *initialSync) { s.markPopulated(); s.firstReplace(5) }, wantSynced: true},
		"take before replace is ignored": {steps: func(s *initialSync) { s.take(1); s.firstReplace(1); s.settle() }, wantSynced: false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := newInitialSync()
			tc.steps(&s)
			if got := s.synced(); got != tc.wantSynced {
				t.Errorf("synced() = %v, want %v", got, tc.wantSynced)
			}
			closed := false
			select {
			case <-s.done:
				closed = true
			default:
			}
			if closed != tc.wantSynced {
				t.Errorf("done closed = %v, want %v", closed, tc.wantSynced)
			}
		})
	}
}

func TestFIFO_PopsNewestObjectPerKeyInQueueOrder(t *testing.T) {
	a1, a2, b1, b2, c1 := queuePod("a", "1"), queuePod("a", "2"), queuePod("b", "1"), queuePod("b", "2"), queuePod("c", "1")
	tests := map[string]struct {
		ops  []queueOp
		want []popped
	}{
		"update replaces the object in place": {
			ops:  []queueOp{opAdd(a1), opAdd(b1), opUpdate(a2)},
			want: []popped{{a2, false}, {b1, false}},
		},
		"delete drops a queued object": {
			ops:  []queueOp{opAdd(a1), opAdd(b1), opDelete(a1)},
			want: []popped{{b1, false}},
		},
		"delete of an unknown key is ignored": {
			ops:  []queueOp{opAdd(a1), opDelete(c1)},
			want: []popped{{a1, false}},
		},
		"deleted then added again keeps its place": {
			ops:  []queueOp{opAdd(a1), opAdd(b1), opDelete(a1), opAdd(a2)},
			want: []popped{{a2, false}, {b1, false}},
		},
		"popped key is queued again at the back": {
			ops:  []queueOp{opAdd(a1), opAdd(b1), opPop(), opAdd(a2)},
			want: []popped{{b1, false}, {a2, false}},
		},
		"replace swaps the content, list order, last object wins": {
			ops:  []queueOp{opAdd(c1), opReplace(b1, a1, b2)},
			want: []popped{{b2, false}, {a1, false}},
		},
		"first replace items are the initial list": {
			ops:  []queueOp{opReplace(a1, b1), opAdd(c1)},
			want: []popped{{a1, true}, {b1, true}, {c1, false}},
		},
		"resync does nothing": {
			ops:  []queueOp{opAdd(a1), opResync()},
			want: []popped{{a1, false}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f := NewFIFO(MetaNamespaceKeyFunc)
			runOps(t, f, tc.ops)
			if diff := cmp.Diff(tc.want, drain(t, f)); diff != "" {
				t.Errorf("popped (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFIFO_HasSynced(t *testing.T) {
	a, b, c := queuePod("a", "1"), queuePod("b", "1"), queuePod("c", "1")
	tests := map[string]struct {
		ops          []queueOp
		wantSynced   bool
		wantInitials []bool // isInInitialList of the remaining pops
	}{
		"nothing happened":        {ops: nil, wantSynced: false},
		"add before any replace":  {ops: []queueOp{opAdd(a)}, wantSynced: true, wantInitials: []bool{false}},
		"delete before replace":   {ops: []queueOp{opDelete(a)}, wantSynced: true},
		"empty first replace":     {ops: []queueOp{opReplace()}, wantSynced: true},
		"first replace not taken": {ops: []queueOp{opReplace(a, b), opPop()}, wantSynced: false, wantInitials: []bool{true}},
		"first replace all taken": {ops: []queueOp{opReplace(a, b), opPop(), opPop()}, wantSynced: true},
		"deleted initial item is skipped and counted": {
			ops:          []queueOp{opReplace(a, b), opDelete(a), opAdd(c), opPop()},
			wantSynced:   true,
			wantInitials: []bool{false},
		},
		"later replace does not reopen the sync": {
			ops:          []queueOp{opReplace(a), opPop(), opReplace(b, c)},
			wantSynced:   true,
			wantInitials: []bool{false, false},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f := NewFIFO(MetaNamespaceKeyFunc)
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

func TestFIFO_CheckerIsNamedFIFO(t *testing.T) {
	f := NewFIFO(MetaNamespaceKeyFunc)
	if got := f.HasSyncedChecker().Name(); got != "FIFO" {
		t.Errorf("checker Name() = %q, want FIFO", got)
	}
	if f.Name() != "FIFO" || f.Done() != f.HasSyncedChecker().Done() {
		t.Errorf("FIFO's own Name/Done differ from its checker's")
	}
}

func TestFIFO_BadInputIsAKeyErrorAndChangesNothing(t *testing.T) {
	a := queuePod("a", "1")
	tests := map[string]func(f *FIFO) error{
		"add nil":                  func(f *FIFO) error { return f.Add(nil) },
		"update without meta":      func(f *FIFO) error { return f.Update(noMeta{"x"}) },
		"delete without meta":      func(f *FIFO) error { return f.Delete(noMeta{"x"}) },
		"replace with a bad entry": func(f *FIFO) error { return f.Replace(objs(queuePod("b", "1"), noMeta{"x"}), "1") },
	}
	for name, op := range tests {
		t.Run(name, func(t *testing.T) {
			f := NewFIFO(MetaNamespaceKeyFunc)
			mustOK(t, f.Add(a))
			err := op(f)
			var keyErr KeyError
			if !errors.As(err, &keyErr) {
				t.Fatalf("error = %v, want a KeyError", err)
			}
			if diff := cmp.Diff([]interface{}{a}, drainObjs(t, f)); diff != "" {
				t.Errorf("queue content (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFIFO_ProcessRunsUnderTheLockAndPanicsPropagate(t *testing.T) {
	f := NewFIFO(MetaNamespaceKeyFunc)
	mustOK(t, f.Add(queuePod("a", "1")))
	mustOK(t, f.Add(queuePod("b", "1")))
	p := capturePanic(func() {
		_, _ = f.Pop(func(interface{}, bool) error {
			if f.mu.TryLock() {
				f.mu.Unlock()
				t.Error("process ran without the FIFO's lock")
			}
			panic("boom")
		})
	})
	if p != "boom" {
		t.Fatalf("Pop panicked with %v, want boom", p)
	}
	// The FIFO is unlocked and consistent: the next Pop gets b.
	if diff := cmp.Diff([]interface{}{queuePod("b", "1")}, drainObjs(t, f)); diff != "" {
		t.Errorf("after the panic (-want +got):\n%s", diff)
	}
}

// queueMakers builds each queue kind for tests that hold for all of them.
var queueMakers = map[string]func() Queue{
	"FIFO":      func() Queue { return NewFIFO(MetaNamespaceKeyFunc) },
	"DeltaFIFO": func() Queue { return NewDeltaFIFOWithOptions(DeltaFIFOOptions{}) },
	"RealFIFO":  func() Queue { return NewRealFIFO(MetaNamespaceKeyFunc, newFakeKnown(), nil) },
	"RealFIFO atomic unlocked": func() Queue {
		return NewRealFIFOWithOptions(RealFIFOOptions{AtomicEvents: true, UnlockWhileProcessing: true})
	},
}

func TestQueues_CloseWakesAWaitingPop(t *testing.T) {
	for name, newQueue := range queueMakers {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				q := newQueue()
				errc := make(chan error, 1)
				go func() {
					_, err := q.Pop(func(interface{}, bool) error { return errors.New("nothing to pop") })
					errc <- err
				}()
				synctest.Wait()
				select {
				case err := <-errc:
					t.Fatalf("Pop returned %v before Close", err)
				default:
				}
				if q.(interface{ IsClosed() bool }).IsClosed() {
					t.Fatal("IsClosed before Close")
				}
				q.Close()
				if err := <-errc; !errors.Is(err, ErrFIFOClosed) {
					t.Errorf("Pop after Close = %v, want ErrFIFOClosed", err)
				}
			})
		})
	}
}

func TestQueues_CloseLetsQueuedItemsDrainFirst(t *testing.T) {
	for name, newQueue := range queueMakers {
		t.Run(name, func(t *testing.T) {
			q := newQueue()
			mustOK(t, q.Add(queuePod("a", "1")))
			q.Close()
			if !q.(interface{ IsClosed() bool }).IsClosed() {
				t.Error("IsClosed after Close = false")
			}
			popNow(t, q)
			_, err := q.Pop(func(interface{}, bool) error { return nil })
			if !errors.Is(err, ErrFIFOClosed) {
				t.Errorf("Pop of a closed empty queue = %v, want ErrFIFOClosed", err)
			}
		})
	}
}

func TestQueues_ProcessErrorIsReturnedAndItemDropped(t *testing.T) {
	for name, newQueue := range queueMakers {
		t.Run(name, func(t *testing.T) {
			q := newQueue()
			mustOK(t, q.Add(queuePod("a", "1")))
			want := errors.New("process failed")
			_, err := q.Pop(func(interface{}, bool) error { return want })
			if !errors.Is(err, want) {
				t.Errorf("Pop error = %v, want %v", err, want)
			}
			if n := queuedLen(q); n != 0 {
				t.Errorf("%d items still queued, want the failed one dropped", n)
			}
		})
	}
}

// TestQueues_ProcessPanicPropagates pins client-go's behaviour: a panic in
// the process function leaves Pop as the same panic, the queue unlocked
// and the popped item dropped.
func TestQueues_ProcessPanicPropagates(t *testing.T) {
	cause := errors.New("cause")
	for name, newQueue := range queueMakers {
		t.Run(name, func(t *testing.T) {
			q := newQueue()
			mustOK(t, q.Add(queuePod("a", "1")))
			mustOK(t, q.Add(queuePod("b", "1")))
			p := capturePanic(func() {
				_, _ = q.Pop(func(interface{}, bool) error { panic(cause) })
			})
			if p != cause {
				t.Fatalf("Pop panicked with %v, want %v", p, cause)
			}
			if n := len(drain(t, q)); n != 1 {
				t.Errorf("%d items left after the panic, want 1", n)
			}
		})
	}
}

func TestReportSlowProcessing(t *testing.T) {
	tests := map[string]struct {
		items, depth int
		took         time.Duration
		wantLog      bool
	}{
		"short backlog is never reported":    {items: 1, depth: 10, took: time.Minute},
		"fast item with a backlog":           {items: 1, depth: 11, took: 100 * time.Millisecond},
		"slow item with a backlog":           {items: 1, depth: 11, took: 101 * time.Millisecond, wantLog: true},
		"a batch gets an allowance per item": {items: 5, depth: 50, took: 450 * time.Millisecond},
		"the batch allowance is capped":      {items: 50, depth: 50, took: 1100 * time.Millisecond, wantLog: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(&buf)))
			reportSlowProcessing(logger, "ns/a", tc.items, tc.depth, tc.took)
			if got := strings.Contains(buf.String(), "Slow processing"); got != tc.wantLog {
				t.Errorf("logged = %v, want %v; log: %q", got, tc.wantLog, buf.String())
			}
		})
	}
}

// TestQueues_ConcurrentProducersAndOneConsumer runs producers against a
// consumer (under -race): every change arrives, and each producer's changes
// arrive in the order it made them.
func TestQueues_ConcurrentProducersAndOneConsumer(t *testing.T) {
	const producers, perProducer = 4, 200
	for name, newQueue := range queueMakers {
		t.Run(name, func(t *testing.T) {
			q := newQueue()
			var wg sync.WaitGroup
			for p := range producers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range perProducer {
						if err := q.Add(queuePod(fmt.Sprintf("p%d-%d", p, i), strconv.Itoa(i))); err != nil {
							t.Error(err)
							return
						}
					}
				}()
			}
			next := make([]int, producers) // next index expected from each producer
			for got := 0; got < producers*perProducer; got++ {
				_, err := q.Pop(func(obj interface{}, _ bool) error {
					if ds, ok := obj.(Deltas); ok {
						obj = ds.Newest().Object
					}
					var p, i int
					if _, err := fmt.Sscanf(obj.(*v1.Pod).Name, "p%d-%d", &p, &i); err != nil {
						return err
					}
					if i != next[p] {
						return fmt.Errorf("producer %d: got change %d, want %d", p, i, next[p])
					}
					next[p]++
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			wg.Wait()
			if n := queuedLen(q); n != 0 {
				t.Errorf("%d changes left", n)
			}
		})
	}
}
