package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"

	kcache "github.com/kcache/cache"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clientgocache "k8s.io/client-go/tools/cache"
)

// pairFromFuncs builds a kcache and a client-go ListWatch from the same
// list and watch functions.
func pairFromFuncs(list listFunc, watch watchFunc) lwPair {
	return lwPair{
		kcache:   &kcache.ListWatch{ListWithContextFunc: kcache.ListWithContextFunc(list), WatchFuncWithContext: kcache.WatchFuncWithContext(watch)},
		clientGo: &clientgocache.ListWatch{ListWithContextFunc: clientgocache.ListWithContextFunc(list), WatchFuncWithContext: clientgocache.WatchFuncWithContext(watch)},
	}
}

// restricted wraps list and watch functions so that every request carries
// the selectors of restrict.
func restricted(list listFunc, watchFn watchFunc, restrict metav1.ListOptions) (listFunc, watchFunc) {
	apply := func(o *metav1.ListOptions) {
		o.LabelSelector, o.FieldSelector = restrict.LabelSelector, restrict.FieldSelector
	}
	return func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			apply(&o)
			return list(ctx, o)
		}, func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			apply(&o)
			return watchFn(ctx, o)
		}
}

// evenName reports whether an object's name ends in an even digit; the
// variants use it to split objects into two groups.
func evenName(name string) bool {
	return name != "" && (name[len(name)-1]-'0')%2 == 0
}

// keyName returns the name part of a namespace/name key.
func keyName(key string) string {
	return key[strings.LastIndex(key, "/")+1:]
}

// variant is an informer set up in a particular way, run over a small
// workload next to client-go's informer set up the same way.
type variant struct {
	name string
	// kind writes the objects (and lists them for the expected state).
	kind kindClient
	// lw returns the ListWatches under test, given the test namespaces.
	lw func(namespaces []string) lwPair
	// example is the type the informers store; kind.example() if nil.
	example runtime.Object
	// scoped limits comparisons to the test namespaces; a namespaced
	// informer is compared unscoped, so that any object from elsewhere
	// in its store shows up as a difference.
	scoped bool
	// want lists what the informers must hold at the end.
	want func(t *testing.T, namespaces []string) snapshot
	// seen says which written objects the informers see; nil when objects
	// move in and out of view, so no exact history can be expected.
	seen func(w written, namespaces []string) bool
	// after runs extra writes once the workload is done.
	after func(ctx context.Context, c *churn) error
	// checkStored checks one stored object.
	checkStored func(obj any) error
}

// TestInformerVariants runs informers restricted by a label selector, by a
// field selector, to one namespace, delivering only metadata
// (PartialObjectMetadata), and on a custom resource through the dynamic
// client (unstructured), each over a small workload and next to client-go's
// informer built the same way.
func TestInformerVariants(t *testing.T) {
	s := needServer(t)
	gold := metav1.ListOptions{LabelSelector: "kcache.io/tier=gold"}
	onNodeA := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", "node-a").String()}
	tiered := podClient{client: s.client, shape: func(p *corev1.Pod) {
		p.Labels["kcache.io/tier"] = map[bool]string{true: "gold", false: "silver"}[evenName(p.Name)]
	}}
	bound := podClient{client: s.client, shape: func(p *corev1.Pod) {
		p.Spec.NodeName = map[bool]string{true: "node-a", false: "node-b"}[evenName(p.Name)]
	}}
	configMaps := configMapClient{client: s.client}
	configMapsGVR := corev1.SchemeGroupVersion.WithResource("configmaps")
	listed := func(kind kindClient, restrict metav1.ListOptions) func(t *testing.T, namespaces []string) snapshot {
		return func(t *testing.T, namespaces []string) snapshot {
			return listSnapshotWith(t, kind, restrict, namespaces...)
		}
	}
	variants := []variant{
		{
			name: "label selector",
			kind: tiered,
			lw: func([]string) lwPair {
				l, w := tiered.listWatch("")
				return pairFromFuncs(restricted(l, w, gold))
			},
			scoped: true,
			want:   listed(tiered, gold),
			after:  swapTiers,
		},
		{
			name: "field selector",
			kind: bound,
			lw: func([]string) lwPair {
				l, w := bound.listWatch("")
				return pairFromFuncs(restricted(l, w, onNodeA))
			},
			scoped: true,
			want:   listed(bound, onNodeA),
			seen:   func(w written, _ []string) bool { return evenName(keyName(w.key)) },
		},
		{
			name: "one namespace via NewListWatchFromClient",
			kind: configMaps,
			lw: func(namespaces []string) lwPair {
				rc := s.client.CoreV1().RESTClient()
				return lwPair{
					kcache:   kcache.NewListWatchFromClient(rc, "configmaps", namespaces[0], fields.Everything()),
					clientGo: clientgocache.NewListWatchFromClient(rc, "configmaps", namespaces[0], fields.Everything()),
				}
			},
			want: func(t *testing.T, namespaces []string) snapshot { return listSnapshot(t, configMaps, namespaces[0]) },
			seen: func(w written, namespaces []string) bool { return strings.HasPrefix(w.key, namespaces[0]+"/") },
		},
		{
			name:    "metadata only",
			kind:    configMaps,
			example: &metav1.PartialObjectMetadata{},
			lw: func([]string) lwPair {
				return pairFromFuncs(metadataListWatch(s.metadata, configMapsGVR, ""))
			},
			scoped: true,
			want:   listed(configMaps, metav1.ListOptions{}),
			seen:   func(written, []string) bool { return true },
			checkStored: func(obj any) error {
				if _, ok := obj.(*metav1.PartialObjectMetadata); !ok {
					return fmt.Errorf("stored %T, want *v1.PartialObjectMetadata", obj)
				}
				return nil
			},
		},
		{
			// kind, lw and want are filled in once the CRD exists.
			name:   "custom resource via the dynamic client",
			scoped: true,
			seen:   func(written, []string) bool { return true },
			checkStored: func(obj any) error {
				u, ok := obj.(*unstructured.Unstructured)
				if !ok || u.GetKind() != "Widget" {
					return fmt.Errorf("stored %T (kind %v), want a Widget *unstructured.Unstructured", obj, u)
				}
				return nil
			},
		},
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			if v.kind == nil {
				widgets := needWidgets(t, s)
				v.kind = widgets
				v.lw = func([]string) lwPair { return pairFromFuncs(widgets.listWatch("")) }
				v.want = listed(widgets, metav1.ListOptions{})
			}
			runVariant(t, s, v)
		})
	}
}

// runVariant runs v's informers over smallChurn and checks them.
func runVariant(t *testing.T, s *server, v variant) {
	ctx := context.Background()
	namespaces := s.namespaces(t, "variant", 2)
	if dc, ok := v.kind.(dynamicClient); ok {
		t.Cleanup(func() { deleteAll(t, dc, namespaces) })
	}
	c := newChurn(smallChurn, v.kind, namespaces)
	if err := c.prepopulate(ctx); err != nil {
		t.Fatalf("prepopulate: %v", err)
	}
	example := v.example
	if example == nil {
		example = v.kind.example()
	}
	var scope []string
	if v.scoped {
		scope = namespaces
	}
	lw := v.lw(namespaces)
	ours := start(t, "kcache", kcacheInformer{kcache.NewSharedIndexInformer(lw.kcache, example, 0, kcache.Indexers{})}, 1, scope...)
	theirs := start(t, "client-go", clientGoInformer{clientgocache.NewSharedIndexInformer(lw.clientGo, example, 0, clientgocache.Indexers{})}, 1, scope...)
	if err := c.run(ctx, nil); err != nil {
		t.Fatalf("workload: %v", err)
	}
	if v.after != nil {
		if err := v.after(ctx, c); err != nil {
			t.Fatalf("extra writes: %v", err)
		}
	}
	c.account()
	want := v.want(t, namespaces)
	if len(want) == 0 {
		t.Fatal("the informers are expected to hold nothing; the variant checks nothing")
	}
	waitConverged(t, want, ours, theirs)
	countEvents(ours, theirs)
	compareCounts(t, ours.early[0], theirs.early[0])
	if v.seen != nil {
		visible := c.w.ledger.filter(func(w written) bool { return v.seen(w, namespaces) })
		checkComplete(t, visible, v.kind.deleteMarks(), ours, theirs)
	}
	if v.checkStored != nil {
		for _, obj := range ours.informer.storeList() {
			if err := v.checkStored(obj); err != nil {
				t.Fatalf("kcache store: %v", err)
			}
		}
	}
	tally.scenarios.Add(1)
}

// swapTiers moves a quarter of the surviving objects from one tier to the
// other, so that objects enter and leave a label selector's view.
func swapTiers(ctx context.Context, c *churn) error {
	for i, obj := range c.live {
		if c.plan.deletes(i) || i%4 != 1 {
			continue
		}
		_, err := c.w.update(ctx, obj, func(o metav1.Object) {
			labels := o.GetLabels()
			labels["kcache.io/tier"] = map[string]string{"gold": "silver", "silver": "gold"}[labels["kcache.io/tier"]]
			o.SetLabels(labels)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// deleteAll removes what a dynamic client's test created in namespaces
// (the namespaces' own cleanup only knows Pods and ConfigMaps).
func deleteAll(t *testing.T, dc dynamicClient, namespaces []string) {
	for _, ns := range namespaces {
		err := dc.client.Resource(dc.gvr).Namespace(ns).DeleteCollection(context.Background(), metav1.DeleteOptions{}, metav1.ListOptions{})
		if err != nil {
			t.Errorf("cleanup: delete %s in %s: %v", dc.gvr.Resource, ns, err)
		}
	}
}
