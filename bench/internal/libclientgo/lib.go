// Package libclientgo binds the benchmark workloads to
// k8s.io/client-go/tools/cache.
//
// This package is the single source of the workloads. Package libkcache is
// generated from it by internal/gen, which only swaps the import path of the
// cache package and the names below; edit the workloads here and run
// `go generate ./...` from bench/. Everything that does not touch the cache
// package (pods, fake ListerWatcher, timing) lives in internal/harness.
package libclientgo

//go:generate go run ../gen -src . -dst ../libkcache

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	cache "k8s.io/client-go/tools/cache"

	"github.com/kcache/cache/bench/internal/harness"
)

// LibName names the measured package in reports.
const LibName = "client-go"

// Library returns the workloads bound to this package, in report order.
func Library() harness.Library {
	return harness.Library{
		Name: LibName,
		Workloads: []harness.Workload{
			{Name: "Indexer/Add", Group: harness.GroupIndexer, Run: indexerAdd},
			{Name: "Indexer/Update", Group: harness.GroupIndexer, Run: indexerUpdate},
			{Name: "Indexer/Delete", Group: harness.GroupIndexer, Run: indexerDelete},
			{Name: "Indexer/ByIndex", Group: harness.GroupIndexer, Run: indexerByIndex},
			{Name: "Indexer/IndexKeys", Group: harness.GroupIndexer, Run: indexerIndexKeys},
			{Name: "Indexer/List", Group: harness.GroupIndexer, Run: indexerList},
			{Name: "Indexer/ListKeys", Group: harness.GroupIndexer, Run: indexerListKeys},
			{Name: "Indexer/GetByKey", Group: harness.GroupIndexer, Run: indexerGetByKey},
			{Name: "Indexer/Replace", Group: harness.GroupIndexer, Run: indexerReplace},
			{Name: "DeltaFIFO/AddPop", Group: harness.GroupQueue, Run: deltaFIFOAddPop},
			{Name: "DeltaFIFO/Replace", Group: harness.GroupQueue, Run: deltaFIFOReplace},
			{Name: "RealFIFO/AddPop", Group: harness.GroupQueue, Run: realFIFOAddPop},
			{Name: "RealFIFO/Replace", Group: harness.GroupQueue, Run: realFIFOReplace},
			{Name: "RealFIFO/ReplaceAtomic", Group: harness.GroupQueue, Run: realFIFOReplaceAtomic},
			{Name: "Lister/ListAll", Group: harness.GroupLister, Run: listAll},
			{Name: "Lister/ListAllByNamespace", Group: harness.GroupLister, Run: listAllByNamespace},
			{Name: "Informer/1handler", Group: harness.GroupInformer, Run: informerEvents(1)},
			{Name: "Informer/10handlers", Group: harness.GroupInformer, Run: informerEvents(10)},
			{Name: "WriteRate/0readers", Group: harness.GroupWriteRate, Run: writeRate(0)},
			{Name: "WriteRate/1reader", Group: harness.GroupWriteRate, Run: writeRate(1)},
			{Name: "WriteRate/10readers", Group: harness.GroupWriteRate, Run: writeRate(10)},
		},
		Memory:   memory,
		E2E:      e2e,
		E2EChurn: e2eChurn,
		ScaleSim: scaleSim,
		Release:  releaseSharedIndexer,
	}
}

// indexers are the namespace, node and app indexes of every workload.
func indexers() cache.Indexers {
	return cache.Indexers{
		harness.NamespaceIndex: cache.MetaNamespaceIndexFunc,
		harness.NodeIndex:      nodeIndexFunc,
		harness.AppIndex:       appIndexFunc,
	}
}

func nodeIndexFunc(obj interface{}) ([]string, error) {
	p, ok := obj.(*v1.Pod)
	if !ok {
		return nil, fmt.Errorf("node index: want *v1.Pod, got %T", obj)
	}
	return []string{p.Spec.NodeName}, nil
}

func appIndexFunc(obj interface{}) ([]string, error) {
	p, ok := obj.(*v1.Pod)
	if !ok {
		return nil, fmt.Errorf("app index: want *v1.Pod, got %T", obj)
	}
	return []string{p.Labels["app"]}, nil
}
