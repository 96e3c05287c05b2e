package framework_test

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	framework "github.com/kcache/cache/testing"
)

// pagingModel is what a paged list must show: the objects, by
// "namespace/name", with their resource version and tier label, at every
// resource version reached.
type pagingModel struct {
	states []map[string]modelObject // states[rv]
}

type modelObject struct {
	rv   int
	tier string
}

func (m *pagingModel) now() map[string]modelObject { return m.states[len(m.states)-1] }

// step makes one random change to f and records it.
func (m *pagingModel) step(r *rand.Rand, f *framework.FakeControllerSource) {
	next := maps.Clone(m.now())
	key := fmt.Sprintf("ns%d/p%02d", r.IntN(3), r.IntN(40))
	ns, name, _ := splitKey(key)
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + key),
		Labels: map[string]string{"tier": []string{"web", "db"}[r.IntN(2)]}}}
	_, exists := next[key]
	switch {
	case exists && r.IntN(3) == 0:
		f.Delete(p)
		delete(next, key)
	case exists:
		f.Modify(p)
		next[key] = modelObject{rv: len(m.states), tier: p.Labels["tier"]}
	default:
		f.Add(p)
		next[key] = modelObject{rv: len(m.states), tier: p.Labels["tier"]}
	}
	m.states = append(m.states, next)
}

func splitKey(key string) (string, string, bool) {
	for i := range key {
		if key[i] == '/' {
			return key[:i], key[i+1:], true
		}
	}
	return "", key, false
}

// want is the paged list of the objects of tier (all when "") at rv: each
// as "namespace/name@rv", in key order.
func (m *pagingModel) want(rv int, tier string) []string {
	state := m.states[rv]
	var out []string
	for _, key := range slices.Sorted(maps.Keys(state)) {
		if o := state[key]; tier == "" || o.tier == tier {
			out = append(out, key+"@"+strconv.Itoa(o.rv))
		}
	}
	return out
}

// A paged list, whatever its page size and selector and whatever changes
// between its pages, shows exactly the selected objects at its first
// page's resource version, in key order, each page telling truly how many
// are left; a full list after it shows the newest state.
func TestFakeControllerSource_PagedListsMatchModel(t *testing.T) {
	for seed := range uint64(12) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 7))
			f := framework.NewFakeControllerSourceWithOptions(framework.FakeControllerSourceOptions{
				Paging: true, Selectors: true, NewList: func() runtime.Object { return &v1.PodList{} },
			})
			defer f.Shutdown()
			m := &pagingModel{states: []map[string]modelObject{{}}}
			for range 30 + r.IntN(60) {
				m.step(r, f)
			}
			for list := range 4 {
				tier := []string{"", "web", "db"}[r.IntN(3)]
				limit := int64(r.IntN(9))
				got, firstRV := pageThrough(t, f, tier, limit, func() {
					for range r.IntN(4) {
						m.step(r, f)
					}
				})
				if diff := cmp.Diff(m.want(firstRV, tier), got); diff != "" {
					t.Errorf("list %d (tier %q, limit %d) at rv %d (-want +got):\n%s", list, tier, limit, firstRV, diff)
				}
			}
		})
	}
}

// pageThrough lists every page of the objects of tier (all when "") with
// the given limit, calling between before each further page, and returns
// the objects as "namespace/name@rv" and the first page's resource
// version. It fails t if a page's remaining count is not what the later
// pages hold.
func pageThrough(t *testing.T, f *framework.FakeControllerSource, tier string, limit int64, between func()) ([]string, int) {
	t.Helper()
	opts := metav1.ListOptions{Limit: limit}
	if tier != "" {
		opts.LabelSelector = "tier=" + tier
	}
	var got []string
	var remaining []int64 // each page's remaining count, -1 when it is the last
	firstRV := -1
	for {
		list, err := f.List(opts)
		if err != nil {
			t.Fatalf("List(%+v): %v", opts, err)
		}
		lm, err := meta.ListAccessor(list)
		if err != nil {
			t.Fatalf("%T is not a list: %v", list, err)
		}
		if firstRV < 0 {
			firstRV, _ = strconv.Atoi(lm.GetResourceVersion())
		}
		for _, p := range list.(*v1.PodList).Items {
			got = append(got, p.Namespace+"/"+p.Name+"@"+p.ResourceVersion)
		}
		if lm.GetContinue() == "" {
			remaining = append(remaining, -1)
			break
		}
		remaining = append(remaining, *lm.GetRemainingItemCount())
		remaining[len(remaining)-1] += int64(len(got)) // objects served up to the end of the list, if true
		opts.Continue = lm.GetContinue()
		between()
	}
	for i, n := range remaining[:len(remaining)-1] {
		if n != int64(len(got)) {
			t.Errorf("page %d: served so far plus remaining = %d, the list holds %d", i, n, len(got))
		}
	}
	return got, firstRV
}
