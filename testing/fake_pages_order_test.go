package framework

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A paged list sorts its keys once and keeps them only until its last
// page: a source measured in a benchmark's process must not hold a copy
// of its keys once the informer has listed.
func TestFakeControllerSource_PagedListKeepsItsOrderOnlyWhileListing(t *testing.T) {
	f := NewFakeControllerSourceWithOptions(FakeControllerSourceOptions{Paging: true})
	defer f.Shutdown()
	for i := range 10 {
		f.Add(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("p%d", i)}})
	}
	kept := func() []nnu {
		f.order.mu.Lock()
		defer f.order.mu.Unlock()
		return f.order.sorted
	}
	opts := metav1.ListOptions{Limit: 4}
	var first []nnu
	for page := 0; ; page++ {
		list, err := f.List(opts)
		if err != nil {
			t.Fatalf("page %d: %v", page, err)
		}
		opts.Continue = list.(*v1.List).Continue
		if opts.Continue == "" {
			break
		}
		switch k := kept(); {
		case len(k) != 10:
			t.Fatalf("page %d: %d keys kept mid-list, want 10", page, len(k))
		case first == nil:
			first = k
		case &k[0] != &first[0]:
			t.Errorf("page %d sorted the keys again", page)
		}
	}
	if k := kept(); k != nil {
		t.Errorf("%d keys kept after the last page, want none", len(k))
	}
}

// BenchmarkFakeControllerSource_PagedList pages through every object of
// a large source as a reflector does (500 a page).
func BenchmarkFakeControllerSource_PagedList(b *testing.B) {
	const n = 100_000
	f := NewFakeControllerSourceWithOptions(FakeControllerSourceOptions{Paging: true, ShareObjects: true})
	defer f.Shutdown()
	for i := range n {
		f.Add(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: fmt.Sprintf("ns%d", i%50), Name: fmt.Sprintf("p%d", i)}})
	}
	for b.Loop() {
		opts := metav1.ListOptions{Limit: 500}
		for {
			list, err := f.List(opts)
			if err != nil {
				b.Fatal(err)
			}
			if opts.Continue = list.(*v1.List).Continue; opts.Continue == "" {
				break
			}
		}
	}
}
