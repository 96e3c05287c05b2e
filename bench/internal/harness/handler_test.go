package harness

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestCountingHandler(t *testing.T) {
	progress := make(chan struct{}, 1)
	h := NewCountingHandler(2, 2)
	h.SignalProgress(progress, 2)
	h.OnAdd(nil, true)
	h.OnAdd(nil, true)
	if err := h.WaitAdds(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.OnUpdate(nil, nil)
	if len(progress) != 0 {
		t.Fatal("progress signalled after 1 update, want every 2")
	}
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	err := h.WaitUpdates(canceled)
	if err == nil || !strings.Contains(err.Error(), "1 updates (want 2)") {
		t.Fatalf("WaitUpdates = %v, want an error naming the counts", err)
	}
	h.OnUpdate(nil, nil)
	if len(progress) != 1 {
		t.Fatal("no progress signal after 2 updates")
	}
	h.OnUpdate(nil, nil) // past the target: must not close twice
	h.OnUpdate(nil, nil) // a second signal while one is pending is dropped
	if err := h.WaitUpdates(context.Background()); err != nil {
		t.Fatal(err)
	}
	if h.Updates() != 4 || len(progress) != 1 {
		t.Errorf("updates %d, pending signals %d; want 4 and 1", h.Updates(), len(progress))
	}
	if err := NewCountingHandler(0, 0).WaitUpdates(canceled); err != nil {
		t.Errorf("zero target: WaitUpdates = %v, want nil at once", err)
	}
}

func TestCountingHandlerFinalVersions(t *testing.T) {
	pod := func(rv uint64) interface{} { return ClusterLayout.Pod(0, rv, 0) }
	h := NewCountingHandler(0, 100)
	h.ExpectFinal(10, 2)
	h.OnUpdate(nil, pod(3))
	h.OnUpdate(nil, pod(10))
	h.OnUpdate(nil, "not an object") // ignored, not a final version
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	if err := h.WaitFinal(canceled); err == nil || !strings.Contains(err.Error(), "1 final versions (want 2)") {
		t.Fatalf("WaitFinal = %v, want an error after one final version", err)
	}
	h.OnUpdate(nil, pod(11))
	if err := h.WaitFinal(canceled); err != nil {
		t.Fatalf("WaitFinal = %v after two final versions", err)
	}
}

// watchedPod is a pod that records the handler's update count when the
// handler reads its resourceVersion to decide whether it is a final one.
type watchedPod struct {
	*v1.Pod
	h    *CountingHandler
	seen int64
}

func (p *watchedPod) GetResourceVersion() string {
	p.seen = p.h.Updates()
	return p.Pod.GetResourceVersion()
}

// TestCountingHandlerCountsBeforeFinal checks that an update is counted
// before its final version is examined and may close WaitFinal's channel:
// otherwise a waiter woken by the last final version could call
// CheckDelivered before that update is counted and report one missing.
func TestCountingHandlerCountsBeforeFinal(t *testing.T) {
	tests := map[string]struct {
		rv       uint64
		wantSeen int64
	}{
		"the final version":  {rv: 10, wantSeen: 1},
		"an earlier version": {rv: 3, wantSeen: 1},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			h := NewCountingHandler(0, 1)
			h.ExpectFinal(10, 1)
			p := &watchedPod{Pod: ClusterLayout.Pod(0, tc.rv, 0), h: h}
			h.OnUpdate(nil, p)
			if p.seen != tc.wantSeen {
				t.Errorf("the handler had counted %d updates when it examined the version, want %d", p.seen, tc.wantSeen)
			}
		})
	}
}

func TestCountingHandlerCheckDelivered(t *testing.T) {
	tests := map[string]struct {
		adds, updates, deletes int
		wantErr                string
	}{
		"exactly every notification": {adds: 2, updates: 3},
		"one update merged away":     {adds: 2, updates: 2, wantErr: "received 4 of 5 notifications"},
		"one add missing":            {adds: 1, updates: 3, wantErr: "1 adds (want 2)"},
		"one update too many":        {adds: 2, updates: 4, wantErr: "4 updates (want 3)"},
		"an unexpected delete":       {adds: 2, updates: 3, deletes: 1, wantErr: "1 deletes (want 0)"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			h := NewCountingHandler(2, 3)
			for range tc.adds {
				h.OnAdd(nil, false)
			}
			for range tc.updates {
				h.OnUpdate(nil, nil)
			}
			for range tc.deletes {
				h.OnDelete(nil)
			}
			if got := h.Delivered(); got != int64(tc.adds+tc.updates+tc.deletes) {
				t.Errorf("Delivered = %d, want %d", got, tc.adds+tc.updates+tc.deletes)
			}
			err := h.CheckDelivered(2, 3)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("CheckDelivered = %v, want nil", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("CheckDelivered = %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}
