package cache

import (
	"context"
	"fmt"
	"maps"
	"math/rand"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"
)

// stallStep is one step of a stall rule scenario: the clock moves on by
// advance, the handler has returned returned calls in all, pop
// notifications are delivered, then push updates are queued, one object
// after another.
type stallStep struct {
	advance  time.Duration
	returned uint64
	pop      int
	push     int
	// wantMerging: whether the backlog merges after the step.
	wantMerging bool
	// wantLen, when not zero, is the pending count after the step.
	wantLen int
}

func TestStallRule(t *testing.T) {
	const limit = 4
	upTo := func(n int, step stallStep) []stallStep { // n copies of step
		out := make([]stallStep, n)
		for i := range out {
			out[i] = step
		}
		return out
	}
	// progressing: every push comes a timeout later, after one more call
	// returned.
	progressing := make([]stallStep, 0, 20)
	for i := range 20 {
		progressing = append(progressing, stallStep{advance: ListenerStallTimeout, returned: uint64(i + 1), push: 1})
	}
	tests := map[string]struct {
		rule    stallRule
		objects int
		steps   []stallStep
	}{
		"a handler that keeps returning calls never merges, however long and large its backlog": {
			rule: stallRule{limit: limit}, objects: 2,
			steps: append(progressing, stallStep{push: 1, returned: 20, wantLen: 21}),
		},
		"below the limit nothing merges, however long the handler is stuck": {
			rule: stallRule{limit: limit}, objects: 10,
			steps: []stallStep{{push: 3}, {advance: time.Hour, push: 1}, {advance: time.Hour, push: 0, wantLen: 4}},
		},
		"at the limit with no call returning for the timeout, merging starts and folds what is pending": {
			rule: stallRule{limit: limit}, objects: 2,
			steps: []stallStep{
				{push: 5}, // the fifth push found 4 pending: timing starts
				{advance: ListenerStallTimeout - 1, push: 1},         // not yet
				{advance: 1, push: 1, wantMerging: true, wantLen: 2}, // 7 updates of 2 objects fold into 2
				{advance: time.Hour, push: 10, wantMerging: true, wantLen: 2},
			},
		},
		"a call that returns stops merging; notifications queue one by one again": {
			rule: stallRule{limit: limit}, objects: 2,
			steps: []stallStep{
				{push: 5},
				{advance: ListenerStallTimeout, push: 1, wantMerging: true, wantLen: 2},
				{returned: 1, pop: 1, push: 3, wantLen: 4},
				// Stuck again: a new timeout must pass.
				{returned: 1, push: 1},
				{advance: ListenerStallTimeout - 1, returned: 1, push: 1, wantLen: 6},
				{advance: 1, returned: 1, push: 1, wantMerging: true, wantLen: 2},
			},
		},
		"a call returning while the backlog is at the limit restarts the timing": {
			rule: stallRule{limit: limit}, objects: 10,
			steps: []stallStep{
				{push: 5},
				{advance: ListenerStallTimeout - 1, returned: 1, push: 1}, // a call returned: the timing ends
				{advance: 1, returned: 1, push: 1},                        // none since: timing starts again
				{advance: ListenerStallTimeout - 1, returned: 1, push: 1},
				{advance: 1, returned: 1, push: 1, wantMerging: true},
			},
		},
		"time spent below the limit does not count": {
			rule: stallRule{limit: limit}, objects: 10,
			steps: []stallStep{
				{push: 5}, // timing starts
				{returned: 3, pop: 3, push: 0, wantLen: 2},
				{advance: time.Hour, returned: 3, push: 3}, // back at the limit an hour later
				{returned: 3, push: 1},                     // timing starts again
				{advance: ListenerStallTimeout - 1, returned: 3, push: 1},
				{advance: 1, returned: 3, push: 1, wantMerging: true},
			},
		},
		"no limit (a fixed limit or never merging was chosen) never detects a stall": {
			rule: stallRule{}, objects: 2,
			steps: append(upTo(3, stallStep{push: 10}), stallStep{advance: 100 * ListenerStallTimeout, push: 10, wantLen: 40}),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
			rule := tc.rule
			rule.clock = clk
			var b backlog
			next := 0
			for i, step := range tc.steps {
				clk.SetTime(clk.Now().Add(step.advance))
				for range step.pop {
					if _, _, ok := b.pop(); !ok {
						t.Fatalf("step %d: nothing to pop", i)
					}
				}
				for range step.push {
					rule.beforePush(&b, step.returned)
					next++
					name := fmt.Sprint("o", next%tc.objects)
					b.push(updateNotification(testPod("ns", name, strconv.Itoa(next-1)), testPod("ns", name, strconv.Itoa(next))))
				}
				if b.merging() != step.wantMerging {
					t.Fatalf("step %d: merging %t, want %t", i, b.merging(), step.wantMerging)
				}
				if step.wantLen != 0 && b.len() != step.wantLen {
					t.Fatalf("step %d: %d pending, want %d", i, b.len(), step.wantLen)
				}
			}
		})
	}
}

func TestSetListenerBacklogLimit_ChoosesThePolicyOfNewListeners(t *testing.T) {
	tests := map[string]struct {
		set           int
		wantStored    int
		wantFixed     int // the backlog's own limit: merging past it
		wantStallFrom int // the stall rule's limit
	}{
		"negative is the default: merge only when stalled": {set: -5, wantStored: -1, wantStallFrom: DefaultListenerBacklogLimit},
		"zero never merges":               {set: 0, wantStored: 0},
		"a positive limit merges past it": {set: 7, wantStored: 7, wantFixed: 7},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			prev := SetListenerBacklogLimit(tc.set)
			l := newProcessorListener(listenerConfig{logger: klog.Background(), handler: &infRecorder{}})
			stored := SetListenerBacklogLimit(prev)
			if prev != -1 {
				t.Errorf("the setting before the test was %d, want the default, -1", prev)
			}
			if stored != tc.wantStored {
				t.Errorf("setting %d stored %d, want %d", tc.set, stored, tc.wantStored)
			}
			if l.pending.limit != tc.wantFixed || l.stall.limit != tc.wantStallFrom {
				t.Errorf("fixed limit %d, stall limit %d; want %d and %d", l.pending.limit, l.stall.limit, tc.wantFixed, tc.wantStallFrom)
			}
		})
	}
}

// seqObject is a light object with a key and a resourceVersion.
func seqObject(i, rv int) *metav1.ObjectMeta {
	return &metav1.ObjectMeta{Namespace: "ns", Name: "o" + strconv.Itoa(i), ResourceVersion: strconv.Itoa(rv)}
}

// seqHandler applies notifications to its own copy of the objects' state
// and records every call that a correct ordered stream could not produce:
// an add of a present object, an update whose old object is not the
// version it holds, a delete of an absent object. gate, when set, is
// received from before each call.
type seqHandler struct {
	gate chan struct{}

	// mu guards the fields below.
	mu                     sync.Mutex
	state                  map[string]string
	adds, updates, deletes int
	wrong                  []string
}

func newSeqHandler(gate chan struct{}) *seqHandler {
	return &seqHandler{gate: gate, state: map[string]string{}}
}

func (h *seqHandler) enter() {
	if h.gate != nil {
		<-h.gate
	}
	h.mu.Lock()
}

func (h *seqHandler) OnAdd(obj interface{}, _ bool) {
	h.enter()
	defer h.mu.Unlock()
	m, _ := meta.Accessor(obj)
	h.adds++
	if rv, ok := h.state[m.GetName()]; ok {
		h.wrong = append(h.wrong, fmt.Sprintf("add of %s@%s while it holds @%s", m.GetName(), m.GetResourceVersion(), rv))
	}
	h.state[m.GetName()] = m.GetResourceVersion()
}

func (h *seqHandler) OnUpdate(oldObj, newObj interface{}) {
	h.enter()
	defer h.mu.Unlock()
	o, _ := meta.Accessor(oldObj)
	n, _ := meta.Accessor(newObj)
	h.updates++
	if rv, ok := h.state[n.GetName()]; !ok || rv != o.GetResourceVersion() {
		h.wrong = append(h.wrong, fmt.Sprintf("update of %s from @%s while it holds @%s (present %t)", n.GetName(), o.GetResourceVersion(), rv, ok))
	}
	h.state[n.GetName()] = n.GetResourceVersion()
}

func (h *seqHandler) OnDelete(obj interface{}) {
	h.enter()
	defer h.mu.Unlock()
	m, _ := meta.Accessor(obj)
	h.deletes++
	if _, ok := h.state[m.GetName()]; !ok {
		h.wrong = append(h.wrong, "delete of absent "+m.GetName())
	}
	delete(h.state, m.GetName())
}

// seqProcessor runs a shared processor on clk with one listener per
// handler, until the test ends.
func seqProcessor(t *testing.T, clk *clocktesting.FakeClock, handlers ...*seqHandler) []*processorListener {
	p := newSharedProcessor(clk, closedChannel())
	ls := make([]*processorListener, len(handlers))
	for i, h := range handlers {
		ls[i] = newProcessorListener(listenerConfig{logger: klog.Background(), handler: h, clock: clk, upstreamName: "test"})
		p.addListener(ls[i], nil)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return ls
}

func pendingOf(l *processorListener) (pending int, merging bool, merged uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.pending.len(), l.pending.merging(), l.pending.merged
}

// TestSharedProcessor_HandlersThatMakeProgressReceiveEveryNotification is
// the 10-handler burst: 10,000 adds and then 100,000 updates over 10,000
// objects. Each handler may return only one call per 10,000 notifications,
// so its backlog grows to about 110,000, eleven times the limit, while the
// clock moves on by 66 s, well past the stall timeout; since every handler
// returns a call within each timeout, every handler receives all 110,000
// notifications, in order.
func TestSharedProcessor_HandlersThatMakeProgressReceiveEveryNotification(t *testing.T) {
	const (
		handlers = 10
		objects  = 10000
		rounds   = 10 // of one update per object
		chunk    = 10000
	)
	synctest.Test(t, func(t *testing.T) {
		clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
		hs := make([]*seqHandler, handlers)
		for i := range hs {
			hs[i] = newSeqHandler(make(chan struct{}, 1))
		}
		ls := seqProcessor(t, clk, hs...)
		var stream []notification
		for i := range objects {
			stream = append(stream, addNotification(seqObject(i, 1), false))
		}
		for r := 1; r <= rounds; r++ {
			for i := range objects {
				stream = append(stream, updateNotification(seqObject(i, r), seqObject(i, r+1)))
			}
		}
		peak := 0
		for start := 0; start < len(stream); start += chunk {
			for _, h := range hs {
				h.gate <- struct{}{} // one call may return
			}
			synctest.Wait()
			for _, n := range stream[start : start+chunk] {
				for _, l := range ls {
					l.add(n)
				}
			}
			clk.Step(ListenerStallTimeout * 6 / 10)
			for _, l := range ls {
				pending, merging, _ := pendingOf(l)
				peak = max(peak, pending)
				if merging {
					t.Fatalf("a listener merges after %d notifications although its handler makes progress", start+chunk)
				}
			}
		}
		if peak < len(stream)-2*len(stream)/chunk-listenerBatchSize {
			t.Errorf("backlogs peaked at %d, want close to %d: the burst did not pile up", peak, len(stream))
		}
		for _, h := range hs {
			close(h.gate)
		}
		synctest.Wait()

		want := map[string]string{}
		for i := range objects {
			want["o"+strconv.Itoa(i)] = strconv.Itoa(rounds + 1)
		}
		for i, h := range hs {
			h.mu.Lock()
			got := [3]int{h.adds, h.updates, h.deletes}
			if got != [3]int{objects, objects * rounds, 0} {
				t.Errorf("handler %d: %d adds, %d updates, %d deletes; want %d, %d, 0 (every one of %d notifications)",
					i, got[0], got[1], got[2], objects, objects*rounds, len(stream))
			}
			if len(h.wrong) > 0 {
				t.Errorf("handler %d: %d calls out of order, first %q", i, len(h.wrong), h.wrong[0])
			}
			if !maps.Equal(want, h.state) {
				t.Errorf("handler %d: final state (-want +got):\n%s", i, cmp.Diff(want, h.state))
			}
			h.mu.Unlock()
		}
	})
}

// TestSharedProcessor_StalledHandlerBacklogIsBoundedByTheObjects pushes
// 200,000 notifications over 10,000 objects (adds, updates, deletes,
// re-creations) to a handler blocked in its first call, the clock moving
// one second per 1,000 notifications. The backlog grows to the limit plus
// what arrives during the stall timeout, then is folded and stays within
// one entry per object; once released, the handler ends with every
// object's last version and without the deleted ones, through a stream a
// correct handler can apply, and after one call returned merging stops.
func TestSharedProcessor_StalledHandlerBacklogIsBoundedByTheObjects(t *testing.T) {
	const (
		objects  = 10000
		events   = 200000
		perTick  = 1000
		tick     = time.Second
		afterRun = 1000
	)
	synctest.Test(t, func(t *testing.T) {
		clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
		gate := make(chan struct{})
		h := newSeqHandler(gate)
		l := seqProcessor(t, clk, h)[0]

		r := rand.New(rand.NewSource(14))
		model := map[int]int{} // object -> resourceVersion; absent: deleted
		rv := 0
		next := func() notification {
			rv++
			if len(model) < objects && rv <= objects {
				i := rv - 1
				model[i] = rv
				return addNotification(seqObject(i, rv), false)
			}
			i := r.Intn(objects)
			old, ok := model[i]
			switch {
			case !ok:
				model[i] = rv
				return addNotification(seqObject(i, rv), false)
			case r.Intn(10) == 0:
				delete(model, i)
				return deleteNotification(seqObject(i, old))
			default:
				model[i] = rv
				return updateNotification(seqObject(i, old), seqObject(i, rv))
			}
		}

		l.add(next())
		synctest.Wait() // the handler is now blocked in its first call
		peak, stalledAt := 0, 0
		for e := 2; e <= events; e++ {
			l.add(next())
			pending, merging, _ := pendingOf(l)
			peak = max(peak, pending)
			if merging && stalledAt == 0 {
				stalledAt = e
			}
			if stalledAt != 0 && pending > objects {
				t.Fatalf("after %d notifications: %d pending for %d objects", e, pending, objects)
			}
			if e%perTick == 0 {
				clk.Step(tick)
			}
		}
		// Pending reached the limit at notification limit+2 (one is in
		// the handler); the stall is found a timeout later.
		perTimeout := int(ListenerStallTimeout/tick) * perTick
		if stalledAt == 0 || stalledAt > DefaultListenerBacklogLimit+perTimeout+perTick {
			t.Fatalf("merging started at notification %d, want by %d", stalledAt, DefaultListenerBacklogLimit+perTimeout+perTick)
		}
		if limit := DefaultListenerBacklogLimit + perTimeout; peak > limit {
			t.Errorf("backlog peaked at %d, want at most the limit plus a timeout's notifications, %d", peak, limit)
		}
		_, _, merged := pendingOf(l)

		close(gate)
		synctest.Wait()
		want := map[string]string{}
		for i, v := range model {
			want["o"+strconv.Itoa(i)] = strconv.Itoa(v)
		}
		h.mu.Lock()
		if len(h.wrong) > 0 {
			t.Errorf("%d calls a correct stream could not make, first %q", len(h.wrong), h.wrong[0])
		}
		if !maps.Equal(want, h.state) {
			t.Errorf("final state (-want +got):\n%s", cmp.Diff(want, h.state))
		}
		before := h.adds + h.updates + h.deletes
		h.mu.Unlock()
		if merged == 0 || before >= events {
			t.Errorf("%d of %d notifications delivered, %d merged: nothing was merged", before, events, merged)
		}

		// The handler returns calls again: nothing more is merged.
		for range afterRun {
			old, ok := model[0]
			rv++
			model[0] = rv
			if !ok {
				l.add(addNotification(seqObject(0, rv), false))
				continue
			}
			l.add(updateNotification(seqObject(0, old), seqObject(0, rv)))
		}
		synctest.Wait()
		_, merging, mergedAfter := pendingOf(l)
		h.mu.Lock()
		defer h.mu.Unlock()
		if got := h.adds + h.updates + h.deletes - before; got != afterRun || merging || mergedAfter != merged {
			t.Errorf("after release: %d of %d delivered, merging %t, %d more merged", got, afterRun, merging, mergedAfter-merged)
		}
		if len(h.wrong) > 0 || h.state["o0"] != strconv.Itoa(rv) {
			t.Errorf("after release: %d wrong calls, o0 at @%s, want @%d", len(h.wrong), h.state["o0"], rv)
		}
	})
}

func TestBacklog_GivesBackTheRoomOfABurstOnceBurstsStop(t *testing.T) {
	fill := func(b *backlog, n int) {
		// A negative n is a burst of the initial list's adds.
		initial := n < 0
		for i := range max(n, -n) {
			b.push(addNotification(seqObject(i, 1), initial))
		}
		for {
			if _, _, ok := b.pop(); !ok {
				return
			}
		}
	}
	tests := map[string]struct {
		bursts  []int
		wantCap int
	}{
		"small backlogs keep their room":                      {bursts: []int{1000, 10}, wantCap: 1024},
		"a burst's room stays while bursts of its size come":  {bursts: []int{5000, 3000}, wantCap: 8192},
		"and is given back after a small one":                 {bursts: []int{5000, 3000, 10}, wantCap: 0},
		"the initial list's room is given back once drained":  {bursts: []int{-5000}, wantCap: 0},
		"and a small initial list keeps the room kept always": {bursts: []int{-1000}, wantCap: 1024},
		"a burst after the initial list keeps its room again": {bursts: []int{-5000, 5000}, wantCap: 8192},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var b backlog
			for _, n := range tc.bursts {
				fill(&b, n)
			}
			if got := cap(b.entries); got != tc.wantCap {
				t.Errorf("room for %d entries after bursts %v, want %d", got, tc.bursts, tc.wantCap)
			}
		})
	}
}

// event is a readable form of a delivered notification for comparisons.
func describe(n notification) string {
	name := func(obj interface{}) string {
		switch o := obj.(type) {
		case *v1.Pod:
			return o.Name + "@" + o.ResourceVersion
		case DeletedFinalStateUnknown:
			return "tombstone:" + o.Key
		}
		return fmt.Sprint(obj)
	}
	switch n.kind {
	case notifyAdd:
		if n.initialList {
			return "add " + name(n.newObj) + " initial"
		}
		return "add " + name(n.newObj)
	case notifyUpdate:
		return "update " + name(n.oldObj) + "->" + name(n.newObj)
	default:
		return "delete " + name(n.oldObj)
	}
}

func drainBacklog(b *backlog) []string {
	out := []string{}
	for {
		first, second, ok := b.pop()
		if !ok {
			return out
		}
		out = append(out, describe(first))
		if second != nil {
			out = append(out, describe(*second))
		}
	}
}

func bpod(name, rv string) *v1.Pod { return testPod("ns", name, rv) }

func TestBacklog_MergesPastTheLimit(t *testing.T) {
	tests := map[string]struct {
		limit int
		in    []notification
		want  []string
		// wantCancelledInitial counts initial adds that vanished.
		wantCancelledInitial uint64
	}{
		"below the limit nothing merges": {
			limit: 10,
			in:    []notification{addNotification(bpod("a", "1"), false), updateNotification(bpod("a", "1"), bpod("a", "2"))},
			want:  []string{"add a@1", "update a@1->a@2"},
		},
		"no limit never merges": {
			limit: 0,
			in:    []notification{updateNotification(bpod("a", "1"), bpod("a", "2")), updateNotification(bpod("a", "2"), bpod("a", "3"))},
			want:  []string{"update a@1->a@2", "update a@2->a@3"},
		},
		"update+update keeps the oldest old and the newest new": {
			limit: 1,
			in: []notification{
				updateNotification(bpod("a", "1"), bpod("a", "2")),
				updateNotification(bpod("a", "2"), bpod("a", "3")),
				updateNotification(bpod("a", "3"), bpod("a", "4")),
			},
			want: []string{"update a@1->a@4"},
		},
		"add+update is an add of the newest": {
			limit: 1,
			in:    []notification{addNotification(bpod("a", "1"), true), updateNotification(bpod("a", "1"), bpod("a", "2"))},
			want:  []string{"add a@2 initial"},
		},
		"add+delete vanishes": {
			limit:                1,
			in:                   []notification{addNotification(bpod("a", "1"), true), deleteNotification(bpod("a", "1")), addNotification(bpod("b", "1"), false)},
			want:                 []string{"add b@1"},
			wantCancelledInitial: 1,
		},
		"update+delete is a delete of the newest": {
			limit: 1,
			in:    []notification{updateNotification(bpod("a", "1"), bpod("a", "2")), deleteNotification(bpod("a", "2"))},
			want:  []string{"delete a@2"},
		},
		"delete survives a re-create": {
			limit: 1,
			in: []notification{
				deleteNotification(bpod("a", "1")),
				addNotification(bpod("a", "5"), false),
				updateNotification(bpod("a", "5"), bpod("a", "6")),
			},
			want: []string{"delete a@1", "add a@6"},
		},
		"delete, re-create, delete leaves the first delete": {
			limit: 1,
			in: []notification{
				deleteNotification(bpod("a", "1")),
				addNotification(bpod("a", "5"), false),
				deleteNotification(bpod("a", "5")),
			},
			want: []string{"delete a@1"},
		},
		"a real final state beats a tombstone": {
			limit: 1,
			in: []notification{
				deleteNotification(bpod("a", "3")),
				deleteNotification(DeletedFinalStateUnknown{Key: "ns/a", Obj: bpod("a", "2")}),
			},
			want: []string{"delete a@3"},
		},
		"objects keep their first position": {
			limit: 2,
			in: []notification{
				updateNotification(bpod("a", "1"), bpod("a", "2")),
				updateNotification(bpod("b", "1"), bpod("b", "2")),
				updateNotification(bpod("a", "2"), bpod("a", "3")),
			},
			want: []string{"update a@1->a@3", "update b@1->b@2"},
		},
		"objects without a key are never merged": {
			limit: 1,
			in:    []notification{addNotification("x", false), addNotification("x", false)},
			want:  []string{"add x", "add x"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			b := &backlog{limit: tc.limit}
			for _, n := range tc.in {
				b.push(n)
			}
			if diff := cmp.Diff(tc.want, drainBacklog(b)); diff != "" {
				t.Errorf("delivered (-want +got):\n%s", diff)
			}
			if b.cancelledInitial != tc.wantCancelledInitial {
				t.Errorf("cancelledInitial = %d, want %d", b.cancelledInitial, tc.wantCancelledInitial)
			}
			if b.len() != 0 {
				t.Errorf("len after drain = %d", b.len())
			}
		})
	}
}

// replayState applies delivered notifications the way a handler building
// its own cache would.
func replayState(t *testing.T, state map[string]string, n notification) {
	t.Helper()
	switch n.kind {
	case notifyAdd, notifyUpdate:
		pod := n.newObj.(*v1.Pod)
		state[pod.Name] = pod.ResourceVersion
	case notifyDelete:
		obj := n.oldObj
		if d, ok := obj.(DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		pod := obj.(*v1.Pod)
		if _, ok := state[pod.Name]; !ok {
			t.Fatalf("delete of %s, which the handler never saw", pod.Name)
		}
		delete(state, pod.Name)
	}
}

// popAndReplay replays the backlog's next entry (one notification, or
// two a merge left) onto handler's state; false when the backlog is empty.
func popAndReplay(t *testing.T, b *backlog, handler map[string]string) bool {
	t.Helper()
	first, second, ok := b.pop()
	if !ok {
		return false
	}
	replayState(t, handler, first)
	if second != nil {
		replayState(t, handler, *second)
	}
	return true
}

// TestBacklog_MergedStreamReachesTheSameState feeds random event streams
// with partial drains and checks that a handler replaying what it is given
// ends where the unmerged stream ends, while the backlog never holds more
// entries than the limit plus the number of distinct objects.
func TestBacklog_MergedStreamReachesTheSameState(t *testing.T) {
	r := rand.New(rand.NewSource(testSeed(t)))
	for run := 0; run < 200; run++ {
		const objects = 8
		limit := 1 + r.Intn(6)
		b := &backlog{limit: limit}
		truth := map[string]string{}
		handler := map[string]string{}
		maxLen := 0
		for step := 0; step < 200; step++ {
			name := fmt.Sprint("o", r.Intn(objects))
			rv := fmt.Sprint(step + 1)
			old, exists := truth[name]
			switch {
			case !exists:
				b.push(addNotification(bpod(name, rv), false))
				truth[name] = rv
			case r.Intn(3) == 0:
				b.push(deleteNotification(bpod(name, old)))
				delete(truth, name)
			default:
				b.push(updateNotification(bpod(name, old), bpod(name, rv)))
				truth[name] = rv
			}
			if b.len() > maxLen {
				maxLen = b.len()
			}
			for k := r.Intn(3); k > 0 && popAndReplay(t, b, handler); k-- {
			}
		}
		for popAndReplay(t, b, handler) {
		}
		if diff := cmp.Diff(truth, handler); diff != "" {
			t.Fatalf("run %d (limit %d): handler state (-truth +handler):\n%s", run, limit, diff)
		}
		if maxLen > limit+objects {
			t.Fatalf("run %d: backlog reached %d entries, bound is %d", run, maxLen, limit+objects)
		}
	}
}
