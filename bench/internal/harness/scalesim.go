package harness

import (
	"time"

	"k8s.io/client-go/rest"
)

// ScaleSimConfig configures one child of the scale simulation: an
// informer on every ConfigMap of a simulated API server in another
// process, over HTTP.
type ScaleSimConfig struct {
	// Client is the core/v1 REST client the informer lists and watches
	// ConfigMaps with.
	Client rest.Interface
	// Objects is how many ConfigMaps the server holds; the child waits
	// for that many adds.
	Objects int
	Timeout time.Duration
	// HeapProfile, when set, is where a heap profile is written after
	// the sync.
	HeapProfile string
}

// ScaleSimResult is what one child of the scale simulation measured.
// Heap figures are bytes above the baseline taken just before the
// informer started; PeakRSS is the process's own (VmHWM), reset just
// before the informer started.
type ScaleSimResult struct {
	Lib     string
	Objects int // objects cached after the initial sync
	// SyncSeconds is the wall time from starting the informer to the
	// last initial add; SyncCPUSeconds the process CPU time spent in it.
	SyncSeconds, SyncCPUSeconds float64
	// PeakHeap is the highest HeapInuse sampled during the sync, PeakLive
	// the highest live heap a GC marked.
	PeakHeap, PeakLive float64
	PeakRSS            float64
	// SteadyHeap is HeapInuse after the sync and two GCs.
	SteadyHeap float64
}

// HeapPerObject is the steady heap per cached object.
func (r ScaleSimResult) HeapPerObject() float64 {
	return r.SteadyHeap / float64(max(r.Objects, 1))
}
