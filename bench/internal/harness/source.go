package harness

import (
	"fmt"
	"strconv"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	framework "github.com/kcache/cache/testing"
)

// watchCacheSize is how many changes a benchmark's source keeps for
// watches that resume. The workloads change pods only once the informer
// watches (WaitForWatches), so no watch resumes; a small history keeps the
// pushed pods from staying live in it, where they would add to the heap
// every GC of the measured process marks (the harness's earlier fake kept
// nothing).
const watchCacheSize = 16

// NewPodSource returns the module's simulated API server (the testing
// package's FakeControllerSource, the same for both cache packages, whose
// ListerWatcher interfaces have the same method set) holding pods at
// resource versions 1 to len(pods), in order, as the fixture numbers them.
// It shares objects (nothing is copied in or out, so copies cost nothing
// in the measurements; the pods must not be modified) and lists into a
// *v1.PodList. With watchList false it refuses streaming lists, so that
// informers list and page instead.
func NewPodSource(pods []*v1.Pod, watchList bool) *framework.FakeControllerSource {
	src := framework.NewFakeControllerSourceWithOptions(framework.FakeControllerSourceOptions{
		Paging:               true,
		WatchCacheSize:       watchCacheSize,
		NewList:              func() runtime.Object { return &v1.PodList{} },
		RefuseStreamingLists: !watchList,
		ShareObjects:         true,
	})
	for _, p := range pods {
		src.Add(p)
	}
	return src
}

// NewFreshPodSource returns a simulated API server holding n pods of
// layout l at resource versions 1 to n, every one of which is built afresh
// each time it is listed or streamed, as a real API server's responses
// are decoded into new memory. The source itself holds only a small form
// of each pod (see compactPod), so that its own heap barely weighs on the
// memory figures. With watchList false it refuses streaming lists.
func NewFreshPodSource(n int, l Layout, watchList bool) *framework.FakeControllerSource {
	src := framework.NewFakeControllerSourceWithOptions(framework.FakeControllerSourceOptions{
		Paging:               true,
		WatchCacheSize:       watchCacheSize,
		NewList:              func() runtime.Object { return &v1.PodList{} },
		RefuseStreamingLists: !watchList,
		HandOut:              func(stored runtime.Object) runtime.Object { return expandPod(l, stored) },
	})
	for i := range n {
		src.Add(compactPod(i, 0))
	}
	return src
}

// compactPod is what a fresh pod source stores for pod i at revision rev:
// the index as its name, the revision as its generation.
func compactPod(i, rev int) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: strconv.Itoa(i), Generation: int64(rev)}}
}

// expandPod builds the full pod a compactPod stands for, at its resource
// version; a bookmark (no name) becomes an empty pod with the bookmark's
// resource version and annotations.
func expandPod(l Layout, stored runtime.Object) runtime.Object {
	m := stored.(*metav1.PartialObjectMetadata)
	if m.Name == "" {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: m.ResourceVersion, Annotations: m.Annotations}}
	}
	i, _ := strconv.Atoi(m.Name)
	rv, _ := strconv.ParseUint(m.ResourceVersion, 10, 64)
	p := new(v1.Pod)
	l.FillPod(p, i, rv, int(m.Generation))
	return p
}

// ExpireChanging moves one pod in every of a fresh pod source's n pods to
// revision 1 while ending every watch with a 410 Expired and compacting the
// history, so that the informers relist and find those pods changed.
func ExpireChanging(src *framework.FakeControllerSource, n, every int) error {
	err := src.Expire(func(tx framework.Tx) error {
		for i := 0; i < n; i += every {
			if _, err := tx.Update(compactPod(i, 1)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("expire: %w", err)
	}
	return nil
}
