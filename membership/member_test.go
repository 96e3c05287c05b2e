package membership

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
)

var leasesResource = schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}

// step runs one round of m and checks its wait and the assignment.
func step(t *testing.T, m *Member, wantWait time.Duration, want Assignment) {
	t.Helper()
	wait, err := m.round(context.Background())
	if err != nil {
		t.Logf("round: %v", err)
	}
	if wait != wantWait {
		t.Errorf("wait %v, want %v", wait, wantWait)
	}
	if diff := cmp.Diff(want, m.Assignment()); diff != "" {
		t.Errorf("assignment (-want +got):\n%s", diff)
	}
}

// expectCalls checks what rec saw since the last check.
func expectCalls(t *testing.T, rec *recorder, wantShards []string, wantChanges []Assignment) {
	t.Helper()
	shards, changes := rec.take()
	if diff := cmp.Diff(wantShards, shards); diff != "" {
		t.Errorf("SetShard calls (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantChanges, changes); diff != "" {
		t.Errorf("OnChange calls (-want +got):\n%s", diff)
	}
}

func TestRound_JoinCreatesTheLeaseAndClaimsTheWholeSpace(t *testing.T) {
	cs := fake.NewClientset()
	clk := clocktesting.NewFakeClock(t0)
	m, rec := newTestMember(t, cs, clk, "a")
	step(t, m, 2*time.Second, even(t, 0, 1))
	expectCalls(t, rec, []string{even(t, 0, 1).Selector}, []Assignment{even(t, 0, 1)})

	l, err := cs.CoordinationV1().Leases(testNS).Get(context.Background(), "ctl-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *l.Spec.HolderIdentity != "a" || *l.Spec.LeaseDurationSeconds != 15 || !l.Spec.RenewTime.Time.Equal(t0) || l.Labels[GroupLabel] != testGroup {
		t.Errorf("lease %+v", l)
	}

	clk.Step(2 * time.Second)
	step(t, m, 2*time.Second, even(t, 0, 1))
	expectCalls(t, rec, nil, nil)
	l, err = cs.CoordinationV1().Leases(testNS).Get(context.Background(), "ctl-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := t0.Add(2 * time.Second); !l.Spec.RenewTime.Time.Equal(want) {
		t.Errorf("renewTime %v, want %v", l.Spec.RenewTime.Time, want)
	}
}

func TestRound_RangesFollowJoinsLeavesAndExpiry(t *testing.T) {
	cs := fake.NewClientset()
	clk := clocktesting.NewFakeClock(t0)
	ctx := context.Background()
	b, rec := newTestMember(t, cs, clk, "b")
	step(t, b, 2*time.Second, even(t, 0, 1))
	rec.take()

	// a and c join; c's Lease will expire 5s from now, sooner than b's
	// next round would notice, so b wakes for it.
	if _, err := cs.CoordinationV1().Leases(testNS).Create(ctx, peerLease("a", t0, 15), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoordinationV1().Leases(testNS).Create(ctx, peerLease("c", t0.Add(-10*time.Second), 15), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	clk.Step(2 * time.Second) // t0+2s
	step(t, b, 2*time.Second, even(t, 1, 3))
	expectCalls(t, rec, []string{even(t, 1, 3).Selector}, []Assignment{even(t, 1, 3)})

	clk.Step(2 * time.Second) // t0+4s: c expires in 1s
	step(t, b, time.Second, even(t, 1, 3))
	clk.Step(time.Second) // t0+5s: c's renewTime + 15s exactly
	step(t, b, 2*time.Second, even(t, 1, 2))
	expectCalls(t, rec, []string{even(t, 1, 2).Selector}, []Assignment{even(t, 1, 2)})

	// a leaves cleanly: its Lease is gone at b's next round.
	if err := cs.CoordinationV1().Leases(testNS).Delete(ctx, "ctl-a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	clk.Step(2 * time.Second)
	step(t, b, 2*time.Second, even(t, 0, 1))
	expectCalls(t, rec, []string{even(t, 0, 1).Selector}, []Assignment{even(t, 0, 1)})
}

func TestRound_LeasesOfOtherGroupsDoNotCount(t *testing.T) {
	cs := fake.NewClientset()
	clk := clocktesting.NewFakeClock(t0)
	other := peerLease("z", t0, 15)
	other.Name = "other-z"
	other.Labels[GroupLabel] = "other"
	unlabelled := peerLease("y", t0, 15)
	unlabelled.Labels = nil
	for _, l := range []*coordinationv1.Lease{other, unlabelled} {
		if err := cs.Tracker().Add(l); err != nil {
			t.Fatal(err)
		}
	}
	m, _ := newTestMember(t, cs, clk, "a")
	step(t, m, 2*time.Second, even(t, 0, 1))
}

func TestRound_RenewFailuresKeepTheRangeUntilRenewDeadlineThenClaimNothing(t *testing.T) {
	cs := fake.NewClientset()
	clk := clocktesting.NewFakeClock(t0)
	ctx := context.Background()
	if _, err := cs.CoordinationV1().Leases(testNS).Create(ctx, peerLease("z", t0.Add(time.Hour), 15), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	a, rec := newTestMember(t, cs, clk, "a")
	step(t, a, 2*time.Second, even(t, 0, 2))
	rec.take()

	broken := failing(cs, "update", apierrors.NewServiceUnavailable("etcd is down"))
	for _, d := range []time.Duration{2, 4, 6, 8} {
		clk.SetTime(t0.Add(d * time.Second))
		wait, err := a.round(ctx)
		if err == nil || !strings.Contains(err.Error(), "renew lease ns/ctl-a: etcd is down") {
			t.Errorf("at +%ds: error %v, want the renewal's", d, err)
		}
		if want := min(2*time.Second, (10-d)*time.Second); wait != want {
			t.Errorf("at +%ds: wait %v, want %v", d, wait, want)
		}
		if diff := cmp.Diff(even(t, 0, 2), a.Assignment()); diff != "" {
			t.Errorf("at +%ds: assignment (-want +got):\n%s", d, diff)
		}
	}
	expectCalls(t, rec, nil, nil)

	// RenewDeadline after the last renewal: a lets go, while its Lease
	// (15s) still counts for the others.
	clk.SetTime(t0.Add(10 * time.Second))
	step(t, a, 2*time.Second, unclaimed(1))
	expectCalls(t, rec, nil, []Assignment{unclaimed(1)})

	clk.Step(2 * time.Second)
	step(t, a, 2*time.Second, unclaimed(1))
	expectCalls(t, rec, nil, nil)

	// Renewal works again: the same range, and the Resharder, still on
	// it, is not called.
	broken.Store(false)
	clk.Step(2 * time.Second)
	step(t, a, 2*time.Second, even(t, 0, 2))
	expectCalls(t, rec, nil, []Assignment{even(t, 0, 2)})
}

func TestRound_FailedListSettlesOnTheLastKnownPeers(t *testing.T) {
	cs := fake.NewClientset()
	clk := clocktesting.NewFakeClock(t0)
	if err := cs.Tracker().Add(peerLease("b", t0, 15)); err != nil {
		t.Fatal(err)
	}
	a, _ := newTestMember(t, cs, clk, "a")
	step(t, a, 2*time.Second, even(t, 0, 2))

	failing(cs, "list", apierrors.NewTimeoutError("slow", 1))
	clk.Step(14 * time.Second)
	_, err := a.round(context.Background())
	if err == nil || !strings.Contains(err.Error(), `list leases of group "ctl" in namespace "ns"`) {
		t.Errorf("error %v, want the list's", err)
	}
	if diff := cmp.Diff(even(t, 0, 2), a.Assignment()); diff != "" {
		t.Errorf("assignment (-want +got):\n%s", diff)
	}
	// b's Lease, last seen renewed at t0, has expired even though the
	// list cannot say so.
	clk.Step(time.Second)
	step(t, a, 2*time.Second, even(t, 0, 1))
}

func TestRound_LeaseChangedOrDeletedBehindOurBackIsWrittenAgain(t *testing.T) {
	tests := []struct {
		name      string
		interfere func(*testing.T, *fake.Clientset)
		wantVerbs []string
	}{{
		name: "deleted",
		interfere: func(t *testing.T, cs *fake.Clientset) {
			if err := cs.CoordinationV1().Leases(testNS).Delete(context.Background(), "ctl-a", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		},
		wantVerbs: []string{"update", "get", "create", "list"},
	}, {
		name: "conflict",
		interfere: func(_ *testing.T, cs *fake.Clientset) {
			var done atomic.Bool
			cs.PrependReactor("update", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
				if done.CompareAndSwap(false, true) {
					return true, nil, apierrors.NewConflict(leasesResource, "ctl-a", errors.New("stale"))
				}
				return false, nil, nil
			})
		},
		wantVerbs: []string{"update", "get", "update", "list"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cs := fake.NewClientset()
			clk := clocktesting.NewFakeClock(t0)
			a, _ := newTestMember(t, cs, clk, "a")
			step(t, a, 2*time.Second, even(t, 0, 1))
			tc.interfere(t, cs)
			cs.ClearActions()
			clk.Step(2 * time.Second)
			wait, err := a.round(context.Background())
			if err != nil || wait != 2*time.Second {
				t.Fatalf("round: %v, %v", wait, err)
			}
			var verbs []string
			for _, act := range cs.Actions() {
				verbs = append(verbs, act.GetVerb())
			}
			if diff := cmp.Diff(tc.wantVerbs, verbs); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
			l, err := cs.CoordinationV1().Leases(testNS).Get(context.Background(), "ctl-a", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if want := t0.Add(2 * time.Second); *l.Spec.HolderIdentity != "a" || !l.Spec.RenewTime.Time.Equal(want) {
				t.Errorf("lease holder %q renewed %v, want a at %v", *l.Spec.HolderIdentity, l.Spec.RenewTime.Time, want)
			}
		})
	}
}

func TestRound_ResharderErrorIsRetriedNextRound(t *testing.T) {
	cs := fake.NewClientset()
	clk := clocktesting.NewFakeClock(t0)
	a, rec := newTestMember(t, cs, clk, "a")
	rec.refuse.Store(true)
	step(t, a, 2*time.Second, even(t, 0, 1))
	expectCalls(t, rec, nil, []Assignment{even(t, 0, 1)})

	rec.refuse.Store(false)
	clk.Step(2 * time.Second)
	step(t, a, 2*time.Second, even(t, 0, 1))
	expectCalls(t, rec, []string{even(t, 0, 1).Selector}, nil)
}

func TestRound_NoRangeBeforeTheFirstSuccessfulList(t *testing.T) {
	cs := fake.NewClientset()
	clk := clocktesting.NewFakeClock(t0)
	broken := failing(cs, "list", apierrors.NewServiceUnavailable("down"))
	a, rec := newTestMember(t, cs, clk, "a")
	step(t, a, 2*time.Second, unclaimed(0))
	expectCalls(t, rec, nil, nil)
	if diff := cmp.Diff([]string{"a"}, leaseHolders(t, cs)); diff != "" {
		t.Errorf("holders (-want +got):\n%s", diff)
	}
	broken.Store(false)
	clk.Step(2 * time.Second)
	step(t, a, 2*time.Second, even(t, 0, 1))
	expectCalls(t, rec, []string{even(t, 0, 1).Selector}, []Assignment{even(t, 0, 1)})
}
