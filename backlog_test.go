package cache

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
)

// event is a readable form of a delivered notification for comparisons.
func describe(n notification) string {
	name := func(obj interface{}) string {
		switch o := obj.(type) {
		case *v1.Pod:
			return o.Name + "@" + o.ResourceVersion
		case DeletedFinalStateUnknown:
			return "tombstone:" + o.Key
		}
		return fmt.Sprint(obj)
	}
	switch n.kind {
	case notifyAdd:
		if n.initialList {
			return "add " + name(n.newObj) + " initial"
		}
		return "add " + name(n.newObj)
	case notifyUpdate:
		return "update " + name(n.oldObj) + "->" + name(n.newObj)
	default:
		return "delete " + name(n.oldObj)
	}
}

func drainBacklog(b *backlog) []string {
	out := []string{}
	for {
		first, second, ok := b.pop()
		if !ok {
			return out
		}
		out = append(out, describe(first))
		if second != nil {
			out = append(out, describe(*second))
		}
	}
}

func bpod(name, rv string) *v1.Pod { return testPod("ns", name, rv) }

func TestBacklog_MergesPastTheLimit(t *testing.T) {
	tests := map[string]struct {
		limit int
		in    []notification
		want  []string
		// wantCancelledInitial counts initial adds that vanished.
		wantCancelledInitial uint64
	}{
		"below the limit nothing merges": {
			limit: 10,
			in:    []notification{addNotification(bpod("a", "1"), false), updateNotification(bpod("a", "1"), bpod("a", "2"))},
			want:  []string{"add a@1", "update a@1->a@2"},
		},
		"no limit never merges": {
			limit: 0,
			in:    []notification{updateNotification(bpod("a", "1"), bpod("a", "2")), updateNotification(bpod("a", "2"), bpod("a", "3"))},
			want:  []string{"update a@1->a@2", "update a@2->a@3"},
		},
		"update+update keeps the oldest old and the newest new": {
			limit: 1,
			in: []notification{
				updateNotification(bpod("a", "1"), bpod("a", "2")),
				updateNotification(bpod("a", "2"), bpod("a", "3")),
				updateNotification(bpod("a", "3"), bpod("a", "4")),
			},
			want: []string{"update a@1->a@4"},
		},
		"add+update is an add of the newest": {
			limit: 1,
			in:    []notification{addNotification(bpod("a", "1"), true), updateNotification(bpod("a", "1"), bpod("a", "2"))},
			want:  []string{"add a@2 initial"},
		},
		"add+delete vanishes": {
			limit:                1,
			in:                   []notification{addNotification(bpod("a", "1"), true), deleteNotification(bpod("a", "1")), addNotification(bpod("b", "1"), false)},
			want:                 []string{"add b@1"},
			wantCancelledInitial: 1,
		},
		"update+delete is a delete of the newest": {
			limit: 1,
			in:    []notification{updateNotification(bpod("a", "1"), bpod("a", "2")), deleteNotification(bpod("a", "2"))},
			want:  []string{"delete a@2"},
		},
		"delete survives a re-create": {
			limit: 1,
			in: []notification{
				deleteNotification(bpod("a", "1")),
				addNotification(bpod("a", "5"), false),
				updateNotification(bpod("a", "5"), bpod("a", "6")),
			},
			want: []string{"delete a@1", "add a@6"},
		},
		"delete, re-create, delete leaves the first delete": {
			limit: 1,
			in: []notification{
				deleteNotification(bpod("a", "1")),
				addNotification(bpod("a", "5"), false),
				deleteNotification(bpod("a", "5")),
			},
			want: []string{"delete a@1"},
		},
		"a real final state beats a tombstone": {
			limit: 1,
			in: []notification{
				deleteNotification(bpod("a", "3")),
				deleteNotification(DeletedFinalStateUnknown{Key: "ns/a", Obj: bpod("a", "2")}),
			},
			want: []string{"delete a@3"},
		},
		"objects keep their first position": {
			limit: 2,
			in: []notification{
				updateNotification(bpod("a", "1"), bpod("a", "2")),
				updateNotification(bpod("b", "1"), bpod("b", "2")),
				updateNotification(bpod("a", "2"), bpod("a", "3")),
			},
			want: []string{"update a@1->a@3", "update b@1->b@2"},
		},
		"objects without a key are never merged": {
			limit: 1,
			in:    []notification{addNotification("x", false), addNotification("x", false)},
			want:  []string{"add x", "add x"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			b := &backlog{limit: tc.limit}
			for _, n := range tc.in {
				b.push(n)
			}
			if diff := cmp.Diff(tc.want, drainBacklog(b)); diff != "" {
				t.Errorf("delivered (-want +got):\n%s", diff)
			}
			if b.cancelledInitial != tc.wantCancelledInitial {
				t.Errorf("cancelledInitial = %d, want %d", b.cancelledInitial, tc.wantCancelledInitial)
			}
			if b.len() != 0 {
				t.Errorf("len after drain = %d", b.len())
			}
		})
	}
}

// replayState applies delivered notifications the way a handler building
// its own cache would.
func replayState(t *testing.T, state map[string]string, n notification) {
	t.Helper()
	switch n.kind {
	case notifyAdd, notifyUpdate:
		pod := n.newObj.(*v1.Pod)
		state[pod.Name] = pod.ResourceVersion
	case notifyDelete:
		obj := n.oldObj
		if d, ok := obj.(DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		pod := obj.(*v1.Pod)
		if _, ok := state[pod.Name]; !ok {
			t.Fatalf("delete of %s, which the handler never saw", pod.Name)
		}
		delete(state, pod.Name)
	}
}

// TestBacklog_MergedStreamReachesTheSameState feeds random event streams
// with partial drains and checks that a handler replaying what it is given
// ends where the unmerged stream ends, while the backlog never holds more
// entries than the limit plus the number of distinct objects.
func TestBacklog_MergedStreamReachesTheSameState(t *testing.T) {
	r := rand.New(rand.NewSource(testSeed(t)))
	for run := 0; run < 200; run++ {
		const objects = 8
		limit := 1 + r.Intn(6)
		b := &backlog{limit: limit}
		truth := map[string]string{}
		handler := map[string]string{}
		maxLen := 0
		for step := 0; step < 200; step++ {
			name := fmt.Sprint("o", r.Intn(objects))
			rv := fmt.Sprint(step + 1)
			old, exists := truth[name]
			switch {
			case !exists:
				b.push(addNotification(bpod(name, rv), false))
				truth[name] = rv
			case r.Intn(3) == 0:
				b.push(deleteNotification(bpod(name, old)))
				delete(truth, name)
			default:
				b.push(updateNotification(bpod(name, old), bpod(name, rv)))
				truth[name] = rv
			}
			if b.len() > maxLen {
				maxLen = b.len()
			}
			for k := r.Intn(3); k > 0; k-- {
				first, second, ok := b.pop()
				if !ok {
					break
				}
				replayState(t, handler, first)
				if second != nil {
					replayState(t, handler, *second)
				}
			}
		}
		for {
			first, second, ok := b.pop()
			if !ok {
				break
			}
			replayState(t, handler, first)
			if second != nil {
				replayState(t, handler, *second)
			}
		}
		if diff := cmp.Diff(truth, handler); diff != "" {
			t.Fatalf("run %d (limit %d): handler state (-truth +handler):\n%s", run, limit, diff)
		}
		if maxLen > limit+objects {
			t.Fatalf("run %d: backlog reached %d entries, bound is %d", run, maxLen, limit+objects)
		}
	}
}
