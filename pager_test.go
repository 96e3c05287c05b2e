package cache

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

// rfPages serves scripted pages keyed by continue token ("" for the first).
type rfPages struct {
	pages map[string]rfReply
	// whole answers a request without Limit and Continue, if set.
	whole *rfReply
	calls []metav1.ListOptions
}

func (p *rfPages) fetch(_ context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	p.calls = append(p.calls, opts)
	if opts.Limit == 0 && opts.Continue == "" && p.whole != nil {
		return p.whole.obj, p.whole.err
	}
	r, ok := p.pages[opts.Continue]
	if !ok {
		return nil, fmt.Errorf("no page %q", opts.Continue)
	}
	return r.obj, r.err
}

func rfNames(items []interface{}) []string {
	out := []string{}
	for _, it := range items {
		out = append(out, rfDescribe(it))
	}
	return out
}

func TestListPager_CollectsEveryPage(t *testing.T) {
	expired := apierrors.NewResourceExpired("continue expired")
	withRemaining := rfPodList("7", "c1", rfPod("a", "1"))
	withRemaining.RemainingItemCount = ptr.To[int64](1)
	cases := map[string]struct {
		pageSize  int64
		opts      metav1.ListOptions
		pages     map[string]rfReply
		whole     *rfReply
		want      listedItems
		wantNames []string
		wantCalls []metav1.ListOptions
		wantErr   string
	}{
		"one page": {
			pageSize:  500,
			opts:      metav1.ListOptions{ResourceVersion: "0"},
			pages:     map[string]rfReply{"": {obj: rfPodList("7", "", rfPod("a", "1"), rfPod("b", "2"))}},
			want:      listedItems{resourceVersion: "7"},
			wantNames: []string{"a@1", "b@2"},
			wantCalls: []metav1.ListOptions{{ResourceVersion: "0", Limit: 500}},
		},
		"several pages: continue drops the resource version": {
			pageSize: 1,
			opts:     metav1.ListOptions{ResourceVersion: "5", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan},
			pages: map[string]rfReply{
				"":   {obj: withRemaining},
				"c1": {obj: rfPodList("8", "", rfPod("b", "2"))},
			},
			want:      listedItems{resourceVersion: "7", paginated: true},
			wantNames: []string{"a@1", "b@2"},
			wantCalls: []metav1.ListOptions{
				{ResourceVersion: "5", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, Limit: 1},
				{Continue: "c1", Limit: 1},
			},
		},
		"a caller's limit wins over the page size": {
			pageSize:  500,
			opts:      metav1.ListOptions{Limit: 3},
			pages:     map[string]rfReply{"": {obj: rfPodList("7", "")}},
			want:      listedItems{resourceVersion: "7"},
			wantNames: []string{},
			wantCalls: []metav1.ListOptions{{Limit: 3}},
		},
		"an expired continue token falls back to one whole list at the first version": {
			pageSize: 1,
			opts:     metav1.ListOptions{ResourceVersion: "5", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan},
			pages: map[string]rfReply{
				"":   {obj: rfPodList("7", "c1", rfPod("a", "1"))},
				"c1": {err: expired},
			},
			whole:     &rfReply{obj: rfPodList("9", "", rfPod("a", "1"), rfPod("b", "2"), rfPod("c", "3"))},
			want:      listedItems{resourceVersion: "9", paginated: true},
			wantNames: []string{"a@1", "b@2", "c@3"},
			wantCalls: []metav1.ListOptions{
				{ResourceVersion: "5", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, Limit: 1},
				{Continue: "c1", Limit: 1},
				{ResourceVersion: "5", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan},
			},
		},
		"an expired first page is the caller's problem": {
			pageSize:  1,
			opts:      metav1.ListOptions{ResourceVersion: "5"},
			pages:     map[string]rfReply{"": {err: expired}},
			wantCalls: []metav1.ListOptions{{ResourceVersion: "5", Limit: 1}},
			wantErr:   "continue expired",
		},
		"a gone continue token is not an expired one": {
			pageSize: 1,
			pages: map[string]rfReply{
				"":   {obj: rfPodList("7", "c1", rfPod("a", "1"))},
				"c1": {err: goneError("gone")},
			},
			wantCalls: []metav1.ListOptions{{Limit: 1}, {Continue: "c1", Limit: 1}},
			wantErr:   "gone",
		},
		"a page that is not a list": {
			pageSize:  1,
			pages:     map[string]rfReply{"": {obj: rfPod("a", "1")}},
			wantCalls: []metav1.ListOptions{{Limit: 1}},
			wantErr:   "returned object must be a list: object does not implement the List interfaces",
		},
		"a nil page": {
			pageSize:  1,
			pages:     map[string]rfReply{"": {}},
			wantCalls: []metav1.ListOptions{{Limit: 1}},
			wantErr:   "returned object must be a list: object does not implement the List interfaces",
		},
		"a table": {
			pageSize:  1,
			pages:     map[string]rfReply{"": {obj: rfTableList()}},
			wantCalls: []metav1.ListOptions{{Limit: 1}},
			wantErr:   "unsupported list gvk",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			src := &rfPages{pages: tc.pages, whole: tc.whole}
			p := listPager{pageSize: tc.pageSize, fetch: src.fetch}
			got, err := p.collect(context.Background(), tc.opts)
			if diff := cmp.Diff(tc.wantCalls, src.calls); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("collect error = %v, want one mentioning %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("collect: %v", err)
			}
			if diff := cmp.Diff(tc.wantNames, rfNames(got.items)); diff != "" {
				t.Errorf("items (-want +got):\n%s", diff)
			}
			if got.resourceVersion != tc.want.resourceVersion || got.paginated != tc.want.paginated {
				t.Errorf("(rv, paginated) = (%q, %v), want (%q, %v)", got.resourceVersion, got.paginated, tc.want.resourceVersion, tc.want.paginated)
			}
		})
	}
}

func TestListPager_CopiesItemsOutOfEachPage(t *testing.T) {
	page := rfPodList("7", "", rfPod("a", "1"), rfPod("b", "2"))
	p := listPager{pageSize: 10, fetch: func(context.Context, metav1.ListOptions) (runtime.Object, error) { return page, nil }}
	got, err := p.collect(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i, it := range got.items {
		if it.(*v1.Pod) == &page.Items[i] {
			t.Errorf("item %d points into the page", i)
		}
	}
	if cap(got.items) != 2 {
		t.Errorf("items slice has capacity %d, want exactly the page's 2", cap(got.items))
	}
}

func TestListPager_ReadsUnstructuredLists(t *testing.T) {
	list := &unstructured.UnstructuredList{Object: map[string]interface{}{"apiVersion": "v1", "kind": "PodList"}}
	list.SetResourceVersion("4")
	for _, name := range []string{"a", "b"} {
		u := unstructured.Unstructured{}
		u.SetNamespace("ns")
		u.SetName(name)
		u.SetResourceVersion("3")
		list.Items = append(list.Items, u)
	}
	p := listPager{fetch: func(context.Context, metav1.ListOptions) (runtime.Object, error) { return list, nil }}
	got, err := p.collect(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a@3", "b@3"}, rfNames(got.items)); diff != "" {
		t.Errorf("items (-want +got):\n%s", diff)
	}
}

func TestListPager_StopsBetweenPagesWhenCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	p := listPager{pageSize: 1, fetch: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
		calls++
		cancel()
		return rfPodList("7", "more", rfPod("a", "1")), nil
	}}
	_, err := p.collect(ctx, metav1.ListOptions{})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("collect error = %v, want context.Canceled", err)
	}
	if calls != 1 {
		t.Errorf("%d pages requested after cancel, want 1", calls)
	}
}
