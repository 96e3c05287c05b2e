package cache

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	framework "github.com/kcache/cache/testing"
)

var configMapsGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

func TestInformerFactory_SharesStartsSyncsAndShutsDown(t *testing.T) {
	pods := framework.NewFakeControllerSource()
	defer pods.Shutdown()
	pods.Add(testPod("ns", "a", ""))
	cms := framework.NewFakeControllerSource()
	defer cms.Shutdown()
	cms.Add(&v1.ConfigMap{})

	made := 0
	lwFor := func(src *framework.FakeControllerSource) func() ListerWatcher {
		return func() ListerWatcher { made++; return src }
	}
	f := NewInformerFactory(0)
	first := f.InformerFor(podsGVR, &v1.Pod{}, lwFor(pods))
	second := f.InformerFor(podsGVR, &v1.Pod{}, lwFor(pods))
	if first != second || made != 1 {
		t.Fatalf("same resource gave different informers (made %d)", made)
	}
	typed := TypedInformerFor[*v1.Pod](f, podsGVR, lwFor(pods))
	if typed.GetIndexer() != first.GetIndexer() {
		t.Error("typed view is not the shared informer")
	}
	if _, err := first.GetIndexer().ByIndex(NamespaceIndex, "ns"); err != nil {
		t.Errorf("no namespace index: %v", err)
	}

	stop := make(chan struct{})
	f.Start(stop)
	synced := f.WaitForCacheSync(stop)
	if !synced[podsGVR] || len(synced) != 1 {
		t.Errorf("synced = %v, want pods only", synced)
	}

	// An informer asked for after Start is started by the next Start.
	late := f.InformerFor(configMapsGVR, &v1.ConfigMap{}, lwFor(cms))
	if late.HasSynced() {
		t.Fatal("not started yet, but synced")
	}
	f.Start(stop)
	synced = f.WaitForCacheSync(stop)
	if !synced[podsGVR] || !synced[configMapsGVR] {
		t.Errorf("synced = %v, want both", synced)
	}

	f.Shutdown()
	if !first.IsStopped() || !late.IsStopped() {
		t.Error("Shutdown left an informer running")
	}
	f.Start(stop) // no-op after Shutdown
	close(stop)
}

func TestInformerFactory_StopChannelStopsInformers(t *testing.T) {
	src := framework.NewFakeControllerSource()
	defer src.Shutdown()
	f := NewInformerFactory(time.Minute)
	inf := f.InformerFor(podsGVR, &v1.Pod{}, func() ListerWatcher { return src })
	stop := make(chan struct{})
	f.Start(stop)
	close(stop)
	// Only the stop channel ended them: Shutdown has not been called.
	f.running.Wait()
	if !inf.IsStopped() {
		t.Error("informer still running after stop closed")
	}
	f.Shutdown()
}

func TestExampleOf(t *testing.T) {
	if _, ok := exampleOf[*v1.Pod]().(*v1.Pod); !ok {
		t.Error("want a *v1.Pod")
	}
	if exampleOf[v1.Pod]() != nil {
		t.Error("a non-pointer type has no runtime.Object example")
	}
}
