// Package e2e is the server side of the end-to-end memory benchmark: it
// fills a real API server with realistic pods and triggers the relist.
// The informer under measurement lives in libclientgo / libkcache.
package e2e

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Layout spreads the pods over namespaces and ReplicaSets the way a
// cluster's controllers would leave them.
type Layout struct {
	Namespaces int // pods are spread over this many namespaces
	PerRS      int // pods per ReplicaSet
	Nodes      int // pods are spread over this many nodes
	// ApplierOwnsToken makes the applier write each pod's service account
	// token volume (and its mounts) itself, so that its managedFields entry
	// names the pod's own volume and no two pods' entries are equal. In a
	// cluster, and by default here, the ServiceAccount admission plugin adds
	// that volume after the API server has recorded the creator's fields
	// (the create handler updates managedFields before mutating admission,
	// kubernetes/kubernetes#87671), so no manager owns it and the entries of
	// one ReplicaSet's pods are equal. This is the harsher workload.
	ApplierOwnsToken bool
}

// DefaultLayout: 10 namespaces, ReplicaSets of 200 pods, 50 nodes, the
// token volumes added by admission.
var DefaultLayout = Layout{Namespaces: 10, PerRS: 200, Nodes: 50}

// TokenVolumePrefix starts the name of the token volume the ServiceAccount
// admission plugin adds to a pod (then 5 random characters).
const TokenVolumePrefix = "kube-api-access-"

// TokenOwner names who writes the token volumes of l's pods: "applier" or
// "admission". The e2e namespaces record it, and the report prints it.
func (l Layout) TokenOwner() string {
	if l.ApplierOwnsToken {
		return "applier"
	}
	return "admission"
}

// NamespaceName is the name of namespace j.
func NamespaceName(j int) string { return fmt.Sprintf("e2e-%02d", j) }

// rs describes the ReplicaSet pod i belongs to.
type rs struct {
	index     int
	namespace string
	app       string // the Deployment's name
	hash      string // pod-template-hash
	uid       types.UID
	tier      string
	sidecar   bool // a third container
}

func (l Layout) replicaSet(i int) rs {
	r := i / max(l.PerRS, 1)
	tiers := []string{"web", "api", "worker", "batch"}
	return rs{
		index:     r,
		namespace: NamespaceName(r % max(l.Namespaces, 1)),
		app:       fmt.Sprintf("svc-%03d", r),
		hash:      fmt.Sprintf("%010x", uint64(r)*2654435761%0xffffffffff)[:10],
		uid:       types.UID(fmt.Sprintf("0a1b2c3d-%04x-4e5f-8a9b-%012x", r, r*7919)),
		tier:      tiers[r%len(tiers)],
		sidecar:   r%2 == 0,
	}
}

// suffix is the 5-character name suffix of pod i (as a ReplicaSet
// controller's generateName gives).
func suffix(i int) string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	x := uint64(i)*0x9E3779B97F4A7C15 + 12345
	b := make([]byte, 5)
	for k := range b {
		b[k] = alphabet[x%uint64(len(alphabet))]
		x /= uint64(len(alphabet))
	}
	return string(b)
}

// PodName and PodNamespace name pod i.
func (l Layout) PodName(i int) string {
	r := l.replicaSet(i)
	return r.app + "-" + r.hash + "-" + suffix(i)
}

// PodNamespace is the namespace of pod i.
func (l Layout) PodNamespace(i int) string { return l.replicaSet(i).namespace }

// ApplyPod is what a ReplicaSet controller would write for pod i: metadata
// and its template's spec, sent as a server-side apply; with
// ApplierOwnsToken, also the token volume admission would add.
func (l Layout) ApplyPod(i int) *v1.Pod {
	r := l.replicaSet(i)
	name := l.PodName(i)
	tokenVol := ""
	if l.ApplierOwnsToken {
		tokenVol = TokenVolumePrefix + suffix(i*31+7)
	}
	yes := true
	labels := map[string]string{
		"app.kubernetes.io/name":    r.app,
		"app.kubernetes.io/part-of": "shop",
		"app.kubernetes.io/version": "1.4." + strconv.Itoa(r.index%7),
		"pod-template-hash":         r.hash,
		"tier":                      r.tier,
	}
	containers := []v1.Container{
		l.container(r, "app", "registry.example.com/shop/"+r.app+":1.4."+strconv.Itoa(r.index%7), 8080, tokenVol),
		l.container(r, "proxy", "registry.example.com/mesh/proxy:2.11.0", 15090, tokenVol),
	}
	if r.sidecar {
		containers = append(containers, l.container(r, "log-shipper", "registry.example.com/obs/fluent-bit:3.2.1", 2020, tokenVol))
	}
	pod := &v1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name:         name,
			Namespace:    r.namespace,
			GenerateName: r.app + "-" + r.hash + "-",
			Labels:       labels,
			Annotations: map[string]string{
				"kubectl.kubernetes.io/restartedAt": "2026-11-20T10:00:00Z",
				"prometheus.io/scrape":              "true",
				"prometheus.io/port":                "15090",
			},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "ReplicaSet", Name: r.app + "-" + r.hash,
				UID: r.uid, Controller: &yes, BlockOwnerDeletion: &yes,
			}},
		},
		Spec: v1.PodSpec{
			Containers:         containers,
			NodeName:           fmt.Sprintf("node-%03d", i%max(l.Nodes, 1)),
			ServiceAccountName: "default",
			Volumes: []v1.Volume{
				{Name: "config", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
					LocalObjectReference: v1.LocalObjectReference{Name: r.app + "-config"}}}},
				{Name: "cache", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
			},
		},
	}
	if tokenVol != "" {
		pod.Spec.Volumes = append(pod.Spec.Volumes, tokenVolume(tokenVol))
	}
	return pod
}

// tokenVolume is the projected service account token volume the
// ServiceAccount admission plugin adds, named name.
func tokenVolume(name string) v1.Volume {
	expiry := int64(3607)
	return v1.Volume{Name: name, VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
		{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: &expiry}},
		{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "kube-root-ca.crt"},
			Items: []v1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
		{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{{Path: "namespace",
			FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
	}}}}
}

// HasTokenVolume reports whether pod has a volume named as the
// ServiceAccount admission plugin names its token volume.
func HasTokenVolume(pod *v1.Pod) bool {
	for _, v := range pod.Spec.Volumes {
		if strings.HasPrefix(v.Name, TokenVolumePrefix) && v.Projected != nil {
			return true
		}
	}
	return false
}

// container is one container of r's template, mounting the token volume
// tokenVol unless it is "".
func (l Layout) container(r rs, name, image string, port int32, tokenVol string) v1.Container {
	probe := func(path string, delay int32) *v1.Probe {
		return &v1.Probe{
			ProbeHandler:        v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: path, Port: intstr.FromInt32(port)}},
			InitialDelaySeconds: delay, PeriodSeconds: 10, TimeoutSeconds: 1, FailureThreshold: 3, SuccessThreshold: 1,
		}
	}
	c := v1.Container{
		Name:  name,
		Image: image,
		Args:  []string{"--port=" + strconv.Itoa(int(port)), "--log-level=info"},
		Ports: []v1.ContainerPort{{Name: "http", ContainerPort: port, Protocol: v1.ProtocolTCP}},
		Env: []v1.EnvVar{
			{Name: "APP_NAME", Value: r.app},
			{Name: "APP_TIER", Value: r.tier},
			{Name: "LOG_FORMAT", Value: "json"},
			{Name: "GOMAXPROCS", Value: "2"},
			{Name: "OTEL_EXPORTER_OTLP_ENDPOINT", Value: "http://otel-collector.observability:4317"},
			{Name: "POD_NAME", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}},
			{Name: "POD_IP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "status.podIP"}}},
			{Name: "NODE_NAME", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "spec.nodeName"}}},
		},
		Resources: v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("128Mi")},
			Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m"), v1.ResourceMemory: resource.MustParse("512Mi")},
		},
		VolumeMounts: []v1.VolumeMount{
			{Name: "config", MountPath: "/etc/" + r.app, ReadOnly: true},
			{Name: "cache", MountPath: "/var/cache/" + name},
		},
		ReadinessProbe:  probe("/readyz", 5),
		LivenessProbe:   probe("/livez", 15),
		ImagePullPolicy: v1.PullIfNotPresent,
	}
	if tokenVol != "" {
		c.VolumeMounts = append(c.VolumeMounts, v1.VolumeMount{Name: tokenVol, MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true})
	}
	return c
}

// Status is what a kubelet would report for pod i once it runs, written
// with an update of the status subresource.
func (l Layout) Status(i int, pod *v1.Pod) v1.PodStatus {
	started := metav1.NewTime(time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC).Add(time.Duration(i%3600) * time.Second))
	ready := metav1.NewTime(started.Add(20 * time.Second))
	podIP := fmt.Sprintf("10.%d.%d.%d", 64+i/65536%64, i/256%256, i%256)
	hostIP := fmt.Sprintf("192.168.%d.%d", i%max(l.Nodes, 1)/250, 10+i%max(l.Nodes, 1)%240)
	st := v1.PodStatus{
		Phase: v1.PodRunning,
		Conditions: []v1.PodCondition{
			{Type: "PodReadyToStartContainers", Status: v1.ConditionTrue, LastTransitionTime: started},
			{Type: v1.PodInitialized, Status: v1.ConditionTrue, LastTransitionTime: started},
			{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: ready},
			{Type: v1.ContainersReady, Status: v1.ConditionTrue, LastTransitionTime: ready},
			{Type: v1.PodScheduled, Status: v1.ConditionTrue, LastTransitionTime: started},
		},
		HostIP:    hostIP,
		HostIPs:   []v1.HostIP{{IP: hostIP}},
		PodIP:     podIP,
		PodIPs:    []v1.PodIP{{IP: podIP}},
		StartTime: &started,
		QOSClass:  v1.PodQOSBurstable,
	}
	yes := true
	for k, c := range pod.Spec.Containers {
		st.ContainerStatuses = append(st.ContainerStatuses, v1.ContainerStatus{
			Name:         c.Name,
			Ready:        true,
			Started:      &yes,
			Image:        c.Image,
			ImageID:      c.Image + "@sha256:" + fmt.Sprintf("%064x", len(c.Image)*7919+k),
			ContainerID:  "containerd://" + fmt.Sprintf("%032x%032x", uint64(i)*0x9E3779B97F4A7C15, uint64(i*3+k)),
			State:        v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: started}},
			RestartCount: 0,
		})
	}
	return st
}
