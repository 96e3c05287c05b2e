package cache

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var podsGVR = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

func TestTypedIndexers_AdaptAndRejectWrongTypes(t *testing.T) {
	typed := TypedIndexers[*v1.Pod]{
		"node": func(p *v1.Pod) ([]string, error) { return []string{p.Spec.NodeName}, nil },
	}
	s := NewIndexer(MetaNamespaceKeyFunc, TypedIndexersToIndexers(typed))
	_ = s.Add(podOnNode("ns", "a", "n1", 1))
	keys, err := s.IndexKeys("node", "n1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"ns/a"}, keys); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	fn := TypedIndexerFuncToIndexerFunc(typed["node"])
	if _, err := fn("a string"); err == nil || !strings.Contains(err.Error(), "string") {
		t.Errorf("wrong type: err = %v, want a clear error", err)
	}
}

func TestMetaNamespaceIndexFunc(t *testing.T) {
	got, err := MetaNamespaceIndexFunc(testPod("ns1", "a", "1"))
	if err != nil || !cmp.Equal(got, []string{"ns1"}) {
		t.Errorf("got %v, %v", got, err)
	}
	if _, err := MetaNamespaceIndexFunc(3); err == nil {
		t.Error("no metadata: want error")
	}
}

func TestIndexer_GetIndexersIsNotAliasedToTheCallersMap(t *testing.T) {
	mine := Indexers{"node": byNodeIndex}
	s := NewIndexer(MetaNamespaceKeyFunc, mine)
	if err := s.AddIndexers(Indexers{NamespaceIndex: MetaNamespaceIndexFunc}); err != nil {
		t.Fatal(err)
	}
	if len(mine) != 1 {
		t.Errorf("caller's map was modified: %d entries", len(mine))
	}
	if len(s.GetIndexers()) != 2 {
		t.Errorf("GetIndexers = %d entries, want 2", len(s.GetIndexers()))
	}
}
