package sharding

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	framework "github.com/kcache/cache/testing"
	corev1 "k8s.io/api/core/v1"
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

// crashOnLeave makes the release of identity's Lease fail, as if the
// replica died: the others see its Lease until it expires.
func crashOnLeave(leases *fake.Clientset, identity string) {
	leases.PrependReactor("delete", "leases", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if action.(k8stesting.DeleteAction).GetName() == testGroup+"-"+identity {
			return true, nil, errCrashed
		}
		return false, nil, nil
	})
}

// Three managers over one simulated API server: replicas join, one leaves
// cleanly, one crashes. After each change the group settles with the
// caches disjoint and their union the server's list, every change of
// every Pod (made while the shards move) is reconciled, and no replica is
// handed a moved Pod as a deletion.
func TestGroup_ShardsFollowTheLiveReplicas(t *testing.T) {
	ctx := context.Background()
	pods := newPods(t, 60)
	srv := newPodServer(t, pods)
	leases := fake.NewClientset()

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
		{"one leaves cleanly", func(group []*replica) []*replica {
			if err := group[1].stop(); err != nil {
				t.Fatalf("stopping %s: %v", group[1].identity, err)
			}
			return []*replica{group[0], group[2]}
		}},
		{"one crashes", func(group []*replica) []*replica {
			crashOnLeave(leases, group[1].identity)
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
	}
}
