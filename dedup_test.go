package cache

import (
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"
	"unsafe"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// sharePod builds a pod of ReplicaSet rs; i makes its name, IP and
// container ID its own. Every call allocates everything afresh, as a
// decoder does.
func sharePod(rs, i int) *v1.Pod {
	ts := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      fmt.Sprintf("app-%d-%05d", rs, i),
			Namespace: fmt.Sprintf("ns-%d", rs%3),
			Labels:    map[string]string{"app": fmt.Sprintf("app-%d", rs), "tier": "web"},
			ManagedFields: []metav1.ManagedFieldsEntry{{
				Manager: "controller", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "v1",
				Time: &ts, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{}}`),
			}},
		},
		Spec: v1.PodSpec{Containers: []v1.Container{{
			Name:  "app",
			Image: fmt.Sprintf("registry/app-%d:1.0", rs),
			Env:   []v1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "2"}},
			Resources: v1.ResourceRequirements{Requests: v1.ResourceList{
				v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("64Mi")}},
			ReadinessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}},
		}}},
		Status: v1.PodStatus{PodIP: fmt.Sprintf("10.0.%d.%d", i/256, i%256), StartTime: &ts,
			ContainerStatuses: []v1.ContainerStatus{{Name: "app", ContainerID: fmt.Sprintf("cri://%08x", i)}}},
	}
}

// shareObj shares obj's parts through s and returns the object to keep.
func shareObj[T any](s *valueSharer, obj T) T { return s.share(obj).(T) }

func sameSlice[T any](a, b []T) bool {
	return len(a) > 0 && len(b) > 0 && unsafe.SliceData(a) == unsafe.SliceData(b)
}

func sameMap[K comparable, V any](a, b map[K]V) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

func TestValueSharer_SharesEqualPartsOnly(t *testing.T) {
	tests := []struct {
		name   string
		shared func(a, b *v1.Pod) bool
		want   bool
	}{
		{"labels of one ReplicaSet", func(a, b *v1.Pod) bool { return sameMap(a.Labels, b.Labels) }, true},
		{"env of one ReplicaSet", func(a, b *v1.Pod) bool { return sameSlice(a.Spec.Containers[0].Env, b.Spec.Containers[0].Env) }, true},
		{"resource requests", func(a, b *v1.Pod) bool {
			return sameMap(a.Spec.Containers[0].Resources.Requests, b.Spec.Containers[0].Resources.Requests)
		}, true},
		{"probe", func(a, b *v1.Pod) bool {
			return a.Spec.Containers[0].ReadinessProbe == b.Spec.Containers[0].ReadinessProbe
		}, true},
		{"managedFields entry's fields", func(a, b *v1.Pod) bool {
			return a.ManagedFields[0].FieldsV1 == b.ManagedFields[0].FieldsV1
		}, true},
		{"namespace string", func(a, b *v1.Pod) bool {
			return unsafe.StringData(a.Namespace) == unsafe.StringData(b.Namespace)
		}, true},
		{"container statuses differ", func(a, b *v1.Pod) bool {
			return sameSlice(a.Status.ContainerStatuses, b.Status.ContainerStatuses)
		}, false},
	}
	s := newValueSharer()
	inA, inB := sharePod(1, 1), sharePod(1, 2)
	wantA, wantB := inA.DeepCopy(), inB.DeepCopy()
	a, b := shareObj(s, inA), shareObj(s, inB)
	if !reflect.DeepEqual(a, wantA) || !reflect.DeepEqual(b, wantB) {
		t.Fatal("sharing changed an object's content")
	}
	if !reflect.DeepEqual(inA, wantA) || !reflect.DeepEqual(inB, wantB) {
		t.Fatal("sharing wrote into its input")
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.shared(a, b); got != tt.want {
				t.Errorf("shared = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestValueSharer_OtherReplicaSetsKeepTheirOwn(t *testing.T) {
	s := newValueSharer()
	a, b := shareObj(s, sharePod(1, 1)), sharePod(2, 1)
	wantB := b.DeepCopy()
	b = shareObj(s, b)
	if !reflect.DeepEqual(b, wantB) {
		t.Fatal("sharing changed an object's content")
	}
	if sameMap(a.Labels, b.Labels) {
		t.Error("labels of different apps are shared")
	}
	if !sameSlice(a.Spec.Containers[0].Env, b.Spec.Containers[0].Env) {
		t.Error("equal env of different apps is not shared")
	}
}

func TestValueSharer_SharedSlicesCannotBeAppendedInto(t *testing.T) {
	s := newValueSharer()
	a, b := sharePod(1, 1), sharePod(1, 2)
	a.Spec.Containers[0].Env = append(make([]v1.EnvVar, 0, 8), a.Spec.Containers[0].Env...)
	a, b = shareObj(s, a), shareObj(s, b)
	env := b.Spec.Containers[0].Env
	if !sameSlice(a.Spec.Containers[0].Env, env) {
		t.Fatal("env not shared")
	}
	if cap(env) != len(env) {
		t.Errorf("shared slice has cap %d > len %d", cap(env), len(env))
	}
	_ = append(env, v1.EnvVar{Name: "C"})
	if got := a.Spec.Containers[0].Env[:cap(a.Spec.Containers[0].Env)]; len(got) > 2 && got[2].Name == "C" {
		t.Error("an append to one pod's env wrote into another's")
	}
}

func TestValueSharer_DeepCopyIsIndependent(t *testing.T) {
	s := newValueSharer()
	a, b := shareObj(s, sharePod(1, 1)), shareObj(s, sharePod(1, 2))
	c := b.DeepCopy()
	c.Labels["tier"] = "db"
	c.Spec.Containers[0].Env[0].Value = "changed"
	c.Spec.Containers[0].ReadinessProbe.Exec.Command[0] = "false"
	if a.Labels["tier"] != "web" || a.Spec.Containers[0].Env[0].Value != "1" ||
		a.Spec.Containers[0].ReadinessProbe.Exec.Command[0] != "true" {
		t.Error("modifying a deep copy changed a pod sharing its parts")
	}
}

func TestValueSharer_Unstructured(t *testing.T) {
	obj := func(name string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]interface{}{"name": name, "labels": map[string]interface{}{"app": "x"}},
			"data":     map[string]interface{}{"k": "v", "n": int64(3), "list": []interface{}{"a", map[string]interface{}{"b": true}}},
		}}
	}
	s := newValueSharer()
	inA, inB := obj("a"), obj("b")
	wantA, wantB := inA.DeepCopy(), inB.DeepCopy()
	a, b := shareObj(s, inA), shareObj(s, inB)
	if !reflect.DeepEqual(a, wantA) || !reflect.DeepEqual(b, wantB) {
		t.Fatal("sharing changed an object's content")
	}
	if !reflect.DeepEqual(inA, wantA) || !reflect.DeepEqual(inB, wantB) {
		t.Fatal("sharing wrote into its input")
	}
	if !sameMap(a.Object["data"].(map[string]interface{}), b.Object["data"].(map[string]interface{})) {
		t.Error("equal data maps are not shared")
	}
}

func TestValueSharer_UniquePositionsStopBeingLookedUp(t *testing.T) {
	s := newValueSharer()
	for i := range siteTrial + 10 {
		s.share(sharePod(1, i))
	}
	plan := s.planOf(reflect.TypeFor[metav1.ObjectMeta]())
	for _, tt := range []struct {
		field string
		off   bool
	}{{"Name", true}, {"Namespace", false}, {"Labels", false}} {
		f, _ := reflect.TypeFor[metav1.ObjectMeta]().FieldByName(tt.field)
		if got := plan.fields[f.Index[0]].site.off.Load(); got != tt.off {
			t.Errorf("%s: site off = %v, want %v", tt.field, got, tt.off)
		}
	}
}

func TestValueSharer_Concurrent(t *testing.T) {
	s := newValueSharer()
	var wg sync.WaitGroup
	pods := make([][]*v1.Pod, 4)
	for g := range pods {
		wg.Go(func() {
			for i := range 200 {
				pods[g] = append(pods[g], shareObj(s, sharePod(i%5, g*1000+i)))
			}
		})
	}
	wg.Wait()
	for g := range pods {
		for i, p := range pods[g] {
			if want := sharePod(i%5, g*1000+i); !reflect.DeepEqual(p, want) {
				t.Fatalf("pod %d of goroutine %d differs after sharing", i, g)
			}
		}
	}
}

// A site that failed its trial is tried again after skipping siteTrial
// values, then twice as many after each further failure; one that passes
// stays on.
func TestSite_TriesAgainAfterSkipping(t *testing.T) {
	var s site
	trial := func(hit bool) {
		t.Helper()
		for i := range siteTrial {
			if !s.enabled() {
				t.Fatalf("off during its trial, after %d lookups", i)
			}
			s.record(hit)
		}
	}
	offFor := func() int {
		n := 0
		for !s.enabled() {
			n++
			if n > siteTrial<<(siteMaxBackoff+1) {
				t.Fatal("never tried again")
			}
		}
		return n
	}
	trial(false)
	if got, want := offFor(), siteTrial<<1-1; got != want {
		t.Errorf("after one failed trial: off for %d values, want %d", got, want)
	}
	trial(false)
	if got, want := offFor(), siteTrial<<2-1; got != want {
		t.Errorf("after two failed trials: off for %d values, want %d", got, want)
	}
	trial(true)
	for range 4 * siteTrial {
		if !s.enabled() {
			t.Fatal("a site that passed its trial went off")
		}
		s.record(false)
	}
}

// Values that start to repeat only after their position's first trial are
// shared once a later trial sees them repeat.
func TestValueSharer_LateRepeatsShared(t *testing.T) {
	type obj struct{ Tags []string }
	s := newValueSharer()
	for i := range siteTrial {
		shareObj(s, &obj{Tags: []string{fmt.Sprint("unique-", i)}})
	}
	var last []*obj
	for range 8 * siteTrial {
		last = append(last, shareObj(s, &obj{Tags: []string{string([]byte("again"))}}))
	}
	n := len(last)
	if !sameSlice(last[n-1].Tags, last[n-2].Tags) {
		t.Error("repeating values are still not shared")
	}
}
