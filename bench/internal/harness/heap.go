package harness

import (
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
)

// The runtime/metrics samples the heap figures are made of. HeapInuse is
// objects plus unused bytes of in-use spans, the same as
// runtime.MemStats.HeapInuse, but reading it does not stop the world.
const (
	metricHeapObjects = "/memory/classes/heap/objects:bytes"
	metricHeapUnused  = "/memory/classes/heap/unused:bytes"
	metricHeapLive    = "/gc/heap/live:bytes"
)

// HeapFigures are the heap in use and the live heap as of the last GC mark.
type HeapFigures struct {
	Inuse, Live uint64
}

func readHeap(samples []metrics.Sample) HeapFigures {
	metrics.Read(samples)
	return HeapFigures{
		Inuse: samples[0].Value.Uint64() + samples[1].Value.Uint64(),
		Live:  samples[2].Value.Uint64(),
	}
}

func heapSamples() []metrics.Sample {
	return []metrics.Sample{{Name: metricHeapObjects}, {Name: metricHeapUnused}, {Name: metricHeapLive}}
}

// SettledHeap collects garbage twice (so finalizers and sweeping are done)
// and returns the heap figures.
func SettledHeap() HeapFigures {
	runtime.GC()
	runtime.GC()
	return readHeap(heapSamples())
}

// Sampler records the highest heap figures seen by a goroutine reading
// them every period.
type Sampler struct {
	stop chan struct{}
	done chan HeapFigures
}

// StartSampler starts sampling the runtime's heap figures.
func StartSampler(period time.Duration) *Sampler {
	samples := heapSamples()
	return startSampler(period, func() HeapFigures { return readHeap(samples) })
}

// startSampler starts sampling the figures read returns; only the
// sampling goroutine calls read.
func startSampler(period time.Duration, read func() HeapFigures) *Sampler {
	s := &Sampler{stop: make(chan struct{}), done: make(chan HeapFigures, 1)}
	go s.run(period, read)
	return s
}

func (s *Sampler) run(period time.Duration, read func() HeapFigures) {
	peak := read()
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
		case <-s.stop:
			s.done <- maxFigures(peak, read())
			return
		}
		peak = maxFigures(peak, read())
	}
}

func maxFigures(a, b HeapFigures) HeapFigures {
	return HeapFigures{Inuse: max(a.Inuse, b.Inuse), Live: max(a.Live, b.Live)}
}

// Stop ends sampling and returns the peaks.
func (s *Sampler) Stop() HeapFigures {
	close(s.stop)
	return <-s.done
}

// HeapPeak records the highest heap figures read by Observe between Start
// and Stop. Where a Sampler wakes a goroutine every period, which costs
// CPU even when nothing happens, a HeapPeak is read by the code that
// allocates (an event handler, after each notification): it costs a read
// of runtime/metrics per call and nothing in between, and misses at most
// what one call allocates.
type HeapPeak struct {
	on atomic.Bool // set between Start and Stop

	mu   sync.Mutex // guards read's state and peak
	read func() HeapFigures
	peak HeapFigures
}

// NewHeapPeak returns a stopped HeapPeak of the runtime's heap figures.
func NewHeapPeak() *HeapPeak {
	samples := heapSamples()
	return &HeapPeak{read: func() HeapFigures { return readHeap(samples) }}
}

// Start resets the peaks to the current figures and makes Observe read.
func (p *HeapPeak) Start() {
	p.mu.Lock()
	p.peak = p.read()
	p.mu.Unlock()
	p.on.Store(true)
}

// Observe reads the heap figures and keeps the highest, between Start and
// Stop; otherwise it does nothing.
func (p *HeapPeak) Observe() {
	if !p.on.Load() {
		return
	}
	p.mu.Lock()
	p.peak = maxFigures(p.peak, p.read())
	p.mu.Unlock()
}

// Stop reads once more, makes Observe do nothing, and returns the peaks.
func (p *HeapPeak) Stop() HeapFigures {
	p.on.Store(false)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.peak = maxFigures(p.peak, p.read())
	return p.peak
}

// ObjectBytes measures the heap n pods of layout take on their own, each
// allocated apart as a watch event delivers it.
func ObjectBytes(n int, l Layout) float64 { return objectBytes(n, l, SettledHeap) }

// objectBytes is ObjectBytes with the heap read by settled.
func objectBytes(n int, l Layout, settled func() HeapFigures) float64 {
	before := settled()
	pods := make([]*v1.Pod, n)
	for i := range pods {
		pods[i] = l.Pod(i, uint64(i+1), 0)
	}
	after := settled()
	runtime.KeepAlive(pods)
	return float64(int64(after.Inuse)-int64(before.Inuse)) / float64(n)
}
