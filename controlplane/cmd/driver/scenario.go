package main

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The scenario's sizes: every workload of a kind has the same number of
// replicas, and each namespace holds about podsPerNamespace pods, split
// 70/15/15 between deployments, statefulsets and jobs.
const (
	deployReplicas   = 10
	stsReplicas      = 5
	jobCompletions   = 5
	podsPerNamespace = 250
	fakeNodeKey      = "kwok.x-k8s.io/node"
)

// plan is the set of workloads the driver creates, derived from the pod
// count alone, so both variants get exactly the same objects.
type plan struct {
	namespaces   []string
	deployments  map[string]int // per namespace
	statefulsets map[string]int
	jobs         map[string]int
	pods         int
}

func makePlan(pods int) plan {
	nss := max(2, (pods+podsPerNamespace-1)/podsPerNamespace)
	p := plan{deployments: map[string]int{}, statefulsets: map[string]int{}, jobs: map[string]int{}}
	left := pods
	for i := range nss {
		ns := fmt.Sprintf("cp-%03d", i)
		p.namespaces = append(p.namespaces, ns)
		budget := left / (nss - i)
		left -= budget
		d := max(1, budget*70/100/deployReplicas)
		s := max(1, budget*15/100/stsReplicas)
		j := max(1, (budget-d*deployReplicas-s*stsReplicas)/jobCompletions)
		p.deployments[ns], p.statefulsets[ns], p.jobs[ns] = d, s, j
		p.pods += d*deployReplicas + s*stsReplicas + j*jobCompletions
	}
	return p
}

// podTemplate returns one of four pod shapes, chosen by n: different
// labels, environment, resources, probes and volumes.
func podTemplate(app string, n int) corev1.PodTemplateSpec {
	cpu := []string{"10m", "50m", "100m", "25m"}[n%4]
	mem := []string{"16Mi", "64Mi", "128Mi", "32Mi"}[n%4]
	c := corev1.Container{
		Name:  "main",
		Image: fmt.Sprintf("registry.example/%s:1.%d", []string{"web", "api", "worker", "cache"}[n%4], n%3),
		Env: []corev1.EnvVar{
			{Name: "APP", Value: app},
			{Name: "SHAPE", Value: fmt.Sprint(n % 4)},
			{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(mem)},
		},
		Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
	}
	spec := corev1.PodSpec{TerminationGracePeriodSeconds: ptr(int64(1))}
	switch n % 4 {
	case 0:
		c.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromString("http")}}, PeriodSeconds: 10}
		c.VolumeMounts = []corev1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}
		spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	case 1:
		c.LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8080)}}, InitialDelaySeconds: 5}
		c.VolumeMounts = []corev1.VolumeMount{{Name: "config", MountPath: "/etc/app"}}
		spec.Volumes = []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"}}}}}
	case 2:
		c.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"/bin/check", "--quick"}}}}
		c.Args = []string{"--workers=4", "--queue=" + app}
	case 3:
		spec.Containers = append(spec.Containers, corev1.Container{Name: "sidecar", Image: "registry.example/proxy:2.0",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("5m")}}})
	}
	spec.Containers = append([]corev1.Container{c}, spec.Containers...)
	// Pods land on the fake nodes only, as KWOK's own examples arrange it.
	spec.Tolerations = []corev1.Toleration{{Key: fakeNodeKey, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	spec.NodeSelector = map[string]string{"type": "kwok"}
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{
			Labels:      map[string]string{"app": app, "tier": []string{"frontend", "backend", "batch", "data"}[n%4], "shape": fmt.Sprint(n % 4)},
			Annotations: map[string]string{"example.com/owner": "team-" + fmt.Sprint(n%7)},
		},
		Spec: spec,
	}
}

func ptr[T any](v T) *T { return &v }

func deployment(ns string, i int) *appsv1.Deployment {
	name := fmt.Sprintf("deploy-%03d", i)
	t := podTemplate(name, i)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"scenario": "cp"}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr(int32(deployReplicas)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: t,
		},
	}
}

func statefulSet(ns string, i int) *appsv1.StatefulSet {
	name := fmt.Sprintf("sts-%03d", i)
	t := podTemplate(name, i+1)
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"scenario": "cp"}},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            ptr(int32(stsReplicas)),
			ServiceName:         name,
			PodManagementPolicy: appsv1.ParallelPodManagement,
			Selector:            &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template:            t,
		},
	}
}

func job(ns string, i int) *batchv1.Job {
	name := fmt.Sprintf("job-%03d", i)
	t := podTemplate(name, i+2)
	t.Spec.RestartPolicy = corev1.RestartPolicyNever
	t.Spec.Containers[0].ReadinessProbe, t.Spec.Containers[0].LivenessProbe = nil, nil
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"scenario": "cp"}},
		Spec: batchv1.JobSpec{
			Parallelism:  ptr(int32(jobCompletions)),
			Completions:  ptr(int32(jobCompletions)),
			BackoffLimit: ptr(int32(6)),
			Template:     t,
		},
	}
}

func service(ns, app string, headless bool) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: app, Labels: map[string]string{"scenario": "cp"}},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": app},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}},
		},
	}
	if headless {
		s.Spec.ClusterIP = corev1.ClusterIPNone
	}
	return s
}

func configMap(ns string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app-config"},
		Data:       map[string]string{"app.yaml": "workers: 4\nlog: info\n"},
	}
}

// fakeNode is a node for KWOK to manage (its annotation and taint).
func fakeNode(i int) *corev1.Node {
	name := fmt.Sprintf("kwok-node-%04d", i)
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("32"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{fakeNodeKey: "fake", "node.alpha.kubernetes.io/ttl": "0"},
			Labels: map[string]string{"type": "kwok", "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
				"kubernetes.io/arch": "amd64", "topology.kubernetes.io/zone": fmt.Sprintf("zone-%d", i%3)},
		},
		Spec:   corev1.NodeSpec{Taints: []corev1.Taint{{Key: fakeNodeKey, Value: "fake", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
	}
}
