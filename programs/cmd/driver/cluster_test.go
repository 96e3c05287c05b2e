package main

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestPlan checks the cluster the descheduler is measured on: zone-a pods
// sit on zone-a nodes, and the perturbation leaves some pods violating each
// plugin's rule and spares the tolerant ones.
func TestPlan(t *testing.T) {
	p := plan{nodes: 200, pods: 20000}
	names := map[string]bool{}
	violateAffinity, violateTaint, spared := 0, 0, 0
	for i := range p.pods {
		pod := p.pod(i)
		if names[pod.Namespace+"/"+pod.Name] {
			t.Fatalf("pod %d: name %s/%s used twice", i, pod.Namespace, pod.Name)
		}
		names[pod.Namespace+"/"+pod.Name] = true
		n := p.node(i)
		if n < 0 || n >= p.nodes || pod.Spec.NodeName != nodeName(n) {
			t.Fatalf("pod %d on %q, node index %d", i, pod.Spec.NodeName, n)
		}
		wantsA := pod.Spec.Affinity != nil
		if wantsA && zoneOf(n) != "zone-a" {
			t.Fatalf("pod %d needs zone-a but sits on %s in %s", i, pod.Spec.NodeName, zoneOf(n))
		}
		if len(pod.OwnerReferences) != 1 {
			t.Fatalf("pod %d has %d owners; the descheduler evicts owned pods only", i, len(pod.OwnerReferences))
		}
		move, taint := perturbation(n)
		tolerates := false
		for _, tol := range pod.Spec.Tolerations {
			tolerates = tolerates || (tol.Key == taintKey && tol.Effect == corev1.TaintEffectNoSchedule)
		}
		switch {
		case taint && !tolerates:
			violateTaint++
		case taint:
			spared++
		case move && wantsA:
			violateAffinity++
		}
	}
	if violateAffinity == 0 || violateTaint == 0 || spared == 0 {
		t.Errorf("affinity violations %d, taint violations %d, tolerated %d: each must be > 0", violateAffinity, violateTaint, spared)
	}
	t.Logf("after perturbation: %d pods violate affinity, %d violate a taint, %d tolerate it", violateAffinity, violateTaint, spared)
}
