package libclientgo

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cache "k8s.io/client-go/tools/cache"

	"github.com/kcache/cache/bench/internal/harness"
)

// discard is a pop callback that accepts every item.
func discard(_ interface{}, _ bool) error { return nil }

// informerRealFIFOOptions are the RealFIFO options a shared informer uses
// with the default feature gates.
func informerRealFIFOOptions() cache.RealFIFOOptions {
	return cache.RealFIFOOptions{
		KeyFunction:           cache.MetaNamespaceKeyFunc,
		AtomicEvents:          true,
		UnlockWhileProcessing: true,
		EmitDeltaTypeBookmark: true,
	}
}

// fifo is the part of both queues the workloads use.
type fifo interface {
	Add(obj interface{}) error
	Replace(list []interface{}, resourceVersion string) error
	Pop(process cache.PopProcessFunc) (interface{}, error)
	Close()
}

// addPop times one Add followed by one Pop.
func addPop(b *testing.B, fx *harness.Fixture, q fifo) error {
	defer q.Close()
	pods := fx.Pods()
	i := 0
	cpu := harness.StartLoop(b)
	for b.Loop() {
		if err := q.Add(pods[i%len(pods)]); err != nil {
			return fmt.Errorf("add: %w", err)
		}
		if _, err := q.Pop(discard); err != nil {
			return fmt.Errorf("pop: %w", err)
		}
		i++
	}
	cpu.Report(b.N)
	return nil
}

// drainer pops from a queue until the sentinel comes out.
type drainer struct {
	sentinel *v1.Pod
	seen     bool
}

func newDrainer() *drainer {
	return &drainer{sentinel: &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "zz", Name: "sentinel"}}}
}

func (d *drainer) look(deltas []cache.Delta) {
	for _, delta := range deltas {
		if delta.Object == d.sentinel {
			d.seen = true
		}
	}
}

func (d *drainer) single(obj interface{}, _ bool) error {
	if deltas, ok := obj.(cache.Deltas); ok {
		d.look(deltas)
	}
	return nil
}

func (d *drainer) batch(deltas []cache.Delta, _ bool) error {
	d.look(deltas)
	return nil
}

// replaceDrain times Replace with every fixture pod followed by popping
// (with popOne) until the queue is empty, that is the whole cost a relist
// puts on the queue. A sentinel added after the Replace marks the end.
func replaceDrain(b *testing.B, fx *harness.Fixture, q fifo, popOne func(*drainer) error) error {
	defer q.Close()
	list, rv := fx.PodList(), fx.ListRV()
	d := newDrainer()
	cpu := harness.StartLoop(b)
	for b.Loop() {
		if err := q.Replace(list, rv); err != nil {
			return fmt.Errorf("replace: %w", err)
		}
		if err := q.Add(d.sentinel); err != nil {
			return fmt.Errorf("add sentinel: %w", err)
		}
		for d.seen = false; !d.seen; {
			if err := popOne(d); err != nil {
				return fmt.Errorf("drain: %w", err)
			}
		}
	}
	cpu.Report(b.N)
	return nil
}

func deltaFIFOAddPop(b *testing.B, fx *harness.Fixture) error {
	q := cache.NewDeltaFIFOWithOptions(cache.DeltaFIFOOptions{
		KeyFunction:           cache.MetaNamespaceKeyFunc,
		EmitDeltaTypeReplaced: true,
	})
	return addPop(b, fx, q)
}

// deltaFIFOReplace replaces with known objects (an indexer already holding
// every fixture pod) and drains with Pop.
func deltaFIFOReplace(b *testing.B, fx *harness.Fixture) error {
	known, err := filledIndexer(fx)
	if err != nil {
		return err
	}
	q := cache.NewDeltaFIFOWithOptions(cache.DeltaFIFOOptions{
		KeyFunction:           cache.MetaNamespaceKeyFunc,
		KnownObjects:          known,
		EmitDeltaTypeReplaced: true,
	})
	return replaceDrain(b, fx, q, func(d *drainer) error {
		_, err := q.Pop(d.single)
		return err
	})
}

func realFIFOAddPop(b *testing.B, fx *harness.Fixture) error {
	return addPop(b, fx, cache.NewRealFIFOWithOptions(informerRealFIFOOptions()))
}

// realFIFOReplace uses the non-atomic RealFIFO, which reconciles the list
// against known objects (an indexer already holding every fixture pod),
// and drains with PopBatch as the informer's controller does.
func realFIFOReplace(b *testing.B, fx *harness.Fixture) error {
	known, err := filledIndexer(fx)
	if err != nil {
		return err
	}
	q := cache.NewRealFIFOWithOptions(cache.RealFIFOOptions{
		KeyFunction:  cache.MetaNamespaceKeyFunc,
		KnownObjects: known,
	})
	return replaceDrain(b, fx, q, func(d *drainer) error { return q.PopBatch(d.batch, d.single) })
}

// realFIFOReplaceAtomic uses the RealFIFO of a shared informer, which queues
// a relist as one atomic item.
func realFIFOReplaceAtomic(b *testing.B, fx *harness.Fixture) error {
	q := cache.NewRealFIFOWithOptions(informerRealFIFOOptions())
	return replaceDrain(b, fx, q, func(d *drainer) error { return q.PopBatch(d.batch, d.single) })
}
