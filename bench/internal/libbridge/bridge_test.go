package libbridge

import (
	"math"
	"testing"

	"go.uber.org/goleak"

	"github.com/kcache/cache/bench/internal/harness"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestWorkloadsOnce runs each workload of both libraries once at tiny
// sizes, and checks the two list the same workloads.
func TestWorkloadsOnce(t *testing.T) {
	fx := harness.NewFixture(harness.TinySizes)
	native, bridge := Native(), Bridge()
	if len(native.Workloads) != len(bridge.Workloads) {
		t.Fatalf("%d native workloads, %d bridge workloads", len(native.Workloads), len(bridge.Workloads))
	}
	for i, lib := range []harness.Library{native, bridge} {
		for j, w := range lib.Workloads {
			if i == 1 && w.Name != native.Workloads[j].Name {
				t.Errorf("workload %d: bridge %s, native %s", j, w.Name, native.Workloads[j].Name)
			}
			t.Run(lib.Name+"/"+w.Name, func(t *testing.T) {
				res, err := harness.Run(w, fx.Sizes, fx)
				if err != nil {
					t.Fatal(err)
				}
				if ns := res.NsPerOp; ns <= 0 || math.IsNaN(ns) {
					t.Errorf("ns/op = %v, want a positive time", ns)
				}
			})
		}
	}
}

// BenchmarkList lists a synced informer's cache of 10k pods through
// GetIndexer, natively and through the wrapper; with -count the two
// alternate.
func BenchmarkList(b *testing.B) {
	fx := harness.NewFixture(harness.FullSizes)
	for _, c := range []struct {
		name  string
		build builder
	}{{NativeName, buildNative}, {BridgeName, buildBridge}} {
		b.Run(c.name, func(b *testing.B) {
			h := harness.NewCountingHandler(len(fx.InformerPods()), 0)
			src := sourceFor(fx)
			defer src.Shutdown()
			inf, err := c.build(src, []*harness.CountingHandler{h})
			if err != nil {
				b.Fatal(err)
			}
			stop := start(b.Context(), inf)
			defer stop()
			if err := h.WaitAdds(b.Context()); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				sink += len(inf.list())
			}
		})
	}
}
