package sharding

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	framework "github.com/kcache/cache/testing"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// settleTimeout bounds every wait of these tests: far above the promised
// bounds (LeaseDuration + one relist at most), for a loaded machine.
const settleTimeout = 30 * time.Second

// testPod is Pod i of the tests, with a UID of its own.
func testPod(i int) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: "ns",
		Name:      fmt.Sprintf("pod-%02d", i),
		UID:       types.UID(fmt.Sprintf("%08x-5c1e-4d2a-9b7f-%012x", uint32(i)*2654435761, i)),
	}}
}

// newPods returns a simulated server holding n Pods, shut down when the
// test ends (after the replicas, which stop in later cleanups).
func newPods(t *testing.T, n int) *framework.FakeControllerSource {
	pods := framework.NewFakeControllerSource()
	t.Cleanup(pods.Shutdown)
	for i := range n {
		pods.Add(testPod(i))
	}
	return pods
}

// touchAll changes every Pod of the server once.
func touchAll(t *testing.T, pods *framework.FakeControllerSource, round int) {
	t.Helper()
	for i := range pods.Len() {
		obj, ok := pods.Get("ns", fmt.Sprintf("pod-%02d", i))
		if !ok {
			continue
		}
		pod := obj.(*corev1.Pod).DeepCopy()
		pod.Labels = map[string]string{"round": fmt.Sprint(round)}
		if _, err := pods.Update(pod); err != nil {
			t.Fatalf("updating %s: %v", pod.Name, err)
		}
	}
}

var errCrashed = errors.New("the replica crashed before it could release its Lease")

// leaseFaults breaks the Lease calls of chosen replicas. Its reactors are
// installed before any replica starts (client-go's fake clientset does not
// take new reactors safely while it is used).
type leaseFaults struct {
	// crashed holds the identities whose Lease deletes fail, as if the
	// replica died; cut those whose Lease updates fail, as if it could
	// not reach the API server.
	crashed, cut sync.Map
}

// newLeases returns a fake clientset for the Leases and its faults.
func newLeases() (*fake.Clientset, *leaseFaults) {
	leases, faults := fake.NewClientset(), &leaseFaults{}
	leases.PrependReactor("*", "leases", func(action k8stesting.Action) (bool, runtime.Object, error) {
		var name string
		switch a := action.(type) {
		case k8stesting.DeleteAction:
			name = a.GetName()
			if _, ok := faults.crashed.Load(name); ok {
				return true, nil, errCrashed
			}
		case k8stesting.UpdateAction:
			if m, err := meta.Accessor(a.GetObject()); err == nil {
				name = m.GetName()
			}
			if _, ok := faults.cut.Load(name); ok {
				return true, nil, errors.New("the API server cannot be reached")
			}
		}
		return false, nil, nil
	})
	return leases, faults
}

// crash makes identity's Lease stay behind when it stops.
func (f *leaseFaults) crash(identity string) { f.crashed.Store(testGroup+"-"+identity, true) }

// cutOff makes identity's renewals fail.
func (f *leaseFaults) cutOff(identity string) { f.cut.Store(testGroup+"-"+identity, true) }

// Managers over one simulated API server: replicas join, one is cut off
// from the API server (and reconciles nothing from then on), one leaves
// cleanly, one crashes. After each change the group settles with the
// caches disjoint and their union the server's list, every change of
// every Pod (made while the shards move) is reconciled, and no replica is
// handed a moved Pod as a deletion.
func TestGroup_ShardsFollowTheLiveReplicas(t *testing.T) {
	ctx := context.Background()
	pods := newPods(t, 60)
	srv := newPodServer(t, pods)
	leases, faults := newLeases()
	// paused is the replica cut off from the API server, and calls the
	// requests its reconciler had been given when it let go.
	var paused *replica
	calls := 0

	steps := []struct {
		name string
		// change alters the group and returns the replicas live after it.
		change func(group []*replica) []*replica
	}{
		{"two replicas start", func([]*replica) []*replica {
			return []*replica{startReplica(t, srv, leases, "replica-a"), startReplica(t, srv, leases, "replica-b")}
		}},
		{"a third joins", func(group []*replica) []*replica {
			return append(group, startReplica(t, srv, leases, "replica-c"))
		}},
		{"one is cut off from the API server", func(group []*replica) []*replica {
			cut := group[0]
			faults.cutOff(cut.identity)
			eventually(t, settleTimeout, "the cut-off replica lets go", func() error { return claims(cut.sharder, false) })
			// A reconcile that passed the gate just before may still end.
			time.Sleep(5 * reconcileTime)
			paused, calls = cut, cut.rec.count()
			return group[1:]
		}},
		{"a fourth joins", func(group []*replica) []*replica {
			return append(group, startReplica(t, srv, leases, "replica-d"))
		}},
		{"one leaves cleanly", func(group []*replica) []*replica {
			if err := group[1].stop(); err != nil {
				t.Fatalf("stopping %s: %v", group[1].identity, err)
			}
			return []*replica{group[0], group[2]}
		}},
		{"one crashes", func(group []*replica) []*replica {
			faults.crash(group[1].identity)
			_ = group[1].stop() // the manager logs its runnable's error and returns nil
			lease := testGroup + "-" + group[1].identity
			if _, err := leases.CoordinationV1().Leases(testNamespace).Get(ctx, lease, metav1.GetOptions{}); err != nil {
				t.Fatalf("the crashed replica's Lease %s should stay until it expires: %v", lease, err)
			}
			return group[:1]
		}},
	}
	var group []*replica
	for round, step := range steps {
		// Changes before the move fill the queues with requests the
		// move makes stale; changes after it are made while it runs.
		touchAll(t, pods, 2*round)
		group = step.change(group)
		touchAll(t, pods, 2*round+1)
		took := eventually(t, settleTimeout, step.name+": shards settle", func() error { return settled(ctx, group, pods) })
		eventually(t, settleTimeout, step.name+": every change reconciled", func() error { return allReconciled(group, pods) })
		t.Logf("%s: settled after %v", step.name, took.Round(time.Millisecond))
		if paused != nil && paused.rec.count() != calls {
			t.Errorf("%s: %s, claiming no range, reconciled %d requests", step.name, paused.identity, paused.rec.count()-calls)
		}
	}
}
