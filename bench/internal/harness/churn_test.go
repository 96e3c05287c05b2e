package harness

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestMeasureChurnWaitsForTheAnnouncedEvents: the window closes only once
// the handler has seen as many notifications as End announced, counted
// from Begin (notifications before it are not the churn's).
func TestMeasureChurnWaitsForTheAnnouncedEvents(t *testing.T) {
	defer goleak.VerifyNone(t)
	tests := map[string]struct {
		before, during, late int64 // delivered before Begin, before End returns, after it
		announced            int64
		timeout              time.Duration
		wantEvents           int64
		wantErr              string
	}{
		"every event in before End returns": {before: 7, during: 10, announced: 10, timeout: time.Minute, wantEvents: 10},
		"the last events arrive after End":  {before: 7, during: 4, late: 6, announced: 10, timeout: time.Minute, wantEvents: 10},
		"events missing: the context ends the wait": {during: 3, announced: 10, timeout: 20 * time.Millisecond, wantEvents: 3,
			wantErr: "waiting for 10 notifications, saw 3"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), tt.timeout)
			defer cancel()
			var n atomic.Int64
			n.Store(tt.before)
			lateDone := make(chan struct{})
			cfg := ChurnConfig{
				Begin: func(context.Context) error { return nil },
				End: func(context.Context) (int64, error) {
					n.Add(tt.during)
					go func() {
						defer close(lateDone)
						for range tt.late {
							time.Sleep(time.Millisecond)
							n.Add(1)
						}
					}()
					return tt.announced, nil
				},
			}
			probe := ChurnProbe{Pods: 5, Delivered: n.Load, Peak: NewHeapPeak()}
			res, err := MeasureChurn(ctx, cfg, probe)
			<-lateDone
			if tt.wantErr == "" && err != nil {
				t.Fatalf("MeasureChurn: %v", err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("MeasureChurn error %v, want one containing %q", err, tt.wantErr)
			}
			if res.Events != tt.wantEvents || res.Pods != 5 {
				t.Errorf("events %d, pods %d; want %d and 5", res.Events, res.Pods, tt.wantEvents)
			}
			if err == nil && (res.Seconds <= 0 || res.AfterHeap <= 0) {
				t.Errorf("window %.3f s, heap after %.0f B; want both above 0", res.Seconds, res.AfterHeap)
			}
			if err == nil && (res.GCLive <= 0 || res.GCCycleSeconds <= 0 || res.GOGC == 0) {
				t.Errorf("GC cycle %g s at %.0f B live, GOGC %d; want a cycle measured after the window",
					res.GCCycleSeconds, res.GCLive, res.GOGC)
			}
		})
	}
}

func TestMeasureChurnBeginError(t *testing.T) {
	defer goleak.VerifyNone(t)
	boom := errors.New("parent gone")
	cfg := ChurnConfig{
		Begin: func(context.Context) error { return boom },
		End:   func(context.Context) (int64, error) { t.Fatal("End called after Begin failed"); return 0, nil },
	}
	probe := ChurnProbe{Pods: 1, Delivered: func() int64 { return 0 }, Peak: NewHeapPeak()}
	_, err := MeasureChurn(context.Background(), cfg, probe)
	if !errors.Is(err, boom) {
		t.Errorf("err = %v, want it to wrap %v", err, boom)
	}
}

func TestChurnResultPerEvent(t *testing.T) {
	r := ChurnResult{Pods: 4, Events: 200, CPUSeconds: 0.01, BeforeHeap: 400, AfterHeap: 800}
	if got := r.CPUPerEvent(); got != 50e-6 {
		t.Errorf("CPUPerEvent = %g, want 50e-6", got)
	}
	if r.HeapPerPodBefore() != 100 || r.HeapPerPodAfter() != 200 {
		t.Errorf("heap per pod %g before, %g after; want 100 and 200", r.HeapPerPodBefore(), r.HeapPerPodAfter())
	}
	if (ChurnResult{}).CPUPerEvent() != 0 {
		t.Error("CPUPerEvent without events is not 0")
	}
}

// TestHeapPeakReadsOnlyWhenStarted: Observe reads nothing before Start or
// after Stop, and the peaks count from Start, each figure on its own.
func TestHeapPeakReadsOnlyWhenStarted(t *testing.T) {
	heap := &fakeHeap{first: HeapFigures{Inuse: 10, Live: 50}, then: HeapFigures{Inuse: 100, Live: 5}}
	p := &HeapPeak{read: heap.read}
	p.Observe()
	if heap.reads != 0 {
		t.Fatalf("%d reads before Start, want 0", heap.reads)
	}
	p.Start()
	p.Observe()
	got := p.Stop()
	if want := (HeapFigures{Inuse: 100, Live: 50}); got != want {
		t.Errorf("peaks %+v, want %+v", got, want)
	}
	p.Observe()
	if heap.reads != 3 {
		t.Errorf("%d reads (Start, Observe, Stop), want 3", heap.reads)
	}
}

func TestCountingHandlerObservesEachNotification(t *testing.T) {
	h := NewCountingHandler(1, 1)
	var seen []int64
	h.ObserveEach(func() { seen = append(seen, h.Delivered()) })
	h.OnAdd(nil, false)
	h.OnUpdate(nil, nil)
	h.OnDelete(nil)
	if want := []int64{1, 2, 3}; !slices.Equal(seen, want) {
		t.Errorf("observed after %v notifications, want %v: once each, after counting it", seen, want)
	}
}
