package membership

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	cache "github.com/kcache/cache"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var t0 = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

// even returns the assignment of shard index of count.
func even(t *testing.T, index, count int) Assignment {
	t.Helper()
	sel, err := cache.EvenShardSelector(index, count)
	if err != nil {
		t.Fatal(err)
	}
	return Assignment{Selector: sel, Index: index, Count: count}
}

func TestAssign_RangeFollowsLiveMembers(t *testing.T) {
	tests := []struct {
		name     string
		self     string
		claiming bool
		peers    []peer
		now      time.Time
		want     func(t *testing.T) Assignment
		wantNext time.Time
	}{{
		name:     "one member holds the whole space",
		self:     "a",
		claiming: true,
		now:      t0,
		want:     func(t *testing.T) Assignment { return even(t, 0, 1) },
	}, {
		name:     "members sorted by identity give the index",
		self:     "b",
		claiming: true,
		peers:    []peer{{"a", t0.Add(time.Minute)}, {"c", t0.Add(time.Second)}},
		now:      t0,
		want:     func(t *testing.T) Assignment { return even(t, 1, 3) },
		wantNext: t0.Add(time.Second),
	}, {
		name:     "identities order bytewise, not numerically",
		self:     "replica-2",
		claiming: true,
		peers:    []peer{{"replica-10", t0.Add(time.Minute)}},
		now:      t0,
		want:     func(t *testing.T) Assignment { return even(t, 1, 2) },
		wantNext: t0.Add(time.Minute),
	}, {
		name:     "a peer expiring exactly now has left",
		self:     "b",
		claiming: true,
		peers:    []peer{{"a", t0}, {"c", t0.Add(time.Second)}},
		now:      t0,
		want:     func(t *testing.T) Assignment { return even(t, 0, 2) },
		wantNext: t0.Add(time.Second),
	}, {
		name:     "a peer expiring one nanosecond after now is still a member",
		self:     "b",
		claiming: true,
		peers:    []peer{{"a", t0.Add(time.Nanosecond)}},
		now:      t0,
		want:     func(t *testing.T) Assignment { return even(t, 1, 2) },
		wantNext: t0.Add(time.Nanosecond),
	}, {
		name:     "a peer renewed ahead of our clock (skew) is a member",
		self:     "a",
		claiming: true,
		peers:    []peer{{"b", t0.Add(time.Hour)}},
		now:      t0,
		want:     func(t *testing.T) Assignment { return even(t, 0, 2) },
		wantNext: t0.Add(time.Hour),
	}, {
		name:     "every peer expired: alone again",
		self:     "m",
		claiming: true,
		peers:    []peer{{"a", t0.Add(-time.Second)}, {"z", t0}},
		now:      t0,
		want:     func(t *testing.T) Assignment { return even(t, 0, 1) },
	}, {
		name:     "not claiming: no range, the live peers counted",
		self:     "b",
		claiming: false,
		peers:    []peer{{"a", t0.Add(time.Second)}, {"c", t0}},
		now:      t0,
		want:     func(*testing.T) Assignment { return unclaimed(1) },
		wantNext: t0.Add(time.Second),
	}, {
		name:     "not claiming and alone",
		self:     "b",
		claiming: false,
		now:      t0,
		want:     func(*testing.T) Assignment { return unclaimed(0) },
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, next := assign(tc.self, tc.claiming, tc.peers, tc.now)
			if diff := cmp.Diff(tc.want(t), got); diff != "" {
				t.Errorf("assignment (-want +got):\n%s", diff)
			}
			if !next.Equal(tc.wantNext) {
				t.Errorf("next expiry = %v, want %v", next, tc.wantNext)
			}
		})
	}
}

// TestAssign_EveryMemberTogetherCoversTheSpaceOnce checks that members who
// agree on the set hold disjoint ranges whose union is the whole space.
func TestAssign_EveryMemberTogetherCoversTheSpaceOnce(t *testing.T) {
	ids := []string{"d", "a", "c", "b", "e"}
	seen := map[int]string{}
	for _, self := range ids {
		var peers []peer
		for _, id := range ids {
			if id != self {
				peers = append(peers, peer{id, t0.Add(time.Second)})
			}
		}
		got, _ := assign(self, true, peers, t0)
		if got.Count != len(ids) {
			t.Fatalf("%s: count %d, want %d", self, got.Count, len(ids))
		}
		if prev, dup := seen[got.Index]; dup {
			t.Fatalf("%s and %s both have index %d", prev, self, got.Index)
		}
		seen[got.Index] = self
		if diff := cmp.Diff(even(t, got.Index, got.Count), got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", self, diff)
		}
	}
	if diff := cmp.Diff(map[int]string{0: "a", 1: "b", 2: "c", 3: "d", 4: "e"}, seen); diff != "" {
		t.Errorf("index by identity (-want +got):\n%s", diff)
	}
}

func TestPeersOf_KeepsWellFormedLeasesOfOthers(t *testing.T) {
	secs := func(s int32) *int32 { return &s }
	str := func(s string) *string { return &s }
	at := func(d time.Duration) *metav1.MicroTime { return &metav1.MicroTime{Time: t0.Add(d)} }
	lease := func(holder *string, renew *metav1.MicroTime, dur *int32) coordinationv1.Lease {
		return coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{HolderIdentity: holder, RenewTime: renew, LeaseDurationSeconds: dur}}
	}
	leases := []coordinationv1.Lease{
		lease(str("b"), at(0), secs(15)),
		lease(str("self"), at(0), secs(15)),
		lease(nil, at(0), secs(15)),
		lease(str(""), at(0), secs(15)),
		lease(str("c"), nil, secs(15)),
		lease(str("d"), at(0), nil),
		lease(str("e"), at(0), secs(0)),
		lease(str("a"), at(time.Second), secs(10)),
		lease(str("a"), at(0), secs(10)),
	}
	got := peersOf(leases, "self")
	want := []peer{{"a", t0.Add(11 * time.Second)}, {"b", t0.Add(15 * time.Second)}}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(peer{})); diff != "" {
		t.Errorf("peers (-want +got):\n%s", diff)
	}
}
