package harness

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"time"

	"k8s.io/client-go/rest"
)

// E2EConfig configures one end-to-end child: an informer on every pod of a
// real API server.
type E2EConfig struct {
	// Client is the core/v1 REST client the informer lists and watches
	// pods with.
	Client rest.Interface
	// Pods is how many pods the server holds; the child waits for that
	// many adds, then for that many updates after Relist.
	Pods int
	// Relist makes the server expire the informer's watch (410 Gone), so
	// that the informer lists every pod again; it returns a resourceVersion
	// that the relist's list is at or past. A nil Relist skips the relist
	// phase.
	Relist func(ctx context.Context) (uint64, error)
	// QuietRelist says the informer was asked for quiet relists
	// (KCACHE_QUIET_RELIST): its relist should bring no notification for
	// the unchanged pods.
	QuietRelist bool
	Timeout     time.Duration
	// HeapProfile, when set, is where heap profiles are written (suffixed
	// .sync and .relist).
	HeapProfile string
	// RelistMemoryLimit, when above zero, sets the Go runtime's memory
	// limit (what GOMEMLIMIT sets) just before the relist to this many
	// times the memory the runtime holds once the sync has settled, as a
	// process sized to its steady state would run; the limit is lifted
	// after the relist.
	RelistMemoryLimit float64
	// AfterSync, when set, is called with the cache once the informer has
	// synced and the steady heap is measured: a check or probe of the
	// objects (the argument is a cache.Indexer of either library).
	AfterSync func(indexer any) error
}

// RelistNotifications is how many notifications the forced relist should
// bring, nothing having changed on the server: one update per pod, or
// none under a quiet relist.
func (c E2EConfig) RelistNotifications() int64 {
	if c.QuietRelist {
		return 0
	}
	return int64(c.Pods)
}

// E2EResult is what one end-to-end child measured. Heap figures are bytes
// above the baseline taken just before the informer started; RSS figures
// are the process's own (VmHWM).
type E2EResult struct {
	Lib  string
	Pods int // pods cached after the initial sync
	// SyncSeconds is the wall time from starting the informer to the last
	// initial add; SyncCPUSeconds the process CPU time spent in it.
	SyncSeconds, SyncCPUSeconds float64
	// SyncPeakHeap is the highest HeapInuse sampled during the initial
	// sync; SyncPeakLive the highest live heap a GC marked.
	SyncPeakHeap, SyncPeakLive float64
	// SyncPeakRSS is VmHWM at the end of the initial sync.
	SyncPeakRSS float64
	// SteadyHeap is HeapInuse after the sync and two GCs; SteadyLive the
	// live heap then (SteadyHeap less it: the free room of in-use spans).
	SteadyHeap, SteadyLive float64
	// Relist figures: the same during the forced relist, from the 410 to
	// the last update, RSS peak reset just before.
	RelistSeconds, RelistCPUSeconds float64
	RelistPeakHeap, RelistPeakLive  float64
	RelistPeakRSS                   float64
	AfterRelistHeap                 float64
	// RelistMemoryLimit is the memory limit the relist ran under, in
	// bytes (zero: none), and RelistSteadyMemory the runtime's memory it
	// was set from.
	RelistMemoryLimit, RelistSteadyMemory float64
	// RelistAdds, RelistUpdates and RelistDeletes are the notifications
	// the handler got from the relist (nothing else changes meanwhile).
	RelistAdds, RelistUpdates, RelistDeletes int64
	// CPUSeconds is the process CPU time from start to the end of the
	// relist (client setup included).
	CPUSeconds float64
	// Attribution, when asked for, is where the cached pods' bytes go
	// after the sync (Attribute).
	Attribution *Attribution `json:",omitempty"`
}

// HeapPerPod is the steady heap per cached pod.
func (r E2EResult) HeapPerPod() float64 { return r.SteadyHeap / float64(max(r.Pods, 1)) }

// ProcessCPU is the user plus system CPU time this process has used.
func ProcessCPU() time.Duration { return processCPU() }

// RuntimeMemory is the memory the Go runtime holds from the OS and has not
// returned: what its memory limit (GOMEMLIMIT) is measured against.
func RuntimeMemory() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64() - s[1].Value.Uint64()
}

// LimitMemory sets the runtime's memory limit to factor times
// RuntimeMemory and returns the limit, the memory it was set from and a
// function that lifts it again.
func LimitMemory(factor float64) (limit, from uint64, lift func()) {
	from = RuntimeMemory()
	limit = uint64(factor * float64(from))
	old := debug.SetMemoryLimit(int64(limit))
	return limit, from, func() { debug.SetMemoryLimit(old) }
}
