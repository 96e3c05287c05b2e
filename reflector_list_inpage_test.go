package cache

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// pagedPods serves pods in pages of pageSize and remembers every page it
// handed out, so that a test can tell whether an object lies in one.
type pagedPods struct {
	pods     []v1.Pod
	pageSize int

	// mu guards pages: the informer's goroutine appends, the test reads.
	mu    sync.Mutex
	pages []*v1.PodList
}

func (s *pagedPods) list(opts metav1.ListOptions) (runtime.Object, error) {
	from := 0
	if opts.Continue != "" {
		var err error
		if from, err = strconv.Atoi(opts.Continue); err != nil {
			return nil, err
		}
	}
	to := min(from+s.pageSize, len(s.pods))
	page := &v1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "10"}}
	for i := from; i < to; i++ {
		page.Items = append(page.Items, *s.pods[i].DeepCopy())
	}
	if to < len(s.pods) {
		page.Continue = strconv.Itoa(to)
	}
	s.mu.Lock()
	s.pages = append(s.pages, page)
	s.mu.Unlock()
	return page, nil
}

// inPage reports whether obj points into the items of a page served.
func (s *pagedPods) inPage(obj interface{}) bool {
	p, ok := obj.(*v1.Pod)
	if !ok {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, page := range s.pages {
		if len(page.Items) == 0 {
			continue
		}
		first := uintptr(unsafe.Pointer(&page.Items[0]))
		last := uintptr(unsafe.Pointer(&page.Items[len(page.Items)-1]))
		if at := uintptr(unsafe.Pointer(p)); at >= first && at <= last {
			return true
		}
	}
	return false
}

// templatePods are n pods of one template: after the first, value
// sharing rebuilds each listed pod around the parts it shares.
func templatePods(n int) []v1.Pod {
	pods := make([]v1.Pod, n)
	for i := range pods {
		pods[i] = v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%03d", i), Namespace: "ns", UID: types.UID("u" + strconv.Itoa(i)),
				ResourceVersion: "5", Labels: map[string]string{"app": "web", "tier": "front"}},
			Spec: v1.PodSpec{NodeName: "node-a", Containers: []v1.Container{{Name: "web", Image: "nginx:1.27",
				Env: []v1.EnvVar{{Name: "MODE", Value: "serve"}}}}},
		}
	}
	return pods
}

// TestPaginatedList_NoObjectKeepsItsPage lists pods in pages through an
// informer and checks that no cached object, and no object a transform
// is given, lies in a page's item array (which it would keep alive whole),
// whichever way the list is prepared: items prepared where they lie (value
// sharing, no transform), items copied out first (a transform, or no
// sharing).
func TestPaginatedList_NoObjectKeepsItsPage(t *testing.T) {
	for _, tc := range []struct {
		name      string
		sharing   bool
		transform bool
	}{
		{name: "sharing, no transform: prepared in the page", sharing: true},
		{name: "sharing and a transform: copied out first", sharing: true, transform: true},
		{name: "no sharing: copied out first"},
		{name: "no sharing, a transform: copied out first", transform: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := &pagedPods{pods: templatePods(40), pageSize: 7}
			lw := pagedOnly{&ListWatch{ // lists in pages at once
				ListFunc:  src.list,
				WatchFunc: func(metav1.ListOptions) (watch.Interface, error) { return watch.NewFake(), nil },
			}}
			inf := NewSharedIndexInformer(lw, &v1.Pod{}, 0, Indexers{})
			if err := SetValueSharing(inf, tc.sharing); err != nil {
				t.Fatal(err)
			}
			var transformedInPage []string
			if tc.transform {
				if err := inf.SetTransform(func(obj interface{}) (interface{}, error) {
					if src.inPage(obj) {
						transformedInPage = append(transformedInPage, obj.(*v1.Pod).Name)
					}
					return obj, nil
				}); err != nil {
					t.Fatal(err)
				}
			}
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			wg.Go(func() { inf.RunWithContext(ctx) })
			defer wg.Wait()
			defer cancel()
			if !WaitForCacheSync(ctx.Done(), inf.HasSynced) {
				t.Fatal("the informer did not sync")
			}
			src.mu.Lock()
			pages := len(src.pages)
			src.mu.Unlock()
			if pages < 2 {
				t.Fatalf("the list came in %d pages, want several", pages)
			}
			if len(transformedInPage) > 0 {
				t.Errorf("the transform was given objects in their page: %v", transformedInPage)
			}
			cached := inf.GetStore().List()
			if len(cached) != len(src.pods) {
				t.Fatalf("%d objects cached, want %d", len(cached), len(src.pods))
			}
			for _, obj := range cached {
				pod := obj.(*v1.Pod)
				if src.inPage(pod) {
					t.Errorf("cached %s lies in its page's items", pod.Name)
				}
				var want *v1.Pod
				for i := range src.pods {
					if src.pods[i].Name == pod.Name {
						want = &src.pods[i]
					}
				}
				if diff := cmp.Diff(want, pod); diff != "" {
					t.Errorf("cached %s differs from the listed one (-listed +cached):\n%s", pod.Name, diff)
				}
			}
		})
	}
}
