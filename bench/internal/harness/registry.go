package harness

import (
	"context"
	"testing"
	"time"
)

// Group sorts workloads into the sections of the report; each group has
// its own targets.
type Group string

// The workload groups.
const (
	GroupIndexer   Group = "indexer"
	GroupQueue     Group = "queue"
	GroupLister    Group = "lister"
	GroupInformer  Group = "informer"  // events/s through a SharedIndexInformer
	GroupWriteRate Group = "writerate" // events/s applied while readers list
)

// Micro reports whether g is timed per operation against a prepared store
// (the indexer, queue and lister groups).
func (g Group) Micro() bool { return g == GroupIndexer || g == GroupQueue || g == GroupLister }

// Workload is one measured scenario, run by Run under testing.Benchmark. A
// workload of a micro group times its operation in a `for b.Loop()` loop; any
// other times one burst and reports how many events it timed (UnitEvents).
// Both report their process CPU time through a CPUTimer. Run builds what it
// needs from fx (which it must not modify) and stops every goroutine it
// started before returning.
type Workload struct {
	Name  string
	Group Group
	Run   func(b *testing.B, fx *Fixture) error
}

// Library is one cache package bound to the workloads.
type Library struct {
	Name      string
	Workloads []Workload
	// Memory measures the heap of an informer syncing and relisting; it is
	// meant to run alone in a fresh process.
	Memory func(ctx context.Context, cfg MemConfig) (MemResult, error)
	// E2E runs the end-to-end program shape against a real API server;
	// it is meant to run alone in a fresh process.
	E2E func(ctx context.Context, cfg E2EConfig) (E2EResult, error)
	// E2EChurn syncs the same informer, then measures it while another
	// process updates the pods; it is meant to run alone in a fresh process.
	E2EChurn func(ctx context.Context, cfg ChurnConfig) (ChurnResult, error)
	// ScaleSim syncs an informer on every ConfigMap of a simulated API
	// server over HTTP; it is meant to run alone in a fresh process.
	ScaleSim func(ctx context.Context, cfg ScaleSimConfig) (ScaleSimResult, error)
	// Release drops what the workloads keep between runs (a shared,
	// filled indexer), before the sections that do not use it.
	Release func()
}

// Sizes scales every workload.
type Sizes struct {
	Pods         int           // pods in the indexer, queue and lister fixtures
	InformerPods int           // pods an informer starts with
	Events       int           // Modified events pushed through an informer
	Window       time.Duration // how long a write-rate run counts events
	BenchTime    time.Duration // how long a loop workload iterates
	Iterations   int           // when set, loop workloads run exactly this many iterations instead
	Timeout      time.Duration // give up on a run after this long
}

// FullSizes are the sizes the issue asks for.
var FullSizes = Sizes{
	Pods: 100_000, InformerPods: 10_000, Events: 100_000,
	Window: time.Second, BenchTime: 300 * time.Millisecond, Timeout: 2 * time.Minute,
}

// QuickSizes make a smoke run that still exercises every code path.
var QuickSizes = Sizes{
	Pods: 10_000, InformerPods: 2_000, Events: 10_000,
	Window: 200 * time.Millisecond, BenchTime: 50 * time.Millisecond, Timeout: time.Minute,
}

// TinySizes are for the test that runs every workload once.
var TinySizes = Sizes{
	Pods: 300, InformerPods: 100, Events: 300,
	Window: 10 * time.Millisecond, Iterations: 50, Timeout: 30 * time.Second,
}

// MemConfig configures the memory probe.
type MemConfig struct {
	Pods      int  // pods synced, then relisted
	WatchList bool // stream the lists (the informer default) instead of listing
	// ChangedEvery makes every ChangedEvery-th pod differ after the relist.
	ChangedEvery int
	Timeout      time.Duration
	// HeapProfile, when set, is where the heap profile of the synced
	// informer is written.
	HeapProfile string
}

// MemResult is what the memory probe measured. Byte figures are above the
// baseline heap taken before the informer started.
type MemResult struct {
	Pods int
	// ObjectBytes is the heap one pod takes on its own, without any cache.
	ObjectBytes float64
	// SteadyBytes is the heap in use after the initial sync and a GC.
	SteadyBytes float64
	// SyncPeakInuse and SyncPeakLive are the highest HeapInuse and the
	// highest live heap (as marked by a GC) seen during the initial sync.
	SyncPeakInuse, SyncPeakLive float64
	// RelistPeakInuse and RelistPeakLive are the same during the relist.
	RelistPeakInuse, RelistPeakLive float64
	// AfterRelistBytes is the heap in use after the relist and a GC.
	AfterRelistBytes float64
	SyncSeconds      float64
	RelistSeconds    float64
}

// PerPod is the steady heap per cached pod.
func (m MemResult) PerPod() float64 { return m.SteadyBytes / float64(max(m.Pods, 1)) }
