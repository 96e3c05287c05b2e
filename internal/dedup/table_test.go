package dedup

import (
	"fmt"
	"math"
	"reflect"
	goruntime "runtime"
	"sync"
	"testing"
	"time"
	"unsafe"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// dedupPod builds a pod of ReplicaSet rs; i makes its name, IP and
// container ID its own. Every call allocates everything afresh, as a
// decoder does.
func dedupPod(rs, i int) *v1.Pod {
	ts := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      fmt.Sprintf("app-%d-%05d", rs, i),
			Namespace: fmt.Sprintf("ns-%d", rs%3),
			Labels:    map[string]string{"app": fmt.Sprintf("app-%d", rs), "tier": "web"},
			ManagedFields: []metav1.ManagedFieldsEntry{{
				Manager: "controller", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "v1",
				Time: &ts, FieldsType: "FieldsV1", FieldsV1: fieldsV1(`{"f:metadata":{}}`),
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

// dedupObj shares obj's parts through s and returns the object to keep.
// fieldsV1 returns a FieldsV1 holding raw, built through its JSON
// decoding: apimachinery v0.38 keeps the bytes behind an unexported
// handle, where older releases have a Raw field.
func fieldsV1(raw string) *metav1.FieldsV1 {
	f := &metav1.FieldsV1{}
	if err := f.UnmarshalJSON([]byte(raw)); err != nil {
		panic(err)
	}
	return f
}

func dedupObj[T any](s *Table, obj T) T { return s.dedup(obj).(T) }

// dedupPair runs inA and inB through s, in that order, and fails the test
// unless both results equal their inputs and neither input was written.
func dedupPair[T interface{ DeepCopyObject() runtime.Object }](t *testing.T, s *Table, inA, inB T) (a, b T) {
	t.Helper()
	wantA, wantB := inA.DeepCopyObject(), inB.DeepCopyObject()
	a, b = dedupObj(s, inA), dedupObj(s, inB)
	if !reflect.DeepEqual(a, wantA) || !reflect.DeepEqual(b, wantB) {
		t.Fatal("sharing changed an object's content")
	}
	if !reflect.DeepEqual(inA, wantA) || !reflect.DeepEqual(inB, wantB) {
		t.Fatal("sharing wrote into its input")
	}
	return a, b
}

func sameSlice[T any](a, b []T) bool {
	return len(a) > 0 && len(b) > 0 && unsafe.SliceData(a) == unsafe.SliceData(b)
}

func sameMap[K comparable, V any](a, b map[K]V) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

func TestDeduper_SharesEqualPartsOnly(t *testing.T) {
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
	s := eagerDeduper()
	a, b := dedupPair(t, s, dedupPod(1, 1), dedupPod(1, 2))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.shared(a, b); got != tt.want {
				t.Errorf("shared = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestDeduper_OtherReplicaSetsKeepTheirOwn(t *testing.T) {
	s := eagerDeduper()
	a, b := dedupObj(s, dedupPod(1, 1)), dedupPod(2, 1)
	wantB := b.DeepCopy()
	b = dedupObj(s, b)
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

func TestDeduper_SharedSlicesCannotBeAppendedInto(t *testing.T) {
	s := eagerDeduper()
	a, b := dedupPod(1, 1), dedupPod(1, 2)
	a.Spec.Containers[0].Env = append(make([]v1.EnvVar, 0, 8), a.Spec.Containers[0].Env...)
	a, b = dedupObj(s, a), dedupObj(s, b)
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

func TestDeduper_DeepCopyIsIndependent(t *testing.T) {
	s := eagerDeduper()
	a, b := dedupObj(s, dedupPod(1, 1)), dedupObj(s, dedupPod(1, 2))
	c := b.DeepCopy()
	c.Labels["tier"] = "db"
	c.Spec.Containers[0].Env[0].Value = "changed"
	c.Spec.Containers[0].ReadinessProbe.Exec.Command[0] = "false"
	if a.Labels["tier"] != "web" || a.Spec.Containers[0].Env[0].Value != "1" ||
		a.Spec.Containers[0].ReadinessProbe.Exec.Command[0] != "true" {
		t.Error("modifying a deep copy changed a pod sharing its parts")
	}
}

func TestDeduper_Unstructured(t *testing.T) {
	obj := func(name string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]interface{}{"name": name, "labels": map[string]interface{}{"app": "x"}},
			"data":     map[string]interface{}{"k": "v", "n": int64(3), "list": []interface{}{"a", map[string]interface{}{"b": true}}},
		}}
	}
	s := eagerDeduper()
	a, b := dedupPair(t, s, obj("a"), obj("b"))
	if !sameMap(a.Object["data"].(map[string]interface{}), b.Object["data"].(map[string]interface{})) {
		t.Error("equal data maps are not shared")
	}
}

func TestDeduper_UniquePositionsStopBeingLookedUp(t *testing.T) {
	s := eagerDeduper()
	for i := range tuning.siteTrial + 10 {
		s.dedup(dedupPod(1, i))
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

func TestDeduper_Concurrent(t *testing.T) {
	s := eagerDeduper()
	var wg sync.WaitGroup
	pods := make([][]*v1.Pod, 4)
	for g := range pods {
		wg.Go(func() {
			for i := range 200 {
				pods[g] = append(pods[g], dedupObj(s, dedupPod(i%5, g*1000+i)))
			}
		})
	}
	wg.Wait()
	for g := range pods {
		for i, p := range pods[g] {
			if want := dedupPod(i%5, g*1000+i); !reflect.DeepEqual(p, want) {
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
		for i := range tuning.siteTrial {
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
			if n > tuning.siteTrial<<(tuning.siteMaxBackoff+1) {
				t.Fatal("never tried again")
			}
		}
		return n
	}
	trial(false)
	if got, want := offFor(), tuning.siteTrial<<1-1; got != want {
		t.Errorf("after one failed trial: off for %d values, want %d", got, want)
	}
	trial(false)
	if got, want := offFor(), tuning.siteTrial<<2-1; got != want {
		t.Errorf("after two failed trials: off for %d values, want %d", got, want)
	}
	trial(true)
	for range 4 * tuning.siteTrial {
		if !s.enabled() {
			t.Fatal("a site that passed its trial went off")
		}
		s.record(false)
	}
}

// Values that start to repeat only after their position's first trial are
// shared once a later trial sees them repeat.
func TestDeduper_LateRepeatsShared(t *testing.T) {
	type obj struct{ Tags []string }
	s := eagerDeduper()
	for i := range tuning.siteTrial {
		dedupObj(s, &obj{Tags: []string{fmt.Sprint("unique-", i)}})
	}
	var last []*obj
	for range 8 * tuning.siteTrial {
		last = append(last, dedupObj(s, &obj{Tags: []string{string([]byte("again"))}}))
	}
	n := len(last)
	if !sameSlice(last[n-1].Tags, last[n-2].Tags) {
		t.Error("repeating values are still not shared")
	}
}

// Two goroutines (an informer's transforms) share the same object pointers
// at once through one table, while others read those objects: the inputs are never written (the race
// detector would see it), each cached object is deep-equal to its input,
// and equal parts of the two informers' objects are one.
func TestDedupCopy_SameInputsConcurrently(t *testing.T) {
	const n = 50
	inputs := make([]*v1.Pod, n)
	wants := make([]*v1.Pod, n)
	for i := range inputs {
		inputs[i] = dedupPod(i%5, i)
		wants[i] = inputs[i].DeepCopy()
	}
	dd := eagerDeduper()
	outs := [2][]*v1.Pod{make([]*v1.Pod, n), make([]*v1.Pod, n)}
	var wg sync.WaitGroup
	for inf := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i, in := range inputs {
				outs[inf][i] = dd.Share(in).(*v1.Pod)
			}
		}()
	}
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i, in := range inputs {
				if !reflect.DeepEqual(in, wants[i]) {
					t.Errorf("input %d changed while read", i)
				}
			}
		}()
	}
	wg.Wait()
	for i := range inputs {
		for inf := range outs {
			if !reflect.DeepEqual(outs[inf][i], wants[i]) {
				t.Errorf("informer %d's object %d differs from its input", inf, i)
			}
		}
		if !reflect.DeepEqual(inputs[i], wants[i]) {
			t.Errorf("input %d was modified", i)
		}
	}
	// The first objects of a group may each keep their own copy (both
	// informers missed and inserted at once, and the second insert lost);
	// from the group's second object on, both find the one in the table.
	for i := 5; i < n; i++ {
		if !sameMap(outs[0][i].Labels, outs[1][i].Labels) {
			t.Errorf("equal labels of the two informers' objects %d are not one", i)
		}
	}
}

// A DeepCopy of a cached, shared object is its own: modifying it changes
// no cached object.
func TestDedupCopy_DeepCopyIndependent(t *testing.T) {
	dd := eagerDeduper()
	a := dd.Share(dedupPod(1, 1)).(*v1.Pod)
	b := dd.Share(dedupPod(1, 2)).(*v1.Pod)
	if !sameMap(a.Labels, b.Labels) {
		t.Fatal("labels not shared; the test proves nothing")
	}
	wantA, wantB := a.DeepCopy(), b.DeepCopy()
	c := a.DeepCopy()
	c.Labels["tier"] = "db"
	c.Spec.Containers[0].Env[0].Value = "changed"
	c.Spec.Containers[0].ReadinessProbe.Exec.Command[0] = "false"
	c.ManagedFields[0].Manager = "other"
	c.Spec.Containers = append(c.Spec.Containers, v1.Container{Name: "extra"})
	if !reflect.DeepEqual(a, wantA) || !reflect.DeepEqual(b, wantB) {
		t.Error("modifying a deep copy changed a cached object")
	}
}

// Values that are not runtime.Objects are kept as given, unshared, and a
// nil object stays nil.
func TestDedupCopy_NotAnObject(t *testing.T) {
	dd := eagerDeduper()
	m := map[string]string{"a": "b"}
	if got := dd.Share(m).(map[string]string); !sameMap(got, m) {
		t.Error("a plain map was replaced")
	}
	var nilPod *v1.Pod
	if got := dd.Share(nilPod); got != interface{}(nilPod) {
		t.Errorf("nil pod became %v", got)
	}
}

// eagerDeduper is a table that shares a value from its first
// sighting, without the filter of values seen once: for tests of how
// values are shared, which compare the first objects they cache.
func eagerDeduper() *Table {
	s := New(Options{})
	s.seen.Store(&seenFilter{})
	return s
}

// tableSize counts the sharer's table entries.
func tableSize(s *Table) int {
	n := 0
	for i := range s.stripes {
		st := &s.stripes[i]
		st.mu.Lock()
		n += len(st.table)
		st.mu.Unlock()
	}
	return n
}

// A value seen once stays its object's own and takes no table entry; from
// the second object on, equal values are one, the second object's copy.
func TestDeduper_SharesFromTheSecondSighting(t *testing.T) {
	s := New(Options{})
	first := dedupPod(1, 1)
	labels := first.Labels
	a := dedupObj(s, first)
	if !sameMap(a.Labels, labels) {
		t.Error("the first pod's labels were replaced: a value seen once must stay its own")
	}
	unique := tableSize(s)
	b, c := dedupObj(s, dedupPod(1, 2)), dedupObj(s, dedupPod(1, 3))
	tests := []struct {
		name string
		one  bool
		want bool
	}{
		{"labels of the first and second pods", sameMap(a.Labels, b.Labels), false},
		{"labels of the second and third pods", sameMap(b.Labels, c.Labels), true},
		{"env of the second and third pods", sameSlice(b.Spec.Containers[0].Env, c.Spec.Containers[0].Env), true},
		{"probe of the second and third pods", b.Spec.Containers[0].ReadinessProbe == c.Spec.Containers[0].ReadinessProbe, true},
		{"pod IPs (their own)", stringData(b.Status.PodIP) == stringData(c.Status.PodIP), false},
	}
	for _, tt := range tests {
		if tt.one != tt.want {
			t.Errorf("%s: one value = %v, want %v", tt.name, tt.one, tt.want)
		}
	}
	if unique != 0 {
		t.Errorf("the first pod put %d values in the table, want none", unique)
	}
	if tableSize(s) == 0 {
		t.Error("no value in the table after three equal pods")
	}
}

// Values that occur once each (pods whose labels are their own) leave the
// table as empty as it started, however many there are.
func TestDeduper_UniqueValuesTakeNoEntries(t *testing.T) {
	// The objects stay reachable until the counts are taken, so that no
	// entry leaves the tables with its last holder (a collection would
	// make the counts depend on when it ran).
	pods := func() []*v1.Pod {
		out := make([]*v1.Pod, 2000)
		for i := range out {
			out[i] = dedupPod(i, i)
			out[i].Labels = map[string]string{"app": out[i].Name}
		}
		return out
	}
	eager, filtered := eagerDeduper(), New(Options{})
	var kept []*v1.Pod
	for _, p := range pods() {
		kept = append(kept, dedupObj(eager, p))
	}
	for _, p := range pods() {
		kept = append(kept, dedupObj(filtered, p))
	}
	all, n := tableSize(eager), tableSize(filtered)
	goruntime.KeepAlive(kept)
	t.Logf("entries: %d without the filter, %d with it", all, n)
	// Without the filter every value has an entry: the labels, names, IPs
	// and images of each pod of its own, and the parts the pods share
	// (probe, resources). With it, only the shared parts and the few
	// unique values the filter wrongly says it saw (false positives: up
	// to a few percent of the keys while it fills).
	if n > all/10 {
		t.Errorf("table holds %d entries after 2000 pods of their own, %d without the filter: want a tenth at most", n, all)
	}
}

// The filter says "seen" for a key added before and grows when a quarter
// of its bits are set; at its bound it starts again empty.
func TestSeenFilter(t *testing.T) {
	f := newSeenFilter(tuning.seenMinBits)
	if f.sawBefore(42) {
		t.Error("a new filter saw key 42")
	}
	if !f.sawBefore(42) {
		t.Error("the filter forgot key 42")
	}
	s := New(Options{})
	start := len(s.seen.Load().words)
	for k := range uint64(tuning.seenMinBits) {
		s.admit(k * 0x9e3779b97f4a7c15)
	}
	if got := len(s.seen.Load().words); got <= start {
		t.Errorf("filter of %d words did not grow after %d keys (now %d)", start, tuning.seenMinBits, got)
	}
	big := newSeenFilter(tuning.seenMaxBits)
	s.seen.Store(big)
	big.set.Store(int64(tuning.seenMaxBits / 4))
	s.admit(1)
	if got := s.seen.Load(); got == big || len(got.words)*64 != tuning.seenMaxBits {
		t.Errorf("a full filter at the bound was not replaced by an empty one of the same size")
	}
}

// Two sign flips, or -0 against +0, give different hashes: the mixing
// cannot cancel them.
func TestDeduper_HashSeesEverySignFlip(t *testing.T) {
	type pair struct{ A, B float64 }
	s := eagerDeduper()
	plan := s.planOf(reflect.TypeFor[pair]())
	negZero := math.Copysign(0, -1)
	values := []pair{{0, 0}, {negZero, negZero}, {negZero, 0}, {0, negZero}, {1, -1}, {-1, 1}, {-1, -1}, {1, 1}}
	seen := map[uint64]pair{}
	for _, v := range values {
		h := s.hashValue(plan, addr(&v), 0, true)
		if prev, ok := seen[h]; ok {
			t.Errorf("%v and %v hash alike", prev, v)
		}
		seen[h] = v
	}
}
