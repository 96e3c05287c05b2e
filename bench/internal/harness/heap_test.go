package harness

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/labels"
)

func labelsOf(m map[string]string) labels.Set { return labels.Set(m) }

var kept [][]byte

func TestSamplerSeesAPeak(t *testing.T) {
	base := SettledHeap()
	s := StartSampler(time.Millisecond)
	kept = append(kept, make([]byte, 64<<20))
	peak := s.Stop() // Stop reads once more, so the allocation is seen
	kept = nil
	if peak.Inuse < base.Inuse+60<<20 {
		t.Errorf("peak HeapInuse %d, want at least %d above the base %d", peak.Inuse, 60<<20, base.Inuse)
	}
}

func TestObjectBytes(t *testing.T) {
	got := ObjectBytes(2000, ClusterLayout)
	if got < 2<<10 || got > 64<<10 {
		t.Errorf("ObjectBytes = %v per pod, want a few KiB", got)
	}
}
