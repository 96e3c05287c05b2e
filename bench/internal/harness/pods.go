package harness

import (
	"strconv"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Index names shared by every workload. NamespaceIndex must equal the
// "namespace" index name both cache packages look for in ListAllByNamespace.
const (
	NamespaceIndex = "namespace"
	NodeIndex      = "node"
	AppIndex       = "app"
)

// tiers gives each app one of four tier labels; workloads select tier=web.
var tiers = [...]string{"web", "api", "db", "cache"}

// SelectedTier is the tier label value the lister workloads select on.
const SelectedTier = "web"

// Layout says how generated pods spread over namespaces, nodes and apps.
// Pod i belongs to app i/Replicas; apps go round-robin over namespaces and
// pods are scattered over nodes, so every index has many small buckets.
type Layout struct {
	Namespaces int // number of namespaces, >= 1
	Nodes      int // number of nodes, >= 1
	Replicas   int // pods per app, >= 1
}

// ClusterLayout is the 100k-pod cluster of the indexer and memory workloads:
// 100 namespaces of 1000 pods, 1000 nodes of 100 pods, apps of 10 replicas.
var ClusterLayout = Layout{Namespaces: 100, Nodes: 1000, Replicas: 10}

// BigNamespaceLayout puts every pod in one namespace, as the informer and
// write-rate workloads need.
var BigNamespaceLayout = Layout{Namespaces: 1, Nodes: 100, Replicas: 10}

// Namespace is the namespace of pod i.
func (l Layout) Namespace(i int) string { return "ns-" + strconv.Itoa(l.app(i)%l.Namespaces) }

// Node is the node pod i runs on when it has not been moved.
func (l Layout) Node(i int) string { return "node-" + strconv.Itoa((i*7919)%l.Nodes) }

// MovedNode is the node pod i runs on after an update that moves it.
func (l Layout) MovedNode(i int) string { return "node-" + strconv.Itoa((i*7919+1)%l.Nodes) }

// App is the app label of pod i.
func (l Layout) App(i int) string { return "app-" + strconv.Itoa(l.app(i)) }

func (l Layout) app(i int) int { return i / l.Replicas }

// Key is the namespace/name key of pod i.
func (l Layout) Key(i int) string { return l.Namespace(i) + "/" + l.name(i) }

func (l Layout) name(i int) string {
	return l.App(i) + "-" + templateHash(l.app(i)) + "-" + strconv.FormatInt(int64(i)*2654435761%60466176, 36)
}

func templateHash(app int) string { return strconv.FormatInt(int64(app)*40503%1679616+46656, 36) }

// Pod builds a fresh pod i at resourceVersion rv, as a decoder would: every
// string, map and slice is newly allocated. rev changes the pod's content
// (a label, an annotation and a container image) without changing its
// identity, the way a rollout or a status change would.
func (l Layout) Pod(i int, rv uint64, rev int) *v1.Pod {
	p := new(v1.Pod)
	l.FillPod(p, i, rv, rev)
	return p
}

// FillPod writes pod i into dst; see Pod.
func (l Layout) FillPod(dst *v1.Pod, i int, rv uint64, rev int) {
	app := l.App(i)
	hash := templateHash(l.app(i))
	revision := "v" + strconv.Itoa(rev)
	created := metav1.Unix(1700000000+int64(i), 0)
	*dst = v1.Pod{
		TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{
			Name:              l.name(i),
			Namespace:         l.Namespace(i),
			UID:               types.UID(uid(i)),
			ResourceVersion:   strconv.FormatUint(rv, 10),
			CreationTimestamp: created,
			GenerateName:      app + "-" + hash + "-",
			Labels: map[string]string{
				"app":               app,
				"tier":              tiers[l.app(i)%len(tiers)],
				"pod-template-hash": hash,
				"revision":          revision,
			},
			Annotations: map[string]string{
				"kubectl.kubernetes.io/restartedAt": "2025-01-01T00:00:00Z",
				"bench.kcache.dev/revision":         revision,
			},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion:         "apps/v1",
				Kind:               "ReplicaSet",
				Name:               app + "-" + hash,
				UID:                types.UID(uid(1<<30 + l.app(i))),
				Controller:         ptrTo(true),
				BlockOwnerDeletion: ptrTo(true),
			}},
		},
		Spec: v1.PodSpec{
			NodeName:           l.Node(i),
			ServiceAccountName: "default",
			RestartPolicy:      v1.RestartPolicyAlways,
			DNSPolicy:          v1.DNSClusterFirst,
			SchedulerName:      "default-scheduler",
			Volumes: []v1.Volume{{
				Name: "kube-api-access",
				VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{
					Sources: []v1.VolumeProjection{{ServiceAccountToken: &v1.ServiceAccountTokenProjection{
						Path: "token", ExpirationSeconds: ptrTo(int64(3607)),
					}}},
				}},
			}},
			Containers: []v1.Container{
				container(app, "registry.example.com/"+app+":"+revision, 8080),
				container("sidecar", "registry.example.com/proxy:1.27", 15001),
			},
		},
		Status: v1.PodStatus{
			Phase:     v1.PodRunning,
			HostIP:    "10.0." + strconv.Itoa(i%250) + ".1",
			PodIP:     "10.1." + strconv.Itoa(i/250%250) + "." + strconv.Itoa(i%250),
			StartTime: &created,
			QOSClass:  v1.PodQOSBurstable,
			Conditions: []v1.PodCondition{
				{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: created},
				{Type: v1.ContainersReady, Status: v1.ConditionTrue, LastTransitionTime: created},
				{Type: v1.PodScheduled, Status: v1.ConditionTrue, LastTransitionTime: created},
			},
			ContainerStatuses: []v1.ContainerStatus{
				containerStatus(app, i), containerStatus("sidecar", i),
			},
		},
	}
}

func container(name, image string, port int32) v1.Container {
	return v1.Container{
		Name:  name,
		Image: image,
		Ports: []v1.ContainerPort{{Name: "http", ContainerPort: port, Protocol: v1.ProtocolTCP}},
		Env: []v1.EnvVar{
			{Name: "LOG_LEVEL", Value: "info"},
			{Name: "POD_NAME", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		},
		Resources: v1.ResourceRequirements{
			Requests: v1.ResourceList{
				v1.ResourceCPU:    resource.MustParse("100m"),
				v1.ResourceMemory: resource.MustParse("128Mi"),
			},
			Limits: v1.ResourceList{v1.ResourceMemory: resource.MustParse("256Mi")},
		},
		VolumeMounts: []v1.VolumeMount{{
			Name: "kube-api-access", ReadOnly: true, MountPath: "/var/run/secrets/kubernetes.io/serviceaccount",
		}},
		TerminationMessagePath:   "/dev/termination-log",
		TerminationMessagePolicy: v1.TerminationMessageReadFile,
		ImagePullPolicy:          v1.PullIfNotPresent,
	}
}

func containerStatus(name string, i int) v1.ContainerStatus {
	return v1.ContainerStatus{
		Name:        name,
		Ready:       true,
		Started:     ptrTo(true),
		Image:       "registry.example.com/" + name,
		ImageID:     "registry.example.com/" + name + "@sha256:" + strconv.FormatInt(int64(i)*7340033+1, 16),
		ContainerID: "containerd://" + strconv.FormatInt(int64(i)*104729+int64(len(name)), 16),
		State:       v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.Unix(1700000100+int64(i), 0)}},
	}
}

func uid(i int) string {
	return "6f1c0de2-0000-4000-8000-" + strconv.FormatInt(int64(i)+1<<40, 16)
}

func ptrTo[T any](v T) *T { return &v }

// Modified returns a copy of p at resourceVersion rv that shares everything
// but the top-level struct with p (callers treat pods as read-only). When
// node is not empty the copy runs on that node instead.
func Modified(p *v1.Pod, rv uint64, node string) *v1.Pod {
	q := *p
	q.ResourceVersion = strconv.FormatUint(rv, 10)
	if node != "" {
		q.Spec.NodeName = node
	}
	return &q
}
