package harness

import (
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/labels"
)

func labelsOf(m map[string]string) labels.Set { return labels.Set(m) }

// fakeHeap returns first on its first read and then on every later one,
// and counts its reads.
type fakeHeap struct {
	mu    sync.Mutex // guards reads
	reads int
	first HeapFigures
	then  HeapFigures
}

func (f *fakeHeap) read() HeapFigures {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	if f.reads == 1 {
		return f.first
	}
	return f.then
}

// TestSamplerKeepsEachPeak: the in-use and live peaks are kept apart, and
// Stop reads once more, so a figure that rose after the last tick counts
// however few ticks there were.
func TestSamplerKeepsEachPeak(t *testing.T) {
	heap := &fakeHeap{first: HeapFigures{Inuse: 10, Live: 50}, then: HeapFigures{Inuse: 100, Live: 5}}
	s := startSampler(time.Hour, heap.read)
	got := s.Stop()
	if want := (HeapFigures{Inuse: 100, Live: 50}); got != want {
		t.Errorf("peaks %+v, want %+v", got, want)
	}
	if heap.reads != 2 {
		t.Errorf("%d reads, want the first and the one Stop makes", heap.reads)
	}
}

func TestObjectBytesDividesTheGrowthByThePods(t *testing.T) {
	heap := &fakeHeap{first: HeapFigures{Inuse: 1 << 20}, then: HeapFigures{Inuse: 1<<20 + 8000}}
	if got := objectBytes(4, ClusterLayout, heap.read); got != 2000 {
		t.Errorf("objectBytes = %v, want 8000 bytes over 4 pods", got)
	}
}
