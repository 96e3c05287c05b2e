package harness

import (
	"strconv"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// IndexQuery is one ByIndex or IndexKeys lookup.
type IndexQuery struct {
	Index string
	Value string
}

// Fixture is the read-only data every workload of a process shares, built
// once, lazily, so that a run limited to a few workloads builds only what
// they need. Both libraries get the very same objects, so neither pays for
// different allocations or cache layouts.
type Fixture struct {
	Sizes Sizes

	// clusterMu guards clusterBuilt and the cluster fields below it.
	clusterMu    sync.Mutex
	clusterBuilt bool
	pods         []*v1.Pod     // ClusterLayout pods at resourceVersion i+1
	podList      []interface{} // pods, as Replace takes them
	updated      []*v1.Pod     // pods at a newer resourceVersion, every 10th moved
	keys         []string      // keys of pods in a scattered order
	queries      []IndexQuery
	namespaces   []string
	informer     sync.Once
	infPods      []*v1.Pod // BigNamespaceLayout pods
	infEvents    []*v1.Pod // Modified versions of infPods, in push order
	selectorSet  sync.Once
	selector     labels.Selector
}

// NewFixture returns a fixture for sizes.
func NewFixture(sizes Sizes) *Fixture { return &Fixture{Sizes: sizes} }

// Pods are Sizes.Pods realistic pods of ClusterLayout, pod i at
// resourceVersion i+1.
func (f *Fixture) Pods() []*v1.Pod { f.buildCluster(); return f.pods }

// PodList is Pods as a []interface{}.
func (f *Fixture) PodList() []interface{} { f.buildCluster(); return f.podList }

// ListRV is the resourceVersion of a list holding Pods.
func (f *Fixture) ListRV() string { return strconv.Itoa(f.Sizes.Pods) }

// Updated holds, for every pod, a copy at a newer resourceVersion; every
// tenth copy moved to another node, so its node index entry changes.
func (f *Fixture) Updated() []*v1.Pod { f.buildCluster(); return f.updated }

// Keys are the keys of Pods in a scattered order.
func (f *Fixture) Keys() []string { f.buildCluster(); return f.keys }

// IndexQueries are lookups over the namespace, node and app indexes in
// turn, for values drawn from the pods (so larger buckets come up more
// often, as they do in real clusters).
func (f *Fixture) IndexQueries() []IndexQuery { f.buildCluster(); return f.queries }

// Namespaces are namespaces drawn from the pods, for ListAllByNamespace.
func (f *Fixture) Namespaces() []string { f.buildCluster(); return f.namespaces }

// Selector is the label selector of the lister workloads: tier=web, which
// a quarter of the pods match.
func (f *Fixture) Selector() labels.Selector {
	f.selectorSet.Do(func() {
		f.selector = labels.SelectorFromSet(labels.Set{"tier": SelectedTier})
	})
	return f.selector
}

// InformerPods are the Sizes.InformerPods pods an informer starts with, all
// in BigNamespace, pod i at resourceVersion i+1.
func (f *Fixture) InformerPods() []*v1.Pod { f.buildInformer(); return f.infPods }

// InformerEvents are Sizes.Events Modified versions of InformerPods with
// increasing resourceVersions above every initial one; every tenth one
// moves its pod to another node.
func (f *Fixture) InformerEvents() []*v1.Pod { f.buildInformer(); return f.infEvents }

// InformerFinalVersions says which InformerEvents carry the last version
// of their pod: the final count of them, at resourceVersion minRV or newer.
// (The last InformerPods events touch every pod once, see scatter.)
func (f *Fixture) InformerFinalVersions() (minRV uint64, count int) {
	f.buildInformer()
	count = min(len(f.infPods), len(f.infEvents))
	if count == 0 {
		return 0, 0
	}
	rv, _ := strconv.ParseUint(f.infEvents[len(f.infEvents)-count].ResourceVersion, 10, 64)
	return rv, count
}

// InformerListRV is the resourceVersion of the informer's initial list.
func (f *Fixture) InformerListRV() string { return strconv.Itoa(f.Sizes.InformerPods) }

// BigNamespace is the namespace of every informer pod.
var BigNamespace = BigNamespaceLayout.Namespace(0)

// ReleaseCluster drops the cluster pods and everything derived from them,
// so that later workloads run on a heap holding only their own fixture; a
// workload asking for them again rebuilds them.
func (f *Fixture) ReleaseCluster() {
	f.clusterMu.Lock()
	defer f.clusterMu.Unlock()
	f.clusterBuilt = false
	f.pods, f.podList, f.updated, f.keys, f.queries, f.namespaces = nil, nil, nil, nil, nil, nil
}

func (f *Fixture) buildCluster() {
	f.clusterMu.Lock()
	defer f.clusterMu.Unlock()
	if f.clusterBuilt {
		return
	}
	f.clusterBuilt = true
	n := f.Sizes.Pods
	l := ClusterLayout
	f.pods = make([]*v1.Pod, n)
	f.podList = make([]interface{}, n)
	f.updated = make([]*v1.Pod, n)
	for i := range n {
		f.pods[i] = l.Pod(i, uint64(i+1), 0)
		f.podList[i] = f.pods[i]
		node := ""
		if i%10 == 0 {
			node = l.MovedNode(i)
		}
		f.updated[i] = Modified(f.pods[i], uint64(n+1+i), node)
	}
	f.keys = make([]string, n)
	for i := range n {
		f.keys[i] = l.Key(scatter(i, n))
	}
	const queryCount = 3000
	f.queries = make([]IndexQuery, queryCount)
	for q := range queryCount {
		p := f.pods[scatter(q, n)]
		switch q % 3 {
		case 0:
			f.queries[q] = IndexQuery{Index: NamespaceIndex, Value: p.Namespace}
		case 1:
			f.queries[q] = IndexQuery{Index: NodeIndex, Value: p.Spec.NodeName}
		default:
			f.queries[q] = IndexQuery{Index: AppIndex, Value: p.Labels["app"]}
		}
	}
	f.namespaces = make([]string, 1000)
	for q := range f.namespaces {
		f.namespaces[q] = f.pods[scatter(q, n)].Namespace
	}
}

func (f *Fixture) buildInformer() {
	f.informer.Do(func() {
		n := f.Sizes.InformerPods
		l := BigNamespaceLayout
		f.infPods = make([]*v1.Pod, n)
		for i := range n {
			f.infPods[i] = l.Pod(i, uint64(i+1), 0)
		}
		f.infEvents = make([]*v1.Pod, f.Sizes.Events)
		for k := range f.infEvents {
			i := scatter(k, n)
			node := ""
			if k%10 == 0 {
				node = l.MovedNode(i)
			}
			f.infEvents[k] = Modified(f.infPods[i], uint64(n+1+k), node)
		}
	})
}

// scatter maps 0..n-1 onto 0..n-1 in a fixed order without locality; for
// k >= n it wraps.
func scatter(k, n int) int {
	const prime = 1_000_003 // coprime with any n below it
	return int((uint64(k) * prime) % uint64(n))
}
