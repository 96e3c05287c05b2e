package dedup

import (
	"context"
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
)

// counter is a Counter that counts.
type counter struct{ n int }

func (c *counter) Inc() { c.n++ }

// The guard finds a changed value of every kind it shares whole (map,
// slice, pointer) and names its field path.
func TestGuard_FieldPaths(t *testing.T) {
	tests := []struct {
		name  string
		write func(p *v1.Pod)
		path  string
	}{
		{"labels", func(p *v1.Pod) { p.Labels["tier"] = "x" }, "metadata.labels"},
		{"env", func(p *v1.Pod) { p.Spec.Containers[0].Env[0].Value = "x" }, "spec.containers[].env"},
		{"probe", func(p *v1.Pod) { p.Spec.Containers[0].ReadinessProbe.Exec.Command[0] = "x" }, "spec.containers[].readinessProbe.exec.command"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := eagerDeduper()
			store := newObjectStore()
			for i := range 4 {
				store.add(s.Share(dedupPod(1, i)))
			}
			logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
			ctx := klog.NewContext(context.Background(), logger)
			changed := &counter{}
			in := informerOf(store, "*v1.Pod")
			in.Changed = changed
			g := NewGuard(s, in)
			if n := g.Round(ctx); n != 0 {
				t.Fatalf("%d changed before the write", n)
			}
			obj, _, _ := store.GetByKey("ns-1/app-1-00000")
			tt.write(obj.(*v1.Pod))
			if n := g.Round(ctx); n < 1 || changed.n != n {
				t.Fatalf("the write was not found (%d found, %d counted)", n, changed.n)
			}
			logs := logger.GetSink().(ktesting.Underlier).GetBuffer().String()
			if want := fmt.Sprintf(`fieldPath=%q`, tt.path); !strings.Contains(logs, want) {
				t.Errorf("no line names %s: %q", tt.path, logs)
			}
			if !g.Suspect("ns-1/app-1-00003") || g.Suspect("ns-1/app-1-00003") {
				t.Error("a pod sharing the value is not marked once for the next list")
			}
			select {
			case <-g.Relists():
			default:
				t.Error("no relist asked for")
			}
		})
	}
}
