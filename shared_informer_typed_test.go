package cache

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// typedCalls records a typed pod handler's calls as strings.
type typedCalls struct {
	mu    sync.Mutex
	calls []string
}

func (c *typedCalls) add(format string, args ...interface{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, fmt.Sprintf(format, args...))
}

func (c *typedCalls) snapshot() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.calls...)
}

func (c *typedCalls) handler() TypedResourceEventHandler[*v1.Pod] {
	return TypedResourceEventHandlerDetailedFuncs[*v1.Pod]{
		AddFunc: func(p *v1.Pod, initial bool) {
			c.add("add %s/%s@%s initial=%t", p.Namespace, p.Name, p.ResourceVersion, initial)
		},
		UpdateFunc: func(old, p *v1.Pod) {
			c.add("update %s/%s@%s->%s", p.Namespace, p.Name, old.ResourceVersion, p.ResourceVersion)
		},
		DeleteFunc: func(d DeletedObject[*v1.Pod]) {
			rv := ""
			if d.OptionalObj != nil {
				rv = d.OptionalObj.ResourceVersion
			}
			c.add("delete %s@%s tombstone=%t", d.GetKey(), rv, d.FinalStateUnknown != nil)
		},
	}
}

func typedNodeIndex(p *v1.Pod) ([]string, error) { return []string{p.Spec.NodeName}, nil }

// typedPodNames returns the sorted names of pods.
func typedPodNames(pods []*v1.Pod) []string {
	out := make([]string, 0, len(pods))
	for _, p := range pods {
		out = append(out, p.Name)
	}
	sort.Strings(out)
	return out
}

func TestTypedSharedIndexInformer_TypedHandlersAndIndexes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := infSource(t, 0)
		src.Add(podOnNode("ns", "a", "n1", 0))
		src.Add(podOnNode("ns", "b", "n2", 0))
		base := NewSharedIndexInformer(src, &v1.Pod{}, 0, Indexers{NamespaceIndex: MetaNamespaceIndexFunc})
		inf := NewTypedSharedIndexInformer[*v1.Pod](base)
		if err := inf.AddTypedIndexers(TypedIndexers[*v1.Pod]{"by-node": typedNodeIndex}); err != nil {
			t.Fatalf("AddTypedIndexers: %v", err)
		}
		calls := &typedCalls{}
		logger := klog.Background()
		reg, err := inf.AddTypedEventHandler(calls.handler(), HandlerOptions{Logger: &logger})
		if err != nil {
			t.Fatalf("AddTypedEventHandler: %v", err)
		}
		infRun(t, inf)
		<-reg.HasSyncedChecker().Done()
		src.Modify(podOnNode("ns", "a", "n2", 0))
		src.Delete(podOnNode("ns", "b", "n2", 0))
		synctest.Wait()

		got := calls.snapshot()
		sort.Strings(got[:2])
		want := []string{
			"add ns/a@1 initial=true", "add ns/b@2 initial=true",
			"update ns/a@1->3", "delete ns/b@4 tombstone=false",
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("typed handler calls (-want +got):\n%s", diff)
		}

		idx := inf.GetTypedIndexer()
		onN2, err := idx.ByTypedIndex("by-node", "n2")
		if err != nil {
			t.Fatalf("ByTypedIndex: %v", err)
		}
		if diff := cmp.Diff([]string{"a"}, typedPodNames(onN2)); diff != "" {
			t.Errorf("ByTypedIndex(by-node, n2) (-want +got):\n%s", diff)
		}
		sameNode, err := idx.TypedIndex("by-node", podOnNode("ns", "x", "n2", 0))
		if err != nil {
			t.Fatalf("TypedIndex: %v", err)
		}
		if diff := cmp.Diff([]string{"a"}, typedPodNames(sameNode)); diff != "" {
			t.Errorf("TypedIndex(by-node, pod on n2) (-want +got):\n%s", diff)
		}
		if _, err := idx.ByTypedIndex("no-such-index", "n2"); err == nil {
			t.Errorf("ByTypedIndex on an unknown index succeeded")
		}
		// Typed indexes can be added to the running informer's cache.
		if err := idx.AddTypedIndexers(TypedIndexers[*v1.Pod]{"by-name": func(p *v1.Pod) ([]string, error) {
			return []string{p.Name}, nil
		}}); err != nil {
			t.Fatalf("AddTypedIndexers while running: %v", err)
		}
		byName, err := idx.ByTypedIndex("by-name", "a")
		if err != nil || len(byName) != 1 || byName[0].Spec.NodeName != "n2" {
			t.Errorf("ByTypedIndex(by-name, a) = %v, %v", byName, err)
		}
	})
}

// As in client-go, delivering an object that is not a T to a typed handler
// panics (seen here with the keep-serving opt-in, which lets later
// notifications through).
func TestTypedSharedIndexInformer_ObjectsOfAnotherTypePanic(t *testing.T) {
	panics := keepServing(t)
	synctest.Test(t, func(t *testing.T) {
		src := infSource(t, 1)
		base := newSharedIndexInformer(src, &v1.Pod{}, SharedIndexInformerOptions{
			Indexers: Indexers{NamespaceIndex: MetaNamespaceIndexFunc},
		}, clock.RealClock{})
		inf := NewTypedSharedIndexInformer[*v1.Pod](base)
		calls := &typedCalls{}
		reg, err := inf.AddTypedEventHandler(calls.handler())
		if err != nil {
			t.Fatal(err)
		}
		infRun(t, inf)
		<-reg.HasSyncedChecker().Done()

		svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "svc", ResourceVersion: "7"}}
		// Deliver objects of the wrong type straight to the listeners, as
		// a misconfigured informer would.
		base.deliverMu.Lock()
		base.OnAdd(svc, false)
		base.OnUpdate(svc, svc.DeepCopy())
		base.OnDelete(svc)
		base.OnDelete(DeletedFinalStateUnknown{Key: "ns/svc", Obj: svc})
		base.deliverMu.Unlock()
		src.Modify(testPod("ns", "p0", ""))
		// Each call after a panicking one waits listenerPanicPause.
		time.Sleep(time.Minute)
		synctest.Wait()
		want := []string{
			"add ns/p0@1 initial=true",
			"update ns/p0@1->2",
		}
		if diff := cmp.Diff(want, calls.snapshot()); diff != "" {
			t.Errorf("typed handler calls (-want +got):\n%s", diff)
		}
		if got := panics.all(); len(got) != 4 || !strings.Contains(got[0], "*v1.Service") {
			t.Errorf("panics = %q, want 4 type assertions naming *v1.Service", got)
		}

		if err := inf.GetIndexer().Add(svc); err != nil {
			t.Fatal(err)
		}
		// Typed lookups assert each cached object, as client-go's do: a
		// Service among the results is a panic naming both types.
		lookups := map[string]func(){
			"ByTypedIndex": func() { _, _ = inf.GetTypedIndexer().ByTypedIndex(NamespaceIndex, "ns") },
			"TypedIndex":   func() { _, _ = inf.GetTypedIndexer().TypedIndex(NamespaceIndex, testPod("ns", "any", "1")) },
		}
		for name, lookup := range lookups {
			msg := fmt.Sprint(capturePanic(lookup))
			if !strings.Contains(msg, "*v1.Service") || !strings.Contains(msg, "*v1.Pod") {
				t.Errorf("%s over a cached Service: panic %q, want a type assertion naming *v1.Service and *v1.Pod", name, msg)
			}
		}
	})
}

func TestTypedSharedIndexInformer_AddTypedEventHandlerRefusesBadArguments(t *testing.T) {
	inf := NewTypedSharedIndexInformer[*v1.Pod](infNewPodInformer(infSource(t, 0)))
	cases := map[string]struct {
		handler TypedResourceEventHandler[*v1.Pod]
		options []HandlerOptions
	}{
		"two options": {handler: TypedResourceEventHandlerFuncs[*v1.Pod]{}, options: []HandlerOptions{{}, {}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := inf.AddTypedEventHandler(tc.handler, tc.options...); err == nil {
				t.Errorf("AddTypedEventHandler succeeded")
			}
		})
	}
}
