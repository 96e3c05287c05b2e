package harness

import (
	"slices"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
)

func TestPodIsDeterministicAndKeyed(t *testing.T) {
	l := ClusterLayout
	for _, i := range []int{0, 1, 999, 54321} {
		t.Run(strconv.Itoa(i), func(t *testing.T) {
			a, b := l.Pod(i, 7, 0), l.Pod(i, 7, 0)
			if diff := cmp.Diff(a, b); diff != "" {
				t.Fatalf("two builds differ (-first +second):\n%s", diff)
			}
			if a == b || &a.Labels == &b.Labels {
				t.Fatal("builds share memory")
			}
			m, err := meta.Accessor(a)
			if err != nil {
				t.Fatal(err)
			}
			if got := m.GetNamespace() + "/" + m.GetName(); got != l.Key(i) {
				t.Errorf("key %q, want %q", got, l.Key(i))
			}
			if a.Spec.NodeName != l.Node(i) || a.Labels["app"] != l.App(i) || a.ResourceVersion != "7" || len(a.Spec.Containers) != 2 {
				t.Errorf("pod %d: node %q app %q rv %q containers %d", i, a.Spec.NodeName, a.Labels["app"], a.ResourceVersion, len(a.Spec.Containers))
			}
			c := l.Pod(i, 8, 1)
			if c.Name != a.Name || c.UID != a.UID || c.Labels["revision"] == a.Labels["revision"] {
				t.Errorf("rev 1 should keep identity and change content")
			}
		})
	}
}

func TestModified(t *testing.T) {
	p := ClusterLayout.Pod(3, 4, 0)
	tests := []struct {
		name, node, wantNode string
	}{
		{name: "same node", node: "", wantNode: p.Spec.NodeName},
		{name: "moved", node: "node-x", wantNode: "node-x"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := Modified(p, 99, tc.node)
			if q.ResourceVersion != "99" || q.Spec.NodeName != tc.wantNode || q.Name != p.Name {
				t.Errorf("got rv %q node %q name %q", q.ResourceVersion, q.Spec.NodeName, q.Name)
			}
			if p.ResourceVersion != "4" || p.Spec.NodeName != ClusterLayout.Node(3) {
				t.Error("Modified changed its argument")
			}
		})
	}
}

func TestKeysAreUnique(t *testing.T) {
	seen := make(map[string]int)
	for i := range 20000 {
		k := ClusterLayout.Key(i)
		if j, dup := seen[k]; dup {
			t.Fatalf("pods %d and %d share key %q", j, i, k)
		}
		seen[k] = i
	}
}

func TestScatterIsAPermutation(t *testing.T) {
	for _, n := range []int{1, 7, 300, 10000, 100000} {
		got := make([]int, n)
		for k := range n {
			got[k] = scatter(k, n)
		}
		slices.Sort(got)
		for i, v := range got {
			if v != i {
				t.Fatalf("n=%d: scatter is not a permutation (sorted[%d] = %d)", n, i, v)
			}
		}
	}
}

func TestFixture(t *testing.T) {
	fx := NewFixture(Sizes{Pods: 300, InformerPods: 50, Events: 200})
	pods, updated := fx.Pods(), fx.Updated()
	for i := range pods {
		moved := updated[i].Spec.NodeName != pods[i].Spec.NodeName
		if moved != (i%10 == 0) || updated[i].Name != pods[i].Name {
			t.Fatalf("updated[%d]: moved=%t name %q, want moved=%t", i, moved, updated[i].Name, i%10 == 0)
		}
	}
	keys := slices.Clone(fx.Keys())
	slices.Sort(keys)
	if len(slices.Compact(keys)) != len(pods) {
		t.Error("Keys is not one key per pod")
	}
	for _, q := range fx.IndexQueries() {
		if q.Value == "" {
			t.Fatalf("empty query %+v", q)
		}
	}
	last := 50
	for k, ev := range fx.InformerEvents() {
		rv, _ := strconv.Atoi(ev.ResourceVersion)
		if rv <= last || ev.Namespace != BigNamespace {
			t.Fatalf("event %d: rv %d after %d, namespace %q", k, rv, last, ev.Namespace)
		}
		last = rv
	}
	if !fx.Selector().Matches(labelsOf(fx.Pods()[0].Labels)) && fx.Pods()[0].Labels["tier"] == SelectedTier {
		t.Error("selector does not match a tier=web pod")
	}
}
