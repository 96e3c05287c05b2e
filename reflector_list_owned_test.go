package cache

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"weak"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
)

// onePagePods builds a one-response list of n pods, each with its own
// security context, and records a weak pointer to each of those.
func onePagePods(n int, contexts []weak.Pointer[v1.PodSecurityContext]) *v1.PodList {
	page := &v1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "7"}}
	for i := range n {
		page.Items = append(page.Items, v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%02d", i), Namespace: "ns", ResourceVersion: "7"},
			Spec:       v1.PodSpec{SecurityContext: &v1.PodSecurityContext{RunAsUser: new(int64)}},
		})
	}
	for i := range page.Items {
		contexts[i] = weak.Make(page.Items[i].Spec.SecurityContext)
	}
	return page
}

// TestOneResponseList_PreparedItemsLetTheirPartsGo lists pods that arrive
// in one response through a prepare that, as value sharing does, rebuilds
// each pod around a part of its own choosing (here one shared security
// context). Once an item is prepared, the decoded part it no longer uses
// must be free to go while the rest of the list is prepared: neither the
// page nor the reflector's copy of it may keep it.
func TestOneResponseList_PreparedItemsLetTheirPartsGo(t *testing.T) {
	const n = 20
	contexts := make([]weak.Pointer[v1.PodSecurityContext], n)
	shared := &v1.PodSecurityContext{RunAsUser: new(int64)}
	var stillHeld []string
	prepared := 0
	pager := listPager{
		fetch: func(context.Context, metav1.ListOptions) (apiruntime.Object, error) {
			return onePagePods(n, contexts), nil
		},
		prepare: func(obj interface{}) (interface{}, error) {
			pod := *obj.(*v1.Pod)
			pod.Spec.SecurityContext = shared
			prepared++
			if prepared == n {
				runtime.GC()
				for i := range n - 1 {
					if contexts[i].Value() != nil {
						stillHeld = append(stillHeld, fmt.Sprintf("p%02d", i))
					}
				}
			}
			return &pod, nil
		},
		inPage: true,
	}
	listed, err := pager.collect(context.Background(), metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	if len(listed.items) != n || listed.resourceVersion != "7" {
		t.Fatalf("listed %d items at %q, want %d at \"7\"", len(listed.items), listed.resourceVersion, n)
	}
	if len(stillHeld) > 0 {
		t.Errorf("decoded parts of prepared items still held while the list went on: %v", stillHeld)
	}
}

// TestOneResponseList_PageIsNotWritten lists a page that its ListerWatcher
// keeps (as a fake serving a stored list does) and checks that the page
// reads the same afterwards, and that no listed object lies in it, whether
// sharing rebuilt the item or returned it as it was.
func TestOneResponseList_PageIsNotWritten(t *testing.T) {
	page := &v1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "3"}}
	for i := range 6 {
		page.Items = append(page.Items, v1.Pod{ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("p%d", i), Namespace: "ns", Labels: map[string]string{"app": "a"}}})
	}
	before := page.DeepCopy()
	pager := listPager{
		fetch: func(context.Context, metav1.ListOptions) (apiruntime.Object, error) { return page, nil },
		prepare: func(obj interface{}) (interface{}, error) {
			pod := obj.(*v1.Pod)
			if pod.Name[1]%2 == 0 {
				return pod, nil // returned as given: must be copied out
			}
			c := *pod
			c.Labels = map[string]string{"app": "a"}
			return &c, nil
		},
		inPage: true,
	}
	listed, err := pager.collect(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, page); diff != "" {
		t.Errorf("the page changed (-before +after):\n%s", diff)
	}
	for i, obj := range listed.items {
		pod := obj.(*v1.Pod)
		if pod == &page.Items[i] {
			t.Errorf("listed %s is the page's item", pod.Name)
		}
		if diff := cmp.Diff(&before.Items[i], pod); diff != "" {
			t.Errorf("listed %s differs (-page +listed):\n%s", pod.Name, diff)
		}
	}
}
