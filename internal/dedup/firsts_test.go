package dedup

import (
	"fmt"
	"reflect"
	goruntime "runtime"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// tokenPod is a pod of ReplicaSet rs whose containers each mount the
// pod's own token volume, named at random as the ServiceAccount admission
// names it: here after the pod's number, built afresh for every mount as a
// decoder would.
func tokenPod(rs, i, containers int) *v1.Pod {
	p := dedupPod(rs, i)
	token := func() string { return strings.Clone(fmt.Sprintf("kube-api-access-%05d", i)) }
	p.Spec.Volumes = []v1.Volume{{Name: token()}}
	p.Spec.Containers = nil
	for c := range containers {
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{
			Name:         fmt.Sprintf("c%d", c),
			Image:        "registry.example/app:v1",
			VolumeMounts: []v1.VolumeMount{{Name: token(), MountPath: "/var/run/secrets"}},
		})
	}
	return p
}

// A string repeated within one object only (each pod's token volume name,
// named by each of its containers) takes no table entry, and the object's
// copies of it become one; the object given stays as it was.
func TestDeduper_RepeatsWithinOneObjectTakeNoEntries(t *testing.T) {
	tests := []struct {
		name       string
		containers int
	}{
		{"two containers", 2},
		{"three containers", 3},
		{"more mounts than the walk searches one by one", firstsIndexed + 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(Options{})
			var kept []*v1.Pod
			const pods = 200
			for i := range pods {
				in := tokenPod(1, i, tt.containers)
				before := references(in)
				out := dedupObj(s, in)
				if !slices.Equal(before, references(in)) {
					t.Fatalf("pod %d: the walk wrote the object it was given", i)
				}
				if !reflect.DeepEqual(in, out) {
					t.Fatalf("pod %d: shared object differs from the one given", i)
				}
				first := stringData(out.Spec.Containers[0].VolumeMounts[0].Name)
				for c := range out.Spec.Containers {
					if got := stringData(out.Spec.Containers[c].VolumeMounts[0].Name); got != first {
						t.Fatalf("pod %d: container %d's mount names its own copy of the token volume, want the first container's", i, c)
					}
				}
				kept = append(kept, out)
			}
			tokens := 0
			for i := range s.stripes {
				for _, e := range s.stripes[i].table {
					if v := e.p.Value(); e.key.plan == 0 && v != nil && strings.HasPrefix(stringAt(addr(v), e.key.n), "kube-api-access-") {
						tokens++
					}
				}
			}
			goruntime.KeepAlive(kept)
			// Only the filter's false positives (a first sighting it wrongly
			// says it saw) may let a name in. How many depends on the
			// table's random hash seed: a few percent of the pods on
			// average, now and then above a tenth. A walk that lets
			// repeats in puts in one name per pod, so a quarter is far from
			// both.
			if tokens*4 > pods {
				t.Errorf("table holds %d token volume names of %d pods, each of one pod only: want a quarter at most", tokens, pods)
			}
		})
	}
}

// A string two objects have in common is still shared from its second
// object on, also when the first object repeats it.
func TestDeduper_RepeatsWithinAndAcrossObjectsShared(t *testing.T) {
	s := New(Options{})
	a := dedupObj(s, tokenPod(1, 7, 2))
	b := dedupObj(s, tokenPod(1, 7, 2))
	c := dedupObj(s, tokenPod(1, 7, 2))
	if stringData(b.Spec.Containers[0].VolumeMounts[0].Name) != stringData(c.Spec.Containers[1].VolumeMounts[0].Name) {
		t.Error("the second and third pods keep their own copies of a mount name they have in common")
	}
	if stringData(a.Spec.Containers[0].VolumeMounts[0].Name) != stringData(a.Spec.Containers[1].VolumeMounts[0].Name) {
		t.Error("the first pod keeps two copies of a mount name repeated in it")
	}
}

// A walk finds each string it met first, whether it holds few of them
// (searched one by one) or many (through the index), and a pooled walker
// keeps none of them.
func TestWalker_FirstSightings(t *testing.T) {
	for _, n := range []int{1, firstsIndexed, firstsIndexed + 1, 3 * firstsIndexed, firstsKept + 1} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			w := &walker{}
			for i := range n {
				w.sawFirst(uint64(i)*7+1, fmt.Sprint("value-", i))
			}
			// A second sighting of a key (a collision) keeps the first.
			w.sawFirst(1, "other")
			for i := range n {
				want := fmt.Sprint("value-", i)
				if got, ok := w.firstString(uint64(i)*7+1, want); !ok || got != want {
					t.Fatalf("key %d: got %q, %v; want %q", i, got, ok, want)
				}
			}
			if _, ok := w.firstString(2, "value-0"); ok {
				t.Error("found a key never met")
			}
			if _, ok := w.firstString(1, "other"); ok {
				t.Error("a colliding sighting replaced the first one")
			}
			w.forgetFirsts()
			if len(w.firsts) != 0 || len(w.firstsByKey) != 0 {
				t.Errorf("after forgetting: %d sightings, %d indexed", len(w.firsts), len(w.firstsByKey))
			}
			if _, ok := w.firstString(1, "value-0"); ok {
				t.Error("a forgotten sighting is still found")
			}
		})
	}
}
