package dedup

import (
	"reflect"
	"runtime/metrics"
	"sync"
	"weak"
)

// This file is the compactor's check of whether the informer's handlers
// keep the objects they are given.
//
// Compacting after the fact pays off only if, once the store holds the
// compacted copy, nothing else holds the object it replaced: that object
// then goes with the next garbage collection. A program whose handlers keep
// what they are given in caches of their own (kube-scheduler keeps every
// assigned pod) holds both: the object delivered, in its cache, and the
// compacted copy, in the informer's, which is more than without sharing.
// So the compactor watches a sample of the objects it replaced through
// weak pointers; when most of them outlive two garbage collections, it
// tells the informer to share updates as they arrive instead (before they
// are cached and delivered: one object, shared, for both caches) and
// stops being fed. The switch is one way and per informer.

// retentionWindow is how many replaced objects one verdict looks at, and
// retentionGCs how many garbage collections a replaced object must live
// through to count as kept.
const (
	retentionWindow = 32
	retentionGCs    = 2
)

// retentionProbe follows one replaced object: alive while anything holds it.
type retentionProbe struct {
	obj weak.Pointer[byte]
	// gc is the number of garbage collections finished when it was replaced.
	gc uint64
}

// retention samples replaced objects and decides whether they are kept.
type retention struct {
	// mu guards probes, kept and freed.
	mu     sync.Mutex
	probes []retentionProbe
	// kept and freed count the probes of the current window decided so far.
	kept, freed int
	// gcCount reads the number of finished garbage collections; a test
	// seam.
	gcCount func() uint64
}

func newRetention() *retention { return &retention{gcCount: finishedGCs} }

// watch starts following replaced, an object the store no longer holds,
// while the window still wants probes.
func (r *retention) watch(replaced interface{}) {
	// A full window takes no probe: the weak pointer and the reading of
	// the collection count are paid only for the probes kept.
	if !r.wantsProbe() {
		return
	}
	v := reflect.ValueOf(replaced)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return
	}
	p := retentionProbe{obj: weak.Make((*byte)(v.UnsafePointer())), gc: r.gcCount()}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.wantsProbeLocked() {
		r.probes = append(r.probes, p)
	}
}

// wantsProbe reports whether the current window still wants probes.
func (r *retention) wantsProbe() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.wantsProbeLocked()
}

// wantsProbeLocked is wantsProbe with r.mu held.
func (r *retention) wantsProbeLocked() bool {
	return len(r.probes)+r.kept+r.freed < retentionWindow
}

// verdict reports whether a full window of replaced objects has been decided
// and most of them were still held after retentionGCs collections; a window
// that says otherwise starts the next one.
func (r *retention) verdict() bool {
	now := r.gcCount()
	r.mu.Lock()
	defer r.mu.Unlock()
	waiting := r.probes[:0]
	for _, p := range r.probes {
		switch {
		case now < p.gc+retentionGCs:
			waiting = append(waiting, p)
		case p.obj.Value() != nil:
			r.kept++
		default:
			r.freed++
		}
	}
	clear(r.probes[len(waiting):])
	r.probes = waiting
	if r.kept+r.freed < retentionWindow {
		return false
	}
	if r.kept > r.freed {
		return true
	}
	r.kept, r.freed = 0, 0
	return false
}

// finishedGCs returns how many garbage collections the process has
// finished, without stopping the world.
func finishedGCs() uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}
