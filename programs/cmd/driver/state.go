package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// state is the part of the cluster the runs are compared on.
type state struct {
	nodes  []corev1.Node
	pods   []corev1.Pod
	leases []coordinationv1.Lease
	at     time.Time
}

func readState(ctx context.Context, c kubernetes.Interface) (*state, error) {
	st := &state{at: time.Now()}
	nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "type=kwok"})
	if err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	st.nodes = nodes.Items
	pods, err := c.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: "kind"})
	if err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	for _, p := range pods.Items {
		if strings.HasPrefix(p.Namespace, namespaceBase) {
			st.pods = append(st.pods, p)
		}
	}
	leases, err := c.CoordinationV1().Leases(corev1.NamespaceNodeLease).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing node leases: %w", err)
	}
	st.leases = leases.Items
	return st, nil
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func (st *state) readyNodes() int {
	n := 0
	for i := range st.nodes {
		if nodeReady(&st.nodes[i]) {
			n++
		}
	}
	return n
}

func (st *state) runningPods() int {
	n := 0
	for i := range st.pods {
		if st.pods[i].Status.Phase == corev1.PodRunning && podReady(&st.pods[i]) {
			n++
		}
	}
	return n
}

// leaseFresh is how recently a node's Lease must have been renewed to count
// as renewed: KWOK's heartbeat stage renews every few seconds.
const leaseFresh = 40 * time.Second

// lines is the end state as sorted lines: every pod's node, phase and
// readiness, whether it has an IP (which one depends on KWOK's order of
// work); every node's readiness; and whether each node's Lease was renewed
// in the last leaseFresh.
func (st *state) lines() []string {
	var out []string
	for i := range st.pods {
		p := &st.pods[i]
		out = append(out, fmt.Sprintf("pod %s/%s node=%s phase=%s ready=%t ip=%t",
			p.Namespace, p.Name, p.Spec.NodeName, p.Status.Phase, podReady(p), p.Status.PodIP != ""))
	}
	for i := range st.nodes {
		out = append(out, fmt.Sprintf("node %s ready=%t", st.nodes[i].Name, nodeReady(&st.nodes[i])))
	}
	for _, l := range st.leases {
		renewed := l.Spec.RenewTime != nil && st.at.Sub(l.Spec.RenewTime.Time) < leaseFresh
		out = append(out, fmt.Sprintf("lease %s renewed=%t", l.Name, renewed))
	}
	slices.Sort(out)
	return out
}

func writeEndState(ctx context.Context, c kubernetes.Interface, out string) error {
	st, err := readState(ctx, c)
	if err != nil {
		return err
	}
	return os.WriteFile(out, []byte(strings.Join(st.lines(), "\n")+"\n"), 0o644)
}

// perturb applies perturbation to the plan's nodes. It first takes off
// every node the not-ready taint the API server's TaintNodesByCondition
// admission put on it at creation: no controller manager runs here to take
// it off once KWOK reports the node Ready, and every pod would violate it.
func perturb(ctx context.Context, c kubernetes.Interface, p plan) error {
	for i := range p.nodes {
		move, taint := perturbation(i)
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			n, err := c.CoreV1().Nodes().Get(ctx, nodeName(i), metav1.GetOptions{})
			if err != nil {
				return err
			}
			n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeNotReady })
			if move {
				n.Labels[zoneLabel] = "zone-b"
			}
			if taint {
				n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: taintKey, Value: "x", Effect: corev1.TaintEffectNoSchedule})
			}
			_, err = c.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			return fmt.Errorf("moving or tainting node %s: %w", nodeName(i), err)
		}
	}
	return nil
}
