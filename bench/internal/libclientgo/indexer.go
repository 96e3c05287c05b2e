package libclientgo

import (
	"fmt"
	"sync"
	"testing"

	cache "k8s.io/client-go/tools/cache"

	"github.com/kcache/cache/bench/internal/harness"
)

// sink keeps read results alive so the compiler cannot drop the reads. It is
// written and never read on purpose.
//
//lint:ignore U1000 a benchmark sink is only ever written
var sink int

// filledIndexer returns an indexer holding every fixture pod.
func filledIndexer(fx *harness.Fixture) (cache.Indexer, error) {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, indexers())
	for _, p := range fx.Pods() {
		if err := idx.Add(p); err != nil {
			return nil, fmt.Errorf("fill indexer: %w", err)
		}
	}
	return idx, nil
}

// readIndexer is one filled indexer per fixture, shared by the workloads
// that only read, so that each of their runs does not pay for filling one.
var readIndexer struct {
	mu  sync.Mutex
	fx  *harness.Fixture
	idx cache.Indexer
}

// sharedIndexer returns the read-only indexer holding every fixture pod.
// Callers must not modify it.
func sharedIndexer(fx *harness.Fixture) (cache.Indexer, error) {
	readIndexer.mu.Lock()
	defer readIndexer.mu.Unlock()
	if readIndexer.fx != fx {
		idx, err := filledIndexer(fx)
		if err != nil {
			return nil, err
		}
		readIndexer.fx, readIndexer.idx = fx, idx
	}
	return readIndexer.idx, nil
}

// releaseSharedIndexer drops the shared read-only indexer.
func releaseSharedIndexer() {
	readIndexer.mu.Lock()
	defer readIndexer.mu.Unlock()
	readIndexer.fx, readIndexer.idx = nil, nil
}

// indexerAdd times Add while an empty indexer grows to Sizes.Pods pods;
// the indexer is replaced by an empty one, untimed, when it is full.
func indexerAdd(b *testing.B, fx *harness.Fixture) error {
	pods := fx.Pods()
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, indexers())
	i := 0
	cpu := harness.StartLoop(b)
	for b.Loop() {
		if i == len(pods) {
			cpu.StopTimer()
			idx = cache.NewIndexer(cache.MetaNamespaceKeyFunc, indexers())
			i = 0
			cpu.StartTimer()
		}
		if err := idx.Add(pods[i]); err != nil {
			return fmt.Errorf("add: %w", err)
		}
		i++
	}
	cpu.Report(b.N)
	return nil
}

// indexerUpdate times Update on a full indexer, each pod in turn moving to
// its next version and back; one update in ten changes the node index.
func indexerUpdate(b *testing.B, fx *harness.Fixture) error {
	idx, err := filledIndexer(fx)
	if err != nil {
		return err
	}
	pods, updated := fx.Pods(), fx.Updated()
	i, forward := 0, true
	cpu := harness.StartLoop(b)
	for b.Loop() {
		if i == len(pods) {
			i, forward = 0, !forward
		}
		obj := updated[i]
		if !forward {
			obj = pods[i]
		}
		if err := idx.Update(obj); err != nil {
			return fmt.Errorf("update: %w", err)
		}
		i++
	}
	cpu.Report(b.N)
	return nil
}

// indexerDelete times Delete on a full indexer, refilled untimed once empty.
func indexerDelete(b *testing.B, fx *harness.Fixture) error {
	idx, err := filledIndexer(fx)
	if err != nil {
		return err
	}
	pods := fx.Pods()
	i := 0
	cpu := harness.StartLoop(b)
	for b.Loop() {
		if i == len(pods) {
			cpu.StopTimer()
			if idx, err = filledIndexer(fx); err != nil {
				return err
			}
			i = 0
			cpu.StartTimer()
		}
		if err := idx.Delete(pods[i]); err != nil {
			return fmt.Errorf("delete: %w", err)
		}
		i++
	}
	cpu.Report(b.N)
	return nil
}

// indexerByIndex times ByIndex over the namespace, node and app indexes.
func indexerByIndex(b *testing.B, fx *harness.Fixture) error {
	idx, err := sharedIndexer(fx)
	if err != nil {
		return err
	}
	queries := fx.IndexQueries()
	i := 0
	cpu := harness.StartLoop(b)
	for b.Loop() {
		q := queries[i%len(queries)]
		items, err := idx.ByIndex(q.Index, q.Value)
		if err != nil {
			return fmt.Errorf("by index: %w", err)
		}
		sink += len(items)
		i++
	}
	cpu.Report(b.N)
	return nil
}

// indexerIndexKeys times IndexKeys over the namespace, node and app indexes.
func indexerIndexKeys(b *testing.B, fx *harness.Fixture) error {
	idx, err := sharedIndexer(fx)
	if err != nil {
		return err
	}
	queries := fx.IndexQueries()
	i := 0
	cpu := harness.StartLoop(b)
	for b.Loop() {
		q := queries[i%len(queries)]
		keys, err := idx.IndexKeys(q.Index, q.Value)
		if err != nil {
			return fmt.Errorf("index keys: %w", err)
		}
		sink += len(keys)
		i++
	}
	cpu.Report(b.N)
	return nil
}

// indexerList times List of a full indexer.
func indexerList(b *testing.B, fx *harness.Fixture) error {
	idx, err := sharedIndexer(fx)
	if err != nil {
		return err
	}
	cpu := harness.StartLoop(b)
	for b.Loop() {
		sink += len(idx.List())
	}
	cpu.Report(b.N)
	return nil
}

// indexerListKeys times ListKeys of a full indexer.
func indexerListKeys(b *testing.B, fx *harness.Fixture) error {
	idx, err := sharedIndexer(fx)
	if err != nil {
		return err
	}
	cpu := harness.StartLoop(b)
	for b.Loop() {
		sink += len(idx.ListKeys())
	}
	cpu.Report(b.N)
	return nil
}

// indexerGetByKey times GetByKey of present keys in a scattered order.
func indexerGetByKey(b *testing.B, fx *harness.Fixture) error {
	idx, err := sharedIndexer(fx)
	if err != nil {
		return err
	}
	keys := fx.Keys()
	i := 0
	cpu := harness.StartLoop(b)
	for b.Loop() {
		_, ok, err := idx.GetByKey(keys[i%len(keys)])
		if err != nil || !ok {
			return fmt.Errorf("get by key %q: found=%t: %v", keys[i%len(keys)], ok, err)
		}
		i++
	}
	cpu.Report(b.N)
	return nil
}

// indexerReplace times Replace of a full indexer with the same pods.
func indexerReplace(b *testing.B, fx *harness.Fixture) error {
	idx, err := filledIndexer(fx)
	if err != nil {
		return err
	}
	list, rv := fx.PodList(), fx.ListRV()
	cpu := harness.StartLoop(b)
	for b.Loop() {
		if err := idx.Replace(list, rv); err != nil {
			return fmt.Errorf("replace: %w", err)
		}
	}
	cpu.Report(b.N)
	return nil
}
