package harness

import (
	"context"
	"strings"
	"testing"
)

func TestCountingHandler(t *testing.T) {
	tokens := make(chan struct{}, 3)
	h := NewCountingHandler(2, 2, tokens)
	h.OnAdd(nil, true)
	h.OnAdd(nil, true)
	if err := h.WaitAdds(context.Background()); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		tokens <- struct{}{}
	}
	h.OnUpdate(nil, nil)
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	err := h.WaitUpdates(canceled)
	if err == nil || !strings.Contains(err.Error(), "1 updates (want 2)") {
		t.Fatalf("WaitUpdates = %v, want an error naming the counts", err)
	}
	h.OnUpdate(nil, nil)
	h.OnUpdate(nil, nil) // past the target: must not close twice
	if err := h.WaitUpdates(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(tokens) != 0 || h.Updates() != 3 {
		t.Errorf("tokens left %d, updates %d; want 0 and 3", len(tokens), h.Updates())
	}
	if err := NewCountingHandler(0, 0, nil).WaitUpdates(canceled); err != nil {
		t.Errorf("zero target: WaitUpdates = %v, want nil at once", err)
	}
}
