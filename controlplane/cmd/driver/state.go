package main

import (
	"context"
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The end state, as sorted lines, placement and generated names left out:
//
//	count <kind> <namespace> <n>              per kind and namespace
//	pod <ns> <owner chain> <phase> ready=<b>  x<n>, one line per distinct value
//	slice <ns>/<service> <member> x<n>        each endpoint of the service's slices
//
// An owner chain names each controller up to the top (pod -> ReplicaSet ->
// Deployment): ReplicaSet names carry the pod template's hash, the same in
// both runs for the same template. Pods of ReplicaSets and Jobs have random
// names, so they are counted per chain; a StatefulSet pod's name is stable
// and stands in its chain. A slice member is the chain of the pod its
// targetRef names and its ready condition: which node or IP it got is not
// compared.
func endState(ctx context.Context, c *clients) ([]string, error) {
	kinds := []struct {
		kind string
		gvr  schema.GroupVersionResource
	}{
		{"Pod", schema.GroupVersionResource{Version: "v1", Resource: "pods"}},
		{"Service", schema.GroupVersionResource{Version: "v1", Resource: "services"}},
		{"ConfigMap", schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}},
		{"ServiceAccount", schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}},
		{"Deployment", schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}},
		{"ReplicaSet", schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}},
		{"StatefulSet", schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"}},
		{"ControllerRevision", schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "controllerrevisions"}},
		{"Job", schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}},
		{"EndpointSlice", schema.GroupVersionResource{Group: "discovery.k8s.io", Version: "v1", Resource: "endpointslices"}},
	}
	var lines []string
	owner := map[string]string{} // kind/ns/name -> its controller, kind/ns/name
	for _, k := range kinds {
		gvr := k.gvr
		l, err := c.meta.Resource(gvr).Namespace("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("listing %s: %w", gvr.Resource, err)
		}
		counts := map[string]int{}
		for _, o := range l.Items {
			if !strings.HasPrefix(o.Namespace, "cp-") {
				continue
			}
			counts[o.Namespace]++
			if ref := metav1.GetControllerOf(&o); ref != nil {
				owner[k.kind+"/"+o.Namespace+"/"+o.Name] = ref.Kind + "/" + o.Namespace + "/" + ref.Name
			}
		}
		for ns, n := range counts {
			lines = append(lines, fmt.Sprintf("count %s %s %d", gvr.Resource, ns, n))
		}
	}
	chain := func(kind, ns, name string) string {
		parts := []string{}
		key := kind + "/" + ns + "/" + name
		for range 5 {
			up, ok := owner[key]
			if !ok {
				break
			}
			k := strings.SplitN(up, "/", 3)
			parts = append(parts, k[0]+"/"+k[2])
			key = up
		}
		if len(parts) > 0 && strings.HasPrefix(parts[0], "StatefulSet/") {
			parts = append([]string{"Pod/" + name}, parts...)
		}
		if len(parts) == 0 {
			return "Pod/" + name
		}
		return strings.Join(parts, "<")
	}
	pods, err := c.kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	multi := map[string]int{}
	podChain := map[string]string{}
	for i := range pods.Items {
		p := &pods.Items[i]
		if !strings.HasPrefix(p.Namespace, "cp-") {
			continue
		}
		ch := chain("Pod", p.Namespace, p.Name)
		podChain[p.Namespace+"/"+p.Name] = ch
		multi[fmt.Sprintf("pod %s %s %s ready=%v", p.Namespace, ch, p.Status.Phase, podReady(p))]++
	}
	slices, err := c.kube.DiscoveryV1().EndpointSlices("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, s := range slices.Items {
		if !strings.HasPrefix(s.Namespace, "cp-") {
			continue
		}
		svc := s.Labels["kubernetes.io/service-name"]
		for _, ep := range s.Endpoints {
			m := "no-target"
			if ep.TargetRef != nil {
				m = podChain[s.Namespace+"/"+ep.TargetRef.Name]
				if m == "" {
					m = "missing-pod"
				}
			}
			ready := ep.Conditions.Ready != nil && *ep.Conditions.Ready
			multi[fmt.Sprintf("slice %s/%s %s ready=%v", s.Namespace, svc, m, ready)]++
		}
	}
	for k, n := range multi {
		lines = append(lines, fmt.Sprintf("%s x%d", k, n))
	}
	sort.Strings(lines)
	return lines, nil
}
