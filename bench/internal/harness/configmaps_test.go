package harness

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestConfigMapLayout_KeysAndUIDsAreUnique(t *testing.T) {
	const n = 20_000
	keys, uids := map[string]int{}, map[string]int{}
	for i := range n {
		cm := SimLayout.ConfigMap(i, 1)
		key := cm.Namespace + "/" + cm.Name
		if j, dup := keys[key]; dup {
			t.Fatalf("ConfigMaps %d and %d are both %s", j, i, key)
		}
		if j, dup := uids[string(cm.UID)]; dup {
			t.Fatalf("ConfigMaps %d and %d share the UID %s", j, i, cm.UID)
		}
		keys[key], uids[string(cm.UID)] = i, i
	}
}

// Members of a group share what a release shares and differ in the
// rest; other groups differ.
func TestConfigMapLayout_GroupsShare(t *testing.T) {
	l := SimLayout
	a, b, other := l.ConfigMap(0, 1), l.ConfigMap(1, 2), l.ConfigMap(l.GroupSize, 3)
	shared := func(cm *v1.ConfigMap) []any {
		return []any{cm.Namespace, cm.Labels, cm.Annotations, cm.ManagedFields, cm.Data["config.yaml"], cm.Data["log-level"]}
	}
	if diff := cmp.Diff(shared(a), shared(b)); diff != "" {
		t.Errorf("two members of a group differ in what they share (-first +second):\n%s", diff)
	}
	if a.Data["instance.json"] == b.Data["instance.json"] {
		t.Errorf("two members of a group have the same instance data %q", a.Data["instance.json"])
	}
	if cmp.Equal(a.Labels, other.Labels) || a.Data["config.yaml"] == other.Data["config.yaml"] {
		t.Errorf("two groups share labels or configuration")
	}
}

// The source lists, in pages, every ConfigMap as the layout builds it.
func TestNewConfigMapSource_ListsTheLayout(t *testing.T) {
	const n = 300
	src := NewConfigMapSource(n, SimLayout, false, false)
	defer src.Shutdown()
	got := map[string]*v1.ConfigMap{}
	opts := metav1.ListOptions{Limit: 70}
	for {
		obj, err := src.List(opts)
		if err != nil {
			t.Fatal(err)
		}
		list := obj.(*v1.ConfigMapList)
		for k := range list.Items {
			cm := &list.Items[k]
			got[cm.Namespace+"/"+cm.Name] = cm
		}
		if opts.Continue = list.Continue; opts.Continue == "" {
			break
		}
	}
	if len(got) != n {
		t.Fatalf("listed %d ConfigMaps, want %d", len(got), n)
	}
	for i := range n {
		want := SimLayout.ConfigMap(i, uint64(i+1))
		if diff := cmp.Diff(want, got[want.Namespace+"/"+want.Name]); diff != "" {
			t.Fatalf("ConfigMap %d (-layout +listed):\n%s", i, diff)
		}
	}
}

// With onePage, a list with a limit still comes back whole, in one
// response without a continue token, as kube-apiserver answers one at
// resourceVersion "0".
func TestNewConfigMapSource_OnePageIgnoresTheLimit(t *testing.T) {
	const n = 300
	for _, tc := range []struct {
		onePage   bool
		wantItems int
	}{{onePage: false, wantItems: 70}, {onePage: true, wantItems: n}} {
		src := NewConfigMapSource(n, SimLayout, false, tc.onePage)
		obj, err := src.List(metav1.ListOptions{Limit: 70, ResourceVersion: "0"})
		src.Shutdown()
		if err != nil {
			t.Fatal(err)
		}
		list := obj.(*v1.ConfigMapList)
		if len(list.Items) != tc.wantItems || (tc.onePage && list.Continue != "") {
			t.Errorf("onePage=%t: %d items, continue %q; want %d items", tc.onePage, len(list.Items), list.Continue, tc.wantItems)
		}
	}
}
