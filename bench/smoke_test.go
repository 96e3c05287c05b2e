package bench

import (
	"context"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/kcache/cache/bench/internal/harness"
	"github.com/kcache/cache/bench/internal/libclientgo"
	"github.com/kcache/cache/bench/internal/libkcache"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func libraries() []harness.Library {
	return []harness.Library{libclientgo.Library(), libkcache.Library()}
}

// TestLibrariesListTheSameWorkloads guards the pairing cmd/compare relies
// on: the same names and groups, in the same order.
func TestLibrariesListTheSameWorkloads(t *testing.T) {
	type entry struct{ Name, Group string }
	names := func(l harness.Library) []entry {
		var out []entry
		for _, w := range l.Workloads {
			out = append(out, entry{w.Name, string(w.Group)})
		}
		return out
	}
	cg, kc := libclientgo.Library(), libkcache.Library()
	if diff := cmp.Diff(names(cg), names(kc)); diff != "" {
		t.Errorf("workloads differ (-client-go +kcache):\n%s", diff)
	}
	if cg.Name == kc.Name {
		t.Errorf("both libraries are named %q", cg.Name)
	}
}

// TestEveryWorkloadOnce runs each workload of each library once at tiny
// sizes and checks that it measured something and left the shared
// fixture as it found it.
func TestEveryWorkloadOnce(t *testing.T) {
	fx := harness.NewFixture(harness.TinySizes)
	podsBefore := append([]interface{}(nil), fx.PodList()...)
	for _, lib := range libraries() {
		for _, w := range lib.Workloads {
			t.Run(lib.Name+"/"+w.Name, func(t *testing.T) {
				res, err := harness.Run(w, fx.Sizes, fx)
				if err != nil {
					t.Fatalf("run: %v", err)
				}
				if res.NsPerOp <= 0 || math.IsNaN(res.NsPerOp) {
					t.Errorf("ns/op = %v, want a positive time", res.NsPerOp)
				}
				switch w.Group {
				case harness.GroupInformer:
					if res.N != fx.Sizes.Events || res.Extra["events/s"] <= 0 {
						t.Errorf("N = %d, events/s = %v; want N = %d and a positive rate",
							res.N, res.Extra["events/s"], fx.Sizes.Events)
					}
				case harness.GroupWriteRate:
					if _, ok := res.Extra["lists/s"]; !ok {
						t.Errorf("no lists/s reported: %v", res.Extra)
					}
				default:
					if res.N < 1 {
						t.Errorf("N = %d, want at least one op", res.N)
					}
				}
			})
		}
	}
	for i, p := range fx.PodList() {
		if p != podsBefore[i] {
			t.Fatalf("a workload changed the shared pod list at %d", i)
		}
	}
	for i, p := range fx.Pods() {
		if p.ResourceVersion != strconv.Itoa(i+1) {
			t.Fatalf("a workload changed fixture pod %d: resourceVersion %q, want %d", i, p.ResourceVersion, i+1)
		}
	}
}

// TestMemoryProbe runs the memory probe of each library in this process at
// a small size, by streaming list and by paged list (1200 pods are three
// pages on the relist).
func TestMemoryProbe(t *testing.T) {
	for _, lib := range libraries() {
		for _, watchList := range []bool{true, false} {
			name := lib.Name + "/list"
			if watchList {
				name = lib.Name + "/watchlist"
			}
			t.Run(name, func(t *testing.T) {
				res, err := lib.Memory(context.Background(), harness.MemConfig{
					Pods: 1200, WatchList: watchList, ChangedEvery: 10, Timeout: time.Minute,
				})
				if err != nil {
					t.Fatalf("memory probe: %v", err)
				}
				if res.Pods != 1200 || res.SteadyBytes <= 0 || res.ObjectBytes <= 0 ||
					res.SyncPeakInuse <= 0 || res.RelistPeakInuse <= 0 {
					t.Errorf("implausible result: %+v", res)
				}
			})
		}
	}
}

// TestInformerBurstDeliversEveryNotification runs the 10-handler informer
// workload of each library at the comparison's full informer size, 10,000
// pods and a burst of 100,000 events: far past kcache's listener backlog
// limit. The workload fails unless every handler received all 110,000
// notifications (one add per pod, one update per event).
func TestInformerBurstDeliversEveryNotification(t *testing.T) {
	if testing.Short() {
		t.Skip("a full-size burst; -short skips it")
	}
	sizes := harness.TinySizes
	sizes.InformerPods, sizes.Events, sizes.Timeout = harness.FullSizes.InformerPods, harness.FullSizes.Events, 2*time.Minute
	fx := harness.NewFixture(sizes)
	for _, lib := range libraries() {
		t.Run(lib.Name, func(t *testing.T) {
			w := workloadNamed(t, lib, "Informer/10handlers")
			res, err := harness.Run(w, sizes, fx)
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			want := float64(sizes.InformerPods + sizes.Events)
			if got := res.Extra["delivered"]; got != want {
				t.Errorf("the handler that received the fewest received %v notifications, want %v", got, want)
			}
		})
	}
}

func workloadNamed(t *testing.T, lib harness.Library, name string) harness.Workload {
	t.Helper()
	for _, w := range lib.Workloads {
		if w.Name == name {
			return w
		}
	}
	t.Fatalf("%s has no workload %s", lib.Name, name)
	return harness.Workload{}
}
