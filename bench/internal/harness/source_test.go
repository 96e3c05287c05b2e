package harness

import (
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
)

// summary summarises a pod as "name@rv/revision".
func summary(p *v1.Pod) string {
	return p.Name + "@" + p.ResourceVersion + "/" + p.Labels["revision"]
}

func TestNewPodSource_NumbersAsTheFixtureAndShares(t *testing.T) {
	defer goleak.VerifyNone(t)
	fx := NewFixture(Sizes{InformerPods: 3, Events: 2})
	src := NewPodSource(fx.InformerPods(), false)
	defer src.Shutdown()
	if !src.IsWatchListSemanticsUnSupported() {
		t.Error("a source without watch list says it can stream lists")
	}
	list, err := src.List(metav1.ListOptions{})
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	pods := list.(*v1.PodList)
	if pods.ResourceVersion != fx.InformerListRV() {
		t.Errorf("list resource version %s, want the fixture's %s", pods.ResourceVersion, fx.InformerListRV())
	}
	wantRV := map[string]string{}
	for i, p := range fx.InformerPods() {
		wantRV[p.Name] = strconv.Itoa(i + 1)
	}
	for _, p := range pods.Items {
		if p.ResourceVersion != wantRV[p.Name] {
			t.Errorf("pod %s at resource version %s, want %s", p.Name, p.ResourceVersion, wantRV[p.Name])
		}
	}
	w, err := src.Watch(metav1.ListOptions{ResourceVersion: fx.InformerListRV()})
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	defer w.Stop()
	for _, p := range fx.InformerEvents() {
		want := p.ResourceVersion
		src.Modify(p)
		e := <-w.ResultChan()
		if e.Object != p || p.ResourceVersion != want {
			t.Errorf("event %v: got the fixture's pod itself = %v at %s, want it at %s", e.Type, e.Object == p, p.ResourceVersion, want)
		}
	}
}

func TestNewFreshPodSource_BuildsPodsAfreshAndExpireChangesThem(t *testing.T) {
	defer goleak.VerifyNone(t)
	l := ClusterLayout
	src := NewFreshPodSource(4, l, true)
	defer src.Shutdown()
	want := func(i int, rv uint64, rev int) string { return summary(l.Pod(i, rv, rev)) }

	stream := func() []string {
		t.Helper()
		w, err := src.Watch(metav1.ListOptions{SendInitialEvents: ptr.To(true), AllowWatchBookmarks: true})
		if err != nil {
			t.Fatalf("streaming list: %v", err)
		}
		defer w.Stop()
		var got []string
		for e := range w.ResultChan() {
			p := e.Object.(*v1.Pod)
			if e.Type == watch.Bookmark {
				got = append(got, "end@"+p.ResourceVersion+"="+p.Annotations[metav1.InitialEventsAnnotationKey])
				return got
			}
			got = append(got, summary(p))
		}
		return got
	}
	first := stream()
	if diff := cmp.Diff([]string{want(0, 1, 0), want(1, 2, 0), want(2, 3, 0), want(3, 4, 0), "end@4=true"}, first); diff != "" {
		t.Errorf("streaming list (-want +got):\n%s", diff)
	}
	a, _ := src.List(metav1.ListOptions{})
	b, _ := src.List(metav1.ListOptions{})
	if &a.(*v1.PodList).Items[0].Labels == &b.(*v1.PodList).Items[0].Labels || a.(*v1.PodList).Items[0].Name != b.(*v1.PodList).Items[0].Name {
		t.Error("two lists share their pods")
	}

	if err := ExpireChanging(src, 4, 2); err != nil {
		t.Fatalf("ExpireChanging: %v", err)
	}
	// Pods 0 and 2 changed at 5 and 6; the compaction took 7.
	if diff := cmp.Diff([]string{want(0, 5, 1), want(1, 2, 0), want(2, 6, 1), want(3, 4, 0), "end@7=true"}, stream()); diff != "" {
		t.Errorf("streaming list after ExpireChanging (-want +got):\n%s", diff)
	}
}
