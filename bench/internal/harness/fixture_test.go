package harness

import "testing"

func TestFixtureReleaseClusterRebuildsOnDemand(t *testing.T) {
	f := NewFixture(Sizes{Pods: 10})
	first := f.Pods()
	f.ReleaseCluster()
	if f.pods != nil || f.keys != nil {
		t.Fatal("ReleaseCluster kept the cluster pods")
	}
	again := f.Pods()
	if len(again) != 10 || again[0] == first[0] || again[3].Name != first[3].Name {
		t.Errorf("rebuilt pods: %d, same first object %v; want 10 fresh copies of the same pods", len(again), again[0] == first[0])
	}
}
