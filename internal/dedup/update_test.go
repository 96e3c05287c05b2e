package dedup

import (
	"reflect"
	"slices"
	"testing"
	"unsafe"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// An update takes the cached object's memory for every part equal to it,
// walks the parts that differ as a new object's, and writes into neither
// the update nor the cached object.
func TestDeduper_UpdateTakesEqualPartsOfCached(t *testing.T) {
	update := func(p *v1.Pod) *v1.Pod {
		p.ResourceVersion = "2"
		p.Labels["tier"] = "db"
		p.Status.ContainerStatuses[0].Ready = true
		return p
	}
	tests := []struct {
		name string
		got  func(cached, out, in *v1.Pod) bool
	}{
		{"containers are the cached array", func(c, o, _ *v1.Pod) bool { return sameSlice(c.Spec.Containers, o.Spec.Containers) }},
		{"managedFields are the cached array", func(c, o, _ *v1.Pod) bool { return sameSlice(c.ManagedFields, o.ManagedFields) }},
		{"equal name is the cached string", func(c, o, _ *v1.Pod) bool { return unsafe.StringData(c.Name) == unsafe.StringData(o.Name) }},
		{"changed labels are not the cached map", func(c, o, _ *v1.Pod) bool { return !sameMap(c.Labels, o.Labels) }},
		{"changed statuses are a copy of neither", func(c, o, in *v1.Pod) bool {
			return !sameSlice(c.Status.ContainerStatuses, o.Status.ContainerStatuses) && !sameSlice(in.Status.ContainerStatuses, o.Status.ContainerStatuses)
		}},
		{"in changed statuses, the equal container ID is the cached string", func(c, o, _ *v1.Pod) bool {
			return unsafe.StringData(c.Status.ContainerStatuses[0].ContainerID) == unsafe.StringData(o.Status.ContainerStatuses[0].ContainerID)
		}},
		{"changed resource version is the update's", func(_, o, in *v1.Pod) bool { return o.ResourceVersion == "2" }},
	}
	s := eagerDeduper()
	cached := dedupObj(s, dedupPod(1, 7))
	cachedRefs, cachedWant := references(cached), dedupPod(1, 7)
	in := update(dedupPod(1, 7))
	inRefs := references(in)
	out := s.dedupLike(in, cached).(*v1.Pod)
	if !reflect.DeepEqual(out, update(dedupPod(1, 7))) || !reflect.DeepEqual(in, update(dedupPod(1, 7))) {
		t.Fatal("the update's content changed")
	}
	if !reflect.DeepEqual(cached, cachedWant) || !slices.Equal(references(cached), cachedRefs) {
		t.Fatal("the cached object was written")
	}
	if !slices.Equal(references(in), inRefs) {
		t.Fatal("the update was written")
	}
	for _, tt := range tests {
		if !tt.got(cached, out, in) {
			t.Errorf("%s: no", tt.name)
		}
	}
}

// Whatever the twin, the result is deep-equal to the update and the
// inputs are left as they were.
func TestDeduper_UpdateAnyTwin(t *testing.T) {
	unstr := func(n int64) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]interface{}{"spec": map[string]interface{}{"n": n, "list": []interface{}{"a"}}}}
	}
	tests := []struct {
		name      string
		obj, twin func() interface{}
	}{
		{"equal pod", func() interface{} { return dedupPod(1, 1) }, func() interface{} { return dedupPod(1, 1) }},
		{"other pod", func() interface{} { return dedupPod(1, 1) }, func() interface{} { return dedupPod(2, 9) }},
		{"pod with fewer containers", func() interface{} { return dedupPod(1, 1) }, func() interface{} {
			p := dedupPod(1, 1)
			p.Spec.Containers = nil
			p.Labels = nil
			return p
		}},
		{"twin of another type", func() interface{} { return dedupPod(1, 1) }, func() interface{} { return &v1.Service{} }},
		{"nodes", func() interface{} { return newWalkNode(1) }, func() interface{} { return newWalkNode(2) }},
		{"unstructured", func() interface{} { return unstr(1) }, func() interface{} { return unstr(2) }},
		{"empty node beside a full one", func() interface{} { return &walkNode{} }, func() interface{} { return newWalkNode(1) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := eagerDeduper()
			twin := s.dedup(tt.twin())
			in := tt.obj()
			refs := references(in)
			out := s.dedupLike(in, twin)
			if !reflect.DeepEqual(out, tt.obj()) {
				t.Fatal("result differs from the update")
			}
			if !slices.Equal(references(in), refs) || !reflect.DeepEqual(in, tt.obj()) {
				t.Fatal("the update was written")
			}
			if !reflect.DeepEqual(twin, tt.twin()) {
				t.Fatal("the twin changed")
			}
		})
	}
}

// An update of an unstructured object takes, inside its content maps, the
// cached object's maps and strings wherever they are equal, under the
// same keys; what changed stays the update's own.
func TestDeduper_UnstructuredUpdateTakesEqualEntries(t *testing.T) {
	mk := func(rv, phase string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "example.com/v1", "kind": "Thing",
			"metadata": map[string]interface{}{"namespace": "ns", "name": "a", "resourceVersion": rv,
				"labels": map[string]interface{}{"app": "web"}},
			"spec":   map[string]interface{}{"replicas": int64(3), "template": map[string]interface{}{"image": "registry/web:1"}},
			"status": map[string]interface{}{"phase": phase},
		}}
	}
	s := eagerDeduper()
	cached := dedupObj(s, mk("1", "Pending"))
	want := mk("2", "Running")
	in := mk("2", "Running")
	out := s.dedupLike(in, cached).(*unstructured.Unstructured)
	if !reflect.DeepEqual(out, want) || !reflect.DeepEqual(in, want) || !reflect.DeepEqual(cached, mk("1", "Pending")) {
		t.Fatal("content changed, or the update or cached object was written")
	}
	mapOf := func(u *unstructured.Unstructured, keys ...string) map[string]interface{} {
		m := u.Object
		for _, k := range keys {
			m = m[k].(map[string]interface{})
		}
		return m
	}
	checks := []struct {
		name string
		one  bool
		want bool
	}{
		{"spec is the cached map", sameMap(mapOf(out, "spec"), mapOf(cached, "spec")), true},
		{"labels are the cached map", sameMap(mapOf(out, "metadata", "labels"), mapOf(cached, "metadata", "labels")), true},
		{"status is the update's", sameMap(mapOf(out, "status"), mapOf(in, "status")), true},
		{"metadata is a new map", sameMap(mapOf(out, "metadata"), mapOf(cached, "metadata")) || sameMap(mapOf(out, "metadata"), mapOf(in, "metadata")), false},
	}
	for _, c := range checks {
		if c.one != c.want {
			t.Errorf("%s: %v, want %v", c.name, c.one, c.want)
		}
	}
}

// An update whose slice grew takes the cached object's elements at the
// same indexes where they are equal (a managedFields entry added).
func TestDeduper_UpdateOfALongerSliceTakesEqualElements(t *testing.T) {
	s := eagerDeduper()
	cached := dedupObj(s, dedupPod(1, 7))
	in := dedupPod(1, 7)
	in.ResourceVersion = "2"
	in.ManagedFields = append(in.ManagedFields, in.ManagedFields[0])
	in.ManagedFields[1].Manager = "kubelet"
	out := s.dedupLike(in, cached).(*v1.Pod)
	if !reflect.DeepEqual(out, in) {
		t.Fatal("content changed")
	}
	if out.ManagedFields[0].FieldsV1 != cached.ManagedFields[0].FieldsV1 || out.ManagedFields[0].Time != cached.ManagedFields[0].Time {
		t.Error("the first entry's parts are not the cached ones")
	}
	if len(out.ManagedFields) != 2 || out.ManagedFields[1].Manager != "kubelet" {
		t.Errorf("managedFields = %+v", out.ManagedFields)
	}
}
