package main

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The cluster both programs see: nodes for KWOK to manage, in two zones,
// and pods bound to them directly (no scheduler runs), in groups owned by
// ReplicaSets that do not exist (the descheduler evicts only owned pods).
const (
	fakeNodeKey   = "kwok.x-k8s.io/node"
	zoneLabel     = "topology.kubernetes.io/zone"
	taintKey      = "programs.kcache.dev/dedicated"
	groupSize     = 50
	namespaceBase = "programs-"
	namespaces    = 10
)

// groupKind says what a group's pods ask for; the descheduler's two
// plugins act on the first two, the toleration spares pods on tainted nodes.
type groupKind int

const (
	plain groupKind = iota
	zoneA
	tolerant
	zoneATolerant
	groupKinds
)

func nodeName(i int) string { return fmt.Sprintf("kwok-node-%04d", i) }

// zoneOf is node i's zone at creation: even nodes are zone-a.
func zoneOf(i int) string {
	if i%2 == 0 {
		return "zone-a"
	}
	return "zone-b"
}

func fakeNode(i int) *corev1.Node {
	name := nodeName(i)
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("64"),
		corev1.ResourceMemory: resource.MustParse("512Gi"),
		corev1.ResourcePods:   resource.MustParse("1000"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{fakeNodeKey: "fake", "node.alpha.kubernetes.io/ttl": "0"},
			Labels: map[string]string{"type": "kwok", "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
				"kubernetes.io/arch": "amd64", zoneLabel: zoneOf(i)},
		},
		Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
	}
}

// plan places pods: group g has kind g%groupKinds; zone-a groups go to
// even nodes, the others to every node, round robin.
type plan struct {
	nodes, pods int
}

// node is where pod i of the plan runs.
func (p plan) node(i int) int {
	g := i / groupSize
	if kind := groupKind(g % int(groupKinds)); kind == zoneA || kind == zoneATolerant {
		even := (p.nodes + 1) / 2
		return 2 * (i % even)
	}
	return i % p.nodes
}

func (p plan) pod(i int) *corev1.Pod {
	g := i / groupSize
	kind := groupKind(g % int(groupKinds))
	ns := fmt.Sprintf("%s%d", namespaceBase, g%namespaces)
	rs := fmt.Sprintf("group-%04d", g)
	app := map[string]string{"app": rs, "kind": fmt.Sprint(int(kind))}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns,
			Name:      fmt.Sprintf("%s-%05d", rs, i),
			Labels:    app,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs,
				UID: types.UID(fmt.Sprintf("00000000-0000-0000-0000-%012d", g)), Controller: ptr(true),
			}},
		},
		Spec: corev1.PodSpec{
			NodeName: nodeName(p.node(i)),
			Containers: []corev1.Container{{
				Name:  "app",
				Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi"),
				}},
			}},
		},
	}
	if kind == zoneA || kind == zoneATolerant {
		pod.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: zoneLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{"zone-a"}}},
			}}},
		}}
	}
	if kind == tolerant || kind == zoneATolerant {
		pod.Spec.Tolerations = append(pod.Spec.Tolerations,
			corev1.Toleration{Key: taintKey, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})
	}
	return pod
}

// perturbation is what the descheduler phase changes on the nodes: every
// 20th node from 0 (zone-a) moves to zone-b, so its zone-a pods violate
// their affinity; nodes 1 and 2 of every 20 get a NoSchedule taint that
// only the tolerant pods tolerate.
func perturbation(i int) (moveZone, taint bool) {
	switch i % 20 {
	case 0:
		return true, false
	case 1, 2:
		return false, true
	}
	return false, false
}

func ptr[T any](v T) *T { return &v }
