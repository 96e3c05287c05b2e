package cache

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	fcache "github.com/kcache/cache/testing"
)

// These tests hold value sharing (dedup_switch.go, internal/dedup) to what
// a default must be: scoped to one informer, read-race free, exact, and
// behind a switch that fails closed (internal/dedup's own tests hold it to
// one position and to returning its memory).

// safetyPod is a pod of app whose labels and env are those of its app.
func safetyPod(app string, i int) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: fmt.Sprintf("%s-%d", app, i), ResourceVersion: "1",
			Labels: map[string]string{"app": app, "tier": "web"},
		},
		Spec: v1.PodSpec{Containers: []v1.Container{{
			Name: "c", Image: "registry/" + app,
			Env: []v1.EnvVar{{Name: "MODE", Value: "prod"}, {Name: "APP", Value: app}},
		}}},
	}
}

// runInformer runs inf until the test ends and waits for its first sync.
func runInformer(t *testing.T, inf SharedInformer) {
	t.Helper()
	infRun(t, inf)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if !WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("informer did not sync")
	}
}

// cachedPods returns the pods inf caches, by name.
func cachedPods(t *testing.T, inf SharedIndexInformer) []*v1.Pod {
	t.Helper()
	var pods []*v1.Pod
	for _, obj := range inf.GetStore().List() {
		pods = append(pods, obj.(*v1.Pod))
	}
	slices.SortFunc(pods, func(a, b *v1.Pod) int { return strings.Compare(a.Name, b.Name) })
	if len(pods) == 0 {
		t.Fatal("no pods cached")
	}
	return pods
}

// A write into a cached object of one informer (against the contract)
// reaches no object of another informer, even where the values were equal.
func TestDedup_NeverAcrossInformers(t *testing.T) {
	eagerDedup(t)
	// The guards would read the values this test writes into, a race of
	// the test's making: they run only when kicked, and none is kicked.
	kickedGuards(t)
	pods, cms, deps := fcache.NewFakeControllerSource(), fcache.NewFakeControllerSource(), fcache.NewFakeControllerSource()
	for _, src := range []*fcache.FakeControllerSource{pods, cms, deps} {
		t.Cleanup(src.Shutdown)
	}
	for i := range 20 {
		pods.Add(safetyPod("web", i))
	}
	cms.Add(&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}, Data: map[string]string{"app": "web", "tier": "web"}})
	tmpl := safetyPod("web", 0)
	deps.Add(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"},
		Spec: appsv1.DeploymentSpec{Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: tmpl.Labels}, Spec: tmpl.Spec}}})
	podInf := NewSharedIndexInformer(pods, &v1.Pod{}, 0, Indexers{})
	cmInf := NewSharedIndexInformer(cms, &v1.ConfigMap{}, 0, Indexers{})
	depInf := NewSharedIndexInformer(deps, &appsv1.Deployment{}, 0, Indexers{})
	for _, inf := range []SharedIndexInformer{podInf, cmInf, depInf} {
		runInformer(t, inf)
	}
	cached := cachedPods(t, podInf)
	if !sameMap(cached[0].Labels, cached[1].Labels) {
		t.Fatal("pods of one app do not share their labels: sharing is off and the test proves nothing")
	}
	// Against the contract: write into the other informers' cached objects.
	cm := cmInf.GetStore().List()[0].(*v1.ConfigMap)
	cm.Data["app"] = "hijacked"
	dep := depInf.GetStore().List()[0].(*appsv1.Deployment)
	dep.Spec.Template.Spec.Containers[0].Env[0].Value = "hijacked"
	dep.Spec.Template.Labels["tier"] = "hijacked"
	for _, p := range cachedPods(t, podInf) {
		if p.Labels["app"] != "web" || p.Labels["tier"] != "web" || p.Spec.Containers[0].Env[0].Value != "prod" {
			t.Errorf("pod %s changed by writes into another informer's objects: labels %v, env %v", p.Name, p.Labels, p.Spec.Containers[0].Env)
		}
	}
}

// quantityPod is a pod whose quantities have never been printed (their
// cached strings are empty), reachable by address through its volumes and
// env and held in its resource maps.
func quantityPod(i int) *v1.Pod {
	p := safetyPod("web", i)
	size := *resource.NewQuantity(1<<30, resource.BinarySI)
	p.Spec.Volumes = []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{SizeLimit: &size}}}}
	c := &p.Spec.Containers[0]
	c.Env = append(c.Env, v1.EnvVar{Name: "MEM", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{
		Resource: "limits.memory", Divisor: *resource.NewQuantity(1<<20, resource.BinarySI)}}})
	c.Resources = v1.ResourceRequirements{
		Limits:   v1.ResourceList{v1.ResourceMemory: *resource.NewQuantity(256<<20, resource.BinarySI)},
		Requests: v1.ResourceList{v1.ResourceCPU: *resource.NewMilliQuantity(250, resource.DecimalSI)},
	}
	return p
}

// Printing and formatting the quantities of many cached pods from many
// goroutines, while updates flow, writes no memory another pod shares (the
// race detector would report it): a Quantity caches its string on String().
func TestDedup_ReadsDoNotRace(t *testing.T) {
	eagerDedup(t)
	src := fcache.NewFakeControllerSource()
	t.Cleanup(src.Shutdown)
	const n = 40
	for i := range n {
		src.Add(quantityPod(i))
	}
	inf := NewSharedIndexInformer(src, &v1.Pod{}, 0, Indexers{})
	runInformer(t, inf)
	p := cachedPods(t, inf)
	if !sameMap(p[0].Labels, p[1].Labels) || !sameMap(p[0].Spec.Containers[0].Resources.Limits, p[1].Spec.Containers[0].Resources.Limits) {
		t.Fatal("labels or resource maps not shared: sharing is off and the test proves nothing")
	}
	if p[0].Spec.Volumes[0].EmptyDir.SizeLimit == p[1].Spec.Volumes[0].EmptyDir.SizeLimit || sameSlice(p[0].Spec.Containers[0].Env, p[1].Spec.Containers[0].Env) {
		t.Error("a quantity two pods can reach by address is shared")
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			p := quantityPod(i % n)
			p.Labels["rev"] = fmt.Sprint(i)
			src.Modify(p)
			time.Sleep(time.Millisecond)
		}
	})
	// Each reader takes its pods before the start and touches no lock
	// after it, so that nothing but the reads orders one reader after
	// another: the race detector then sees any write a read makes into
	// memory two pods share.
	start := make(chan struct{})
	var readers sync.WaitGroup
	for g := range 8 {
		var mine []*v1.Pod
		for i, p := range cachedPods(t, inf) {
			// Pods of its own, as client-go allows: two readers of one
			// object race anywhere.
			if i%8 == g {
				mine = append(mine, p)
			}
		}
		readers.Go(func() {
			<-start
			// First the bare reads, before anything (fmt's pools) could
			// order the readers; then printing, as klog and fmt do.
			for _, p := range mine {
				_ = p.Spec.Volumes[0].EmptyDir.SizeLimit.String()
				_ = p.Spec.Containers[0].Env[2].ValueFrom.ResourceFieldRef.Divisor.String()
			}
			for round := range 20 {
				for _, p := range mine {
					c := &p.Spec.Containers[0]
					_ = fmt.Sprintf("%v %s %d", c.Resources, p.Spec.Volumes[0].EmptyDir.SizeLimit, g+round)
					_ = p.String()
					_ = c.Resources.Limits.Memory().String()
					q := c.Resources.Requests[v1.ResourceCPU]
					_ = q.AsDec()
				}
			}
		})
	}
	close(start)
	readers.Wait()
	close(stop)
	wg.Wait()
}

// Every cached object marshals to the very bytes of the object the source
// returned, at list time and after updates: typed and unstructured, -0 and
// +0, nil and empty, quantities spelt two ways.
func TestDedup_ExactBytes(t *testing.T) {
	mkU := func(name string, content map[string]interface{}) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "example.com/v1", "kind": "Thing",
			"metadata": map[string]interface{}{"namespace": "ns", "name": name, "resourceVersion": "1"},
		}}
		for k, v := range content {
			u.Object[k] = v
		}
		return u
	}
	negZero := math.Copysign(0, -1)
	qPod := func(name, cpu string) *v1.Pod {
		p := safetyPod("web", 0)
		p.Name = name
		p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}
		return p
	}
	tests := []struct {
		name    string
		example runtimeObject
		objs    []runtimeObject
		updates []runtimeObject
	}{
		{"floats -0 and +0", &unstructured.Unstructured{}, []runtimeObject{
			mkU("a", map[string]interface{}{"spec": map[string]interface{}{"floats": []interface{}{1.5, 0.0, 0.0}}}),
			mkU("b", map[string]interface{}{"spec": map[string]interface{}{"floats": []interface{}{1.5, negZero, negZero}}}),
			mkU("e", map[string]interface{}{"spec": map[string]interface{}{"floats": []interface{}{1.5, negZero}}}),
			mkU("c", map[string]interface{}{"spec": map[string]interface{}{"x": negZero}}),
			mkU("d", map[string]interface{}{"spec": map[string]interface{}{"x": 0.0}}),
		}, []runtimeObject{
			mkU("a", map[string]interface{}{"spec": map[string]interface{}{"floats": []interface{}{1.5, negZero, negZero}}}),
			mkU("e", map[string]interface{}{"spec": map[string]interface{}{"floats": []interface{}{1.5, 0.0}}}),
			mkU("d", map[string]interface{}{"spec": map[string]interface{}{"x": negZero}}),
		}},
		{"nil and empty", &unstructured.Unstructured{}, []runtimeObject{
			mkU("a", map[string]interface{}{"spec": map[string]interface{}{"list": []interface{}{}, "map": map[string]interface{}{}}}),
			mkU("b", map[string]interface{}{"spec": map[string]interface{}{"list": nil, "map": nil}}),
		}, []runtimeObject{
			mkU("b", map[string]interface{}{"spec": map[string]interface{}{"list": []interface{}{}, "map": nil}}),
		}},
		{"typed pods", &v1.Pod{}, []runtimeObject{
			qPod("a", "1"), qPod("b", "1000m"), qPod("c", "0.5"), qPod("d", "500m"), quantityPod(1), quantityPod(2),
		}, []runtimeObject{
			qPod("a", "1000m"), qPod("b", "1"), func() runtimeObject { p := quantityPod(2); p.Labels = map[string]string{}; return p }(),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := fcache.NewFakeControllerSource()
			t.Cleanup(src.Shutdown)
			for _, o := range tt.objs {
				src.Add(o)
			}
			var mu sync.Mutex
			returned := map[string][]byte{}
			inf := NewSharedIndexInformer(src, tt.example, 0, Indexers{})
			if err := inf.SetTransform(func(obj interface{}) (interface{}, error) {
				b, err := json.Marshal(obj)
				if err != nil {
					return nil, err
				}
				key, _ := MetaNamespaceKeyFunc(obj)
				mu.Lock()
				returned[key] = b
				mu.Unlock()
				return obj, nil
			}); err != nil {
				t.Fatal(err)
			}
			runInformer(t, inf)
			check := func(when string) {
				mu.Lock()
				defer mu.Unlock()
				for _, obj := range inf.GetStore().List() {
					key, _ := MetaNamespaceKeyFunc(obj)
					got, err := json.Marshal(obj)
					if err != nil {
						t.Fatal(err)
					}
					if string(got) != string(returned[key]) {
						t.Errorf("%s: %s cached as\n%s\nreturned as\n%s", when, key, got, returned[key])
					}
				}
			}
			check("after the list")
			for _, o := range tt.updates {
				src.Modify(o)
			}
			waitFor(t, func() bool { return reflect.DeepEqual(infStoreState(inf.GetStore()), infTruth(t, src)) })
			check("after updates")
		})
	}
}

// runtimeObject is an API object the fake source can hold.
type runtimeObject = runtime.Object

// waitFor polls cond until it holds or ten seconds pass.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// SetValueSharing turns sharing off for one informer, before it runs: its
// cached objects are the very ones its transform returned, while another
// informer of the process shares.
func TestSetValueSharing_PerInformer(t *testing.T) {
	eagerDedup(t)
	src := fcache.NewFakeControllerSource()
	t.Cleanup(src.Shutdown)
	for i := range 10 {
		src.Add(safetyPod("web", i))
	}
	var mu sync.Mutex
	returned := map[string]interface{}{}
	keep := func(obj interface{}) (interface{}, error) {
		mu.Lock()
		defer mu.Unlock()
		key, _ := MetaNamespaceKeyFunc(obj)
		returned[key] = obj
		return obj, nil
	}
	plain := NewSharedIndexInformer(src, &v1.Pod{}, 0, Indexers{})
	typed := NewTypedSharedIndexInformer[*v1.Pod](NewSharedIndexInformer(src, &v1.Pod{}, 0, Indexers{}))
	sharing := NewSharedIndexInformer(src, &v1.Pod{}, 0, Indexers{})
	for _, inf := range []SharedIndexInformer{plain, typed} {
		if err := SetValueSharing(inf, false); err != nil {
			t.Fatalf("SetValueSharing: %v", err)
		}
	}
	if err := plain.SetTransform(keep); err != nil {
		t.Fatal(err)
	}
	for _, inf := range []SharedIndexInformer{plain, typed, sharing} {
		runInformer(t, inf)
	}
	mu.Lock()
	for _, obj := range plain.GetStore().List() {
		key, _ := MetaNamespaceKeyFunc(obj)
		if obj != returned[key] {
			t.Errorf("%s: cached object is not the one the transform returned", key)
		}
	}
	mu.Unlock()
	if p := cachedPods(t, typed); sameMap(p[0].Labels, p[1].Labels) {
		t.Error("the typed informer shares values after SetValueSharing(false)")
	}
	if p := cachedPods(t, sharing); !sameMap(p[0].Labels, p[1].Labels) {
		t.Error("another informer of the process stopped sharing")
	}
	if err := SetValueSharing(sharing, false); err == nil {
		t.Error("SetValueSharing after Run: no error")
	}
	if err := SetValueSharing(struct{ SharedIndexInformer }{sharing}, false); err == nil || !strings.Contains(err.Error(), "not an informer of this package") {
		t.Errorf("SetValueSharing on a foreign informer: %v", err)
	}
}
