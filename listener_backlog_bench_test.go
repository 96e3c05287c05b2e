package cache

import (
	"fmt"
	"maps"
	"math/rand"
	"runtime"
	"strconv"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"
)

// BenchmarkListener_StalledHandlerHeap pushes 200,000 notifications over
// 10,000 pods (adds, updates, deletes, re-creations; each a new pod, as a
// watch decodes them) to a listener whose handler is blocked in its first
// call, the fake clock moving one second per 1,000 notifications. It
// reports the peak of the live heap above the heap before the run (after
// a GC every 10,000 notifications), the peak backlog, and checks that the
// handler, once released, ends with every pod's last version. "default"
// is the stall rule; "never-merge" is SetListenerBacklogLimit(0), the
// unbounded buffer of client-go, for comparison.
func BenchmarkListener_StalledHandlerHeap(b *testing.B) {
	for _, tc := range []struct {
		name  string
		limit int
	}{{"default", -1}, {"never-merge", 0}} {
		b.Run(tc.name, func(b *testing.B) {
			defer SetListenerBacklogLimit(SetListenerBacklogLimit(tc.limit))
			var res stalledRun
			for b.Loop() {
				var err error
				if res, err = runStalledHandler(10000, 200000); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(res.peakHeap)/(1<<20), "peak-heap-MB")
			b.ReportMetric(float64(res.peakPending), "peak-pending")
			b.ReportMetric(float64(res.delivered), "delivered")
		})
	}
}

type stalledRun struct {
	peakHeap    uint64
	peakPending int
	delivered   int
}

// sentinelHandler is a seqHandler that closes seen when it is handed the
// add of the object named sentinel.
type sentinelHandler struct {
	*seqHandler
	seen chan struct{}
}

func (h sentinelHandler) OnAdd(obj interface{}, initial bool) {
	h.seqHandler.OnAdd(obj, initial)
	if p, ok := obj.(*v1.Pod); ok && p.Name == "sentinel" {
		close(h.seen)
	}
}

func runStalledHandler(objects, events int) (stalledRun, error) {
	var res stalledRun
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	gate := make(chan struct{})
	h := sentinelHandler{newSeqHandler(gate), make(chan struct{})}
	l := newProcessorListener(listenerConfig{logger: klog.Background(), handler: h, clock: clk, upstreamName: "bench"})
	go l.run()
	defer func() {
		l.stop()
		<-l.ShutdownChan()
	}()

	heap := func() uint64 {
		var ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	base := heap()
	r := rand.New(rand.NewSource(14))
	model := make(map[int]int, objects)
	pod := func(i, rv int) *v1.Pod { return testPod("ns", "o"+strconv.Itoa(i), strconv.Itoa(rv)) }
	for rv := 1; rv <= events; rv++ {
		i := rv - 1
		if rv > objects {
			i = r.Intn(objects)
		}
		old, ok := model[i]
		switch {
		case !ok:
			model[i] = rv
			l.add(addNotification(pod(i, rv), false))
		case r.Intn(10) == 0:
			delete(model, i)
			l.add(deleteNotification(pod(i, old)))
		default:
			model[i] = rv
			l.add(updateNotification(pod(i, old), pod(i, rv)))
		}
		if pending, _, _ := pendingOf(l); pending > res.peakPending {
			res.peakPending = pending
		}
		if rv%1000 == 0 {
			clk.Step(time.Second)
		}
		if rv%10000 == 0 {
			if now := heap(); now > base {
				res.peakHeap = max(res.peakHeap, now-base)
			}
		}
	}

	close(gate)
	l.add(addNotification(testPod("ns", "sentinel", "0"), false))
	<-h.seen
	h.mu.Lock()
	defer h.mu.Unlock()
	want := make(map[string]string, len(model)+1)
	for i, rv := range model {
		want["o"+strconv.Itoa(i)] = strconv.Itoa(rv)
	}
	want["sentinel"] = "0"
	if len(h.wrong) > 0 {
		return res, fmt.Errorf("%d calls a correct stream could not make, first %q", len(h.wrong), h.wrong[0])
	}
	if !maps.Equal(want, h.state) {
		return res, fmt.Errorf("the released handler holds %d objects, want %d, or other versions", len(h.state), len(want))
	}
	res.delivered = h.adds + h.updates + h.deletes
	return res, nil
}
