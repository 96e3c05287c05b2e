package cache

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Sizes of the benchmark cache: 100 namespaces of 1000 pods each, filled
// ten pods at a time in turn. One pod in ten is labelled app=web, one in
// four tier=web.
const (
	listerBenchNamespaces       = 100
	listerBenchPodsPerNamespace = 1000
)

var (
	listerBenchOnce  sync.Once
	listerBenchStore Indexer
)

// listerBenchIndexer returns the shared benchmark indexer, built once: it
// has the namespace index and holds listerBenchNamespaces*listerBenchPodsPerNamespace
// pods, created one after the other as a decoder would.
func listerBenchIndexer(b testing.TB) Indexer {
	listerBenchOnce.Do(func() {
		idx := NewIndexer(MetaNamespaceKeyFunc, Indexers{NamespaceIndex: MetaNamespaceIndexFunc})
		for i := range listerBenchNamespaces * listerBenchPodsPerNamespace {
			if err := idx.Add(listerBenchPod(i)); err != nil {
				panic(err)
			}
		}
		listerBenchStore = idx
	})
	return listerBenchStore
}

var (
	listerShuffledOnce  sync.Once
	listerShuffledStore Indexer
)

// listerShuffledIndexer returns an indexer holding the pods of
// listerBenchIndexer, added in a random order: listing it visits the pods
// in an order unrelated to where they sit in memory, as in a cache whose
// objects were replaced over time, so nearly every read is a cache miss.
func listerShuffledIndexer(b testing.TB) Indexer {
	pods := listerBenchIndexer(b).List()
	listerShuffledOnce.Do(func() {
		rand.New(rand.NewPCG(7, 11)).Shuffle(len(pods), func(i, j int) { pods[i], pods[j] = pods[j], pods[i] })
		idx := NewIndexer(MetaNamespaceKeyFunc, Indexers{NamespaceIndex: MetaNamespaceIndexFunc})
		for _, pod := range pods {
			if err := idx.Add(pod); err != nil {
				panic(err)
			}
		}
		listerShuffledStore = idx
	})
	return listerShuffledStore
}

// listerBenchTiers are the tier labels of the benchmark pods, in turn.
var listerBenchTiers = [...]string{"web", "api", "db", "cache"}

// listerBenchPod is pod i of the benchmark cache: a full-sized pod (owner,
// annotations, two containers, status) whose labels say its app, tier,
// shard and template hash, so that label matching reaches memory the way
// it does in a real cache.
func listerBenchPod(i int) *v1.Pod {
	app := "batch"
	if i%10 == 0 {
		app = "web"
	}
	hash := strconv.FormatInt(int64(i/10)*40503%1679616+46656, 36)
	start := metav1.Unix(1700000000+int64(i), 0)
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:         fmt.Sprintf("ns-%03d", i/10%listerBenchNamespaces),
			Name:              fmt.Sprintf("pod-%06d-%s", i, hash),
			UID:               types.UID(fmt.Sprintf("uid-%08d", i)),
			ResourceVersion:   strconv.Itoa(i + 1),
			CreationTimestamp: start,
			Labels: map[string]string{
				"app":               app,
				"tier":              listerBenchTiers[i%len(listerBenchTiers)],
				"shard":             strconv.Itoa(i % 7),
				"pod-template-hash": hash,
			},
			Annotations: map[string]string{"example.com/restarted-at": "2025-01-01T00:00:00Z"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs-" + hash, UID: types.UID("rs-uid-" + hash),
			}},
		},
		Spec: v1.PodSpec{
			NodeName:   fmt.Sprintf("node-%04d", i*7919%1000),
			Containers: []v1.Container{listerBenchContainer(app, i), listerBenchContainer("sidecar", i)},
		},
		Status: v1.PodStatus{
			Phase:     v1.PodRunning,
			PodIP:     fmt.Sprintf("10.1.%d.%d", i/250%250, i%250),
			StartTime: &start,
			Conditions: []v1.PodCondition{
				{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: start},
				{Type: v1.PodScheduled, Status: v1.ConditionTrue, LastTransitionTime: start},
			},
			ContainerStatuses: []v1.ContainerStatus{
				{Name: app, Ready: true, ImageID: fmt.Sprintf("sha256:%x", i*7340033)},
				{Name: "sidecar", Ready: true, ImageID: fmt.Sprintf("sha256:%x", i*104729)},
			},
		},
	}
}

// listerBenchContainer is a container of pod i with resources and an
// environment.
func listerBenchContainer(name string, i int) v1.Container {
	return v1.Container{
		Name:  name,
		Image: "registry.example.com/" + name + ":" + strconv.Itoa(i%3),
		Env:   []v1.EnvVar{{Name: "LOG_LEVEL", Value: "info"}, {Name: "POD_INDEX", Value: strconv.Itoa(i)}},
		Resources: v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("128Mi")},
		},
		Ports: []v1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: v1.ProtocolTCP}},
	}
}

// listerCountingAppend returns an AppendFunc that counts, and the counter.
func listerCountingAppend() (AppendFunc, *int) {
	n := 0
	return func(interface{}) { n++ }, &n
}

func BenchmarkListAll(b *testing.B) {
	ordered := listerBenchIndexer(b)
	cases := map[string]struct {
		selector labels.Selector
		want     int
		shuffled bool
	}{
		"everything":      {selector: labels.Everything(), want: listerBenchNamespaces * listerBenchPodsPerNamespace},
		"app=web":         {selector: labels.SelectorFromSet(labels.Set{"app": "web"}), want: listerBenchNamespaces * listerBenchPodsPerNamespace / 10},
		"app=web,shard=3": {selector: labels.SelectorFromSet(labels.Set{"app": "web", "shard": "3"}), want: -1},
		"tier=web":        {selector: labels.SelectorFromSet(labels.Set{"tier": "web"}), want: listerBenchNamespaces * listerBenchPodsPerNamespace / 4},
		"tier!=web":       {selector: listerSelector(b, "tier!=web"), want: listerBenchNamespaces * listerBenchPodsPerNamespace * 3 / 4},
		"shuffled/tier=web": {
			selector: labels.SelectorFromSet(labels.Set{"tier": "web"}),
			want:     listerBenchNamespaces * listerBenchPodsPerNamespace / 4,
			shuffled: true,
		},
	}
	for name, tc := range cases {
		b.Run(name, func(b *testing.B) {
			idx := ordered
			if tc.shuffled {
				idx = listerShuffledIndexer(b)
			}
			b.ReportAllocs()
			for b.Loop() {
				appendFn, n := listerCountingAppend()
				if err := ListAll(idx, tc.selector, appendFn); err != nil {
					b.Fatal(err)
				}
				if tc.want >= 0 && *n != tc.want {
					b.Fatalf("listed %d, want %d", *n, tc.want)
				}
			}
		})
	}
}

func BenchmarkListAllByNamespace(b *testing.B) {
	idx := listerBenchIndexer(b)
	cases := map[string]struct {
		selector labels.Selector
		want     int
	}{
		"everything": {labels.Everything(), listerBenchPodsPerNamespace},
		"app=web":    {labels.SelectorFromSet(labels.Set{"app": "web"}), listerBenchPodsPerNamespace / 10},
		// ns-042 holds pods 420 to 429 of each thousand; 420, 424 and 428
		// are tier=web.
		"tier=web": {labels.SelectorFromSet(labels.Set{"tier": "web"}), listerBenchPodsPerNamespace * 3 / 10},
	}
	for name, tc := range cases {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				appendFn, n := listerCountingAppend()
				if err := ListAllByNamespace(idx, "ns-042", tc.selector, appendFn); err != nil {
					b.Fatal(err)
				}
				if *n != tc.want {
					b.Fatalf("listed %d, want %d", *n, tc.want)
				}
			}
		})
	}
}

func BenchmarkGenericLister_ByNamespaceList(b *testing.B) {
	lister := NewGenericLister(listerBenchIndexer(b), schema.GroupResource{Resource: "pods"})
	web := labels.SelectorFromSet(labels.Set{"app": "web"})
	b.ReportAllocs()
	for b.Loop() {
		objs, err := lister.ByNamespace("ns-042").List(web)
		if err != nil {
			b.Fatal(err)
		}
		if len(objs) != listerBenchPodsPerNamespace/10 {
			b.Fatalf("listed %d", len(objs))
		}
	}
}
