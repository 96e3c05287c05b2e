package libclientgo

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	cache "k8s.io/client-go/tools/cache"

	"github.com/kcache/cache/bench/internal/harness"
)

// podCollector appends listed pods to a slice it reuses between calls, so
// the workloads measure the listing, not the caller's slice growth.
type podCollector struct{ pods []*v1.Pod }

// newPodCollector returns a collector with room for n pods, so that not
// even the first listings of a run grow its slice.
func newPodCollector(n int) *podCollector { return &podCollector{pods: make([]*v1.Pod, 0, n)} }

func (c *podCollector) add(obj interface{}) { c.pods = append(c.pods, obj.(*v1.Pod)) }

// listAll times ListAll with the tier=web selector over a full indexer.
func listAll(b *testing.B, fx *harness.Fixture) error {
	idx, err := sharedIndexer(fx)
	if err != nil {
		return err
	}
	sel := fx.Selector()
	c := newPodCollector(len(fx.Pods()))
	cpu := harness.StartLoop(b)
	for b.Loop() {
		c.pods = c.pods[:0]
		if err := cache.ListAll(idx, sel, c.add); err != nil {
			return fmt.Errorf("list all: %w", err)
		}
		sink += len(c.pods)
	}
	cpu.Report(b.N)
	return nil
}

// listAllByNamespace times ListAllByNamespace with the tier=web selector
// over a full indexer, namespaces taken in turn.
func listAllByNamespace(b *testing.B, fx *harness.Fixture) error {
	idx, err := sharedIndexer(fx)
	if err != nil {
		return err
	}
	sel, namespaces := fx.Selector(), fx.Namespaces()
	c := newPodCollector(len(fx.Pods()))
	i := 0
	cpu := harness.StartLoop(b)
	for b.Loop() {
		c.pods = c.pods[:0]
		if err := cache.ListAllByNamespace(idx, namespaces[i%len(namespaces)], sel, c.add); err != nil {
			return fmt.Errorf("list all by namespace: %w", err)
		}
		sink += len(c.pods)
		i++
	}
	cpu.Report(b.N)
	return nil
}
