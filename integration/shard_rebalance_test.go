package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	kcache "github.com/kcache/cache"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// The churn rounds of TestShardRebalance after the first: one while a
// replica leaves, one while it comes back. Each updates and deletes first
// pods no earlier round touched.
var (
	leaveRound = churnRound{prefix: "leave-", update: func(i int) bool { return i%10 == 3 }, remove: func(i int) bool { return i%10 == 4 }}
	joinRound  = churnRound{prefix: "join-", update: func(i int) bool { return i%10 == 5 }, remove: func(i int) bool { return i%10 == 6 }}
)

// relistAllowance is what the bounds of TestShardRebalance allow for one
// relist: as long as the harness gives an informer to sync. The bounds
// are the documented guarantee, not a speed target; the test logs the
// times it measured.
const relistAllowance = syncTimeout

// TestShardRebalance runs three replicas of a sharded pod informer whose
// ranges follow a membership group, as a controller would: each replica
// has a membership.Member (its Lease in a namespace of the test, on a
// client of its own that the test can cut off) whose Resharder moves the
// replica's ShardedListerWatcher, and a pod informer on another client
// with a handler recording what it was told. After the pods are created
// (KCACHE_SHARD_PODS) and the replicas have joined, each step runs under a
// round of churn (creates, updates, short-lived pods, deletes):
//
//   - steady: the three caches are pairwise disjoint, their union is a
//     fresh List, each holds 1/3 ± 5%;
//   - leave: replica-0's Member loses the API server without stopping,
//     so its Lease expires. Within LeaseDuration and one relist the other
//     two hold every long-lived pod; replica-0 claims nothing (OnChange
//     index -1); once settled the two are disjoint halves of the truth;
//   - rejoin: the client works again; within two rounds and one relist
//     every long-lived pod is held by the owner of its third alone; once
//     settled, three disjoint thirds of the truth again;
//   - no event lost: every live pod's current version is held by exactly
//     one replica, whose handler saw that version; no replica holds a
//     deleted pod; for a live pod, each handler saw one add per time it
//     gained the pod and a MovedOutOfShard per time it lost it, never a
//     plain delete or a DeletedFinalStateUnknown.
//
// It logs when replica-0 stopped claiming, when the others took over or
// gave back its range, and when every pod was covered again.
func TestShardRebalance(t *testing.T) {
	s := needServer(t)
	pods := shardPodCount(t)
	ctx := context.Background()
	phase := newStopwatch(t)
	namespaces, kind := s.podNamespaces(t, "rebal")
	leases := s.namespaces(t, "rebal-leases", 1)[0]
	work := newShardWorkload(kind, namespaces, pods)
	if err := work.populate(ctx); err != nil {
		t.Fatalf("create %d pods: %v", pods, err)
	}
	stable := work.untouched(firstRound, leaveRound, joinRound)
	phase.lap("populate")

	replicas := make([]*rebalanceReplica, shardReplicas)
	for i := range replicas {
		replicas[i] = s.joinGroup(t, leases, "pods", fmt.Sprintf("replica-%d", i))
	}
	waitAssigned(t, replicas)
	for _, r := range replicas {
		r.startInformer(t, namespaces)
	}
	phase.lap("join and sync")

	if err := work.churn(ctx); err != nil {
		t.Fatalf("churn: %v", err)
	}
	checkRebalanced(t, "steady", kind, namespaces, replicas)
	phase.lap("steady state")

	leaving, others := replicas[0], replicas[1:]
	rebalanceLeave(t, work, stable, leaving, others)
	checkRebalanced(t, "leave", kind, namespaces, others)
	if a := leaving.member.Assignment(); a.Claiming() || a.Index != -1 {
		t.Errorf("%s claims %+v while cut off", leaving.name, a)
	}
	phase.lap("leave")

	rebalanceJoin(t, work, stable, leaving, replicas)
	want := checkRebalanced(t, "rejoin", kind, namespaces, replicas)
	phase.lap("rejoin")

	work.account()
	checkNoEventLost(t, want, work.w.ledger, replicas, others)
	tally.scenarios.Add(1)
}

// rebalanceLeave cuts leaving's Member off under a round of churn and
// waits until the others hold every pod of stable, within LeaseDuration
// and one relist of the cut.
func rebalanceLeave(t *testing.T, work *shardWorkload, stable []metav1.Object, leaving *rebalanceReplica, others []*rebalanceReplica) {
	t.Helper()
	churned := churnAsync(work, leaveRound)
	cutAt := time.Now()
	leaving.cut.Store(true)
	covered := waitUntil(t, "the other replicas cover every pod", rebalanceLeaseDuration+relistAllowance, func() bool {
		for _, p := range stable {
			if !others[0].holds(objectKey(p), p.GetUID()) && !others[1].holds(objectKey(p), p.GetUID()) {
				return false
			}
		}
		return true
	})
	if err := <-churned; err != nil {
		t.Fatalf("churn while %s leaves: %v", leaving.name, err)
	}
	stopped, ok := leaving.changes.since(cutAt, -1, len(others))
	if !ok {
		t.Errorf("%s: OnChange was not told it claims nothing (index -1 of %d other members)", leaving.name, len(others))
	}
	took := latestChange(t, cutAt, others, len(others), 0)
	t.Logf("leave: %s cut off; it stopped claiming after %s (RenewDeadline %s); the others took its range over after %s (LeaseDuration %s) and covered every pod after %s (a relist of %s)",
		leaving.name, since(cutAt, stopped), rebalanceRenewDeadline, since(cutAt, took), rebalanceLeaseDuration, covered, covered-since(cutAt, took))
}

// rebalanceJoin lets leaving's Member reach the API server again under a
// round of churn and waits until each pod of stable is held by the owner
// of its third alone.
func rebalanceJoin(t *testing.T, work *shardWorkload, stable []metav1.Object, leaving *rebalanceReplica, replicas []*rebalanceReplica) {
	t.Helper()
	thirds := make([]*kcache.ShardSelector, len(replicas))
	for i := range thirds {
		text, err := kcache.EvenShardSelector(i, len(replicas))
		if err != nil {
			t.Fatal(err)
		}
		if thirds[i], err = kcache.ParseShardSelector(text); err != nil {
			t.Fatal(err)
		}
	}
	owners := make([]int, len(stable))
	for i, p := range stable {
		for j, sel := range thirds {
			if inSelector(t, sel, p.GetUID()) {
				owners[i] = j
			}
		}
	}
	churned := churnAsync(work, joinRound)
	backAt := time.Now()
	leaving.cut.Store(false)
	settled := waitUntil(t, "three disjoint thirds", 2*rebalanceRetryPeriod+relistAllowance, func() bool {
		for i, p := range stable {
			for j, r := range replicas {
				if r.holds(objectKey(p), p.GetUID()) != (j == owners[i]) {
					return false
				}
			}
		}
		return true
	})
	if err := <-churned; err != nil {
		t.Fatalf("churn while %s comes back: %v", leaving.name, err)
	}
	rejoined := latestChange(t, backAt, replicas, len(replicas), 0)
	t.Logf("rejoin: %s reconnected; every replica was assigned its third after %s and the thirds were disjoint and complete after %s",
		leaving.name, since(backAt, rejoined), settled)
}

// churnAsync runs round r of work's churn and reports its end.
func churnAsync(work *shardWorkload, r churnRound) <-chan error {
	done := make(chan error, 1)
	go func() { done <- work.churnRound(context.Background(), r) }()
	return done
}

// latestChange returns the time by which each replica's OnChange was told
// it is index first+i of count, after from.
func latestChange(t *testing.T, from time.Time, replicas []*rebalanceReplica, count, first int) time.Time {
	t.Helper()
	var latest time.Time
	for i, r := range replicas {
		at, ok := r.changes.since(from, first+i, count)
		if !ok {
			t.Errorf("%s: OnChange was not told index %d of %d", r.name, first+i, count)
			continue
		}
		if at.After(latest) {
			latest = at
		}
	}
	return latest
}

// since is at - from, or 0 if at is unknown.
func since(from, at time.Time) time.Duration {
	if at.IsZero() {
		return 0
	}
	return at.Sub(from).Round(time.Millisecond)
}

// waitUntil polls cond until it holds, failing the test after bound, and
// returns how long it took.
func waitUntil(t *testing.T, what string, bound time.Duration, cond func() bool) time.Duration {
	t.Helper()
	began := time.Now()
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, bound, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	if err != nil {
		t.Fatalf("%s: not within %s: %v", what, bound, err)
	}
	return time.Since(began).Round(time.Millisecond)
}

// waitAssigned waits until replica i of n claims index i of n.
func waitAssigned(t *testing.T, replicas []*rebalanceReplica) {
	t.Helper()
	waitUntil(t, "every replica claims its third", syncTimeout, func() bool {
		for i, r := range replicas {
			if a := r.member.Assignment(); a.Index != i || a.Count != len(replicas) {
				return false
			}
		}
		return true
	})
}

// checkRebalanced lists the pods afresh, waits until each replica's store
// and handler hold exactly the part of the list in its shard, checks that
// the replicas split the list evenly and disjointly, and returns the list.
func checkRebalanced(t *testing.T, step string, kind kindClient, namespaces []string, replicas []*rebalanceReplica) snapshot {
	t.Helper()
	want := listSnapshot(t, kind, namespaces...)
	split := make([]*replica, len(replicas))
	for i, r := range replicas {
		mine := part(t, want, r.selector(t))
		waitConverged(t, mine, r.informer)
		waitUntil(t, r.handler.name+" holds its shard", convergeTimeout, func() bool {
			got := r.handler.snapshot()
			if len(got) != len(mine) {
				return false
			}
			for k, v := range mine {
				if got[k] != v {
					return false
				}
			}
			return true
		})
		split[i] = &replica{name: r.name, informer: r.informer}
	}
	checkSplit(t, want, split)
	t.Logf("%s: %d replicas hold disjoint shards of %d pods", step, len(replicas), len(want))
	return want
}

// checkNoEventLost checks the replicas' handlers once everything settled
// on want: see TestShardRebalance. movers are the replicas whose range
// moved, which must each have been told of a move.
func checkNoEventLost(t *testing.T, want snapshot, l *ledger, replicas, movers []*rebalanceReplica) {
	t.Helper()
	wrong := 0
	report := func(format string, args ...any) {
		if wrong < 5 {
			t.Errorf(format, args...)
		}
		wrong++
	}
	for key, state := range want {
		holders := 0
		for _, r := range replicas {
			h := r.handler.historyOf(state.UID)
			held := inSelector(t, r.selector(t), state.UID)
			gained := h.moves
			if held {
				holders++
				gained++
				if !h.seen[state.RV] {
					report("%s holds %s rv %d, but its handler never saw that version", r.name, key, state.RV)
				}
			}
			if h.deletes > 0 || h.tombstones > 0 {
				report("%s: the handler got %d plain deletes and %d DeletedFinalStateUnknown for the live pod %s", r.name, h.deletes, h.tombstones, key)
			}
			if h.adds != gained {
				report("%s: the handler got %d adds and %d MovedOutOfShard for %s, which it holds: %v", r.name, h.adds, h.moves, key, held)
			}
		}
		if holders != 1 {
			report("%s is in the shards of %d replicas", key, holders)
		}
	}
	for _, w := range l.all() {
		for _, r := range replicas {
			if w.deleted && r.holds(w.key, w.uid) {
				report("%s holds %s, deleted", r.name, w.key)
			}
		}
	}
	if wrong > 0 {
		t.Errorf("%d problems with the events of %d live pods", wrong, len(want))
	}
	for _, r := range replicas {
		totals, problems := r.handler.result()
		if len(problems) > 0 {
			t.Errorf("%s: inconsistent events (up to %d shown):\n  %v", r.handler.name, maxProblems, problems)
		}
		t.Logf("%s: %d adds, %d updates, %d MovedOutOfShard, %d deletes, %d DeletedFinalStateUnknown", r.handler.name, totals.adds, totals.updates, totals.moves, totals.deletes, totals.tombstones)
		tally.events.Add(int64(totals.adds + totals.updates + totals.moves + totals.deletes + totals.tombstones))
	}
	for _, r := range movers {
		if totals, _ := r.handler.result(); totals.moves == 0 {
			t.Errorf("%s moved twice, but its handler got no MovedOutOfShard", r.name)
		}
	}
}
