package harness

import (
	"context"
	"strings"
	"testing"
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
