package main

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// cluster is one read of the scenario's objects, all namespaces.
type cluster struct {
	namespaces   map[string]bool
	deployments  []appsv1.Deployment
	replicaSets  []appsv1.ReplicaSet
	statefulSets []appsv1.StatefulSet
	jobs         []jobView
	pods         []corev1.Pod
	slices       map[string]int // ns/service -> ready endpoints
	services     []corev1.Service
}

type jobView struct {
	ns, name             string
	completions, succeed int32
	complete             bool
}

// read lists everything the checks need (from the API server's watch cache).
func read(ctx context.Context, c kubernetes.Interface) (*cluster, error) {
	opts := metav1.ListOptions{ResourceVersion: "0"}
	cl := &cluster{namespaces: map[string]bool{}, slices: map[string]int{}}
	nss, err := c.CoreV1().Namespaces().List(ctx, opts)
	if err != nil {
		return nil, err
	}
	for _, n := range nss.Items {
		if strings.HasPrefix(n.Name, "cp-") {
			cl.namespaces[n.Name] = true
		}
	}
	ds, err := c.AppsV1().Deployments("").List(ctx, opts)
	if err != nil {
		return nil, err
	}
	rss, err := c.AppsV1().ReplicaSets("").List(ctx, opts)
	if err != nil {
		return nil, err
	}
	sts, err := c.AppsV1().StatefulSets("").List(ctx, opts)
	if err != nil {
		return nil, err
	}
	js, err := c.BatchV1().Jobs("").List(ctx, opts)
	if err != nil {
		return nil, err
	}
	pods, err := c.CoreV1().Pods("").List(ctx, opts)
	if err != nil {
		return nil, err
	}
	svcs, err := c.CoreV1().Services("").List(ctx, opts)
	if err != nil {
		return nil, err
	}
	eps, err := c.DiscoveryV1().EndpointSlices("").List(ctx, opts)
	if err != nil {
		return nil, err
	}
	in := func(ns string) bool { return strings.HasPrefix(ns, "cp-") }
	for _, d := range ds.Items {
		if in(d.Namespace) {
			cl.deployments = append(cl.deployments, d)
		}
	}
	for _, r := range rss.Items {
		if in(r.Namespace) {
			cl.replicaSets = append(cl.replicaSets, r)
		}
	}
	for _, s := range sts.Items {
		if in(s.Namespace) {
			cl.statefulSets = append(cl.statefulSets, s)
		}
	}
	for _, j := range js.Items {
		if !in(j.Namespace) {
			continue
		}
		v := jobView{ns: j.Namespace, name: j.Name, succeed: j.Status.Succeeded, completions: *j.Spec.Completions}
		for _, c := range j.Status.Conditions {
			if c.Type == "Complete" && c.Status == corev1.ConditionTrue {
				v.complete = true
			}
		}
		cl.jobs = append(cl.jobs, v)
	}
	for _, p := range pods.Items {
		if in(p.Namespace) {
			cl.pods = append(cl.pods, p)
		}
	}
	for _, s := range svcs.Items {
		if in(s.Namespace) {
			cl.services = append(cl.services, s)
		}
	}
	for _, e := range eps.Items {
		svc := e.Labels["kubernetes.io/service-name"]
		if !in(e.Namespace) || svc == "" {
			continue
		}
		for _, ep := range e.Endpoints {
			if ep.Conditions.Ready != nil && *ep.Conditions.Ready {
				cl.slices[e.Namespace+"/"+svc]++
			}
		}
	}
	return cl, nil
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// scheduled counts the pods bound to a node.
func (cl *cluster) scheduled() int {
	n := 0
	for i := range cl.pods {
		if cl.pods[i].Spec.NodeName != "" {
			n++
		}
	}
	return n
}

// pending says what is not converged yet, or "" when everything is: every
// expected namespace (and no deleted one) exists; every deployment and
// statefulset rolled out with all replicas ready; every job complete; the
// live pods are exactly the replicas asked for, all Running and ready; no
// ReplicaSet outlives its deployment; every service's endpoint slices hold
// one ready endpoint per ready pod it selects.
func (cl *cluster) pending(expect map[string]bool) string {
	var out []string
	add := func(f string, a ...any) {
		if len(out) < 6 {
			out = append(out, fmt.Sprintf(f, a...))
		}
	}
	for ns, want := range expect {
		if cl.namespaces[ns] != want {
			add("namespace %s exists=%v", ns, cl.namespaces[ns])
		}
	}
	want := 0
	deploys := map[string]bool{}
	for _, d := range cl.deployments {
		deploys[d.Namespace+"/"+d.Name] = true
		r := *d.Spec.Replicas
		want += int(r)
		s := d.Status
		if s.ObservedGeneration < d.Generation || s.UpdatedReplicas != r || s.Replicas != r || s.AvailableReplicas != r || s.ReadyReplicas != r {
			add("deployment %s/%s: gen %d/%d updated %d replicas %d available %d of %d", d.Namespace, d.Name, s.ObservedGeneration, d.Generation, s.UpdatedReplicas, s.Replicas, s.AvailableReplicas, r)
		}
	}
	for _, rs := range cl.replicaSets {
		for _, o := range rs.OwnerReferences {
			if o.Kind == "Deployment" && !deploys[rs.Namespace+"/"+o.Name] {
				add("replicaset %s/%s outlives its deployment", rs.Namespace, rs.Name)
			}
		}
	}
	for _, st := range cl.statefulSets {
		r := *st.Spec.Replicas
		want += int(r)
		s := st.Status
		if s.ObservedGeneration < st.Generation || s.Replicas != r || s.ReadyReplicas != r || s.CurrentRevision != s.UpdateRevision {
			add("statefulset %s/%s: gen %d/%d replicas %d ready %d of %d", st.Namespace, st.Name, s.ObservedGeneration, st.Generation, s.Replicas, s.ReadyReplicas, r)
		}
	}
	for _, j := range cl.jobs {
		if !j.complete || j.succeed != j.completions {
			add("job %s/%s: succeeded %d of %d", j.ns, j.name, j.succeed, j.completions)
		}
	}
	live, running := 0, 0
	readyByApp := map[string]int{}
	for i := range cl.pods {
		p := &cl.pods[i]
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		live++
		if p.Status.Phase == corev1.PodRunning && podReady(p) && p.DeletionTimestamp == nil {
			running++
			readyByApp[p.Namespace+"/"+p.Labels["app"]]++
		}
	}
	if live != want || running != want {
		add("pods: %d live, %d running and ready, %d wanted", live, running, want)
	}
	for _, s := range cl.services {
		key := s.Namespace + "/" + s.Name
		if cl.slices[key] != readyByApp[key] {
			add("service %s: %d ready endpoints, %d ready pods", key, cl.slices[key], readyByApp[key])
		}
	}
	return strings.Join(out, "; ")
}
