package dedup

import (
	"strconv"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// churnPod builds pod i of a ReplicaSet of 200 as a kubelet and a
// controller leave it, at step step of the churn make bench-e2e drives
// (the bench module's e2e churn): each step flips a label, stamps an
// annotation and its manager's time, and flips the Ready condition. Three
// managers own fields; the pod's own parts are its name, UID, IPs and
// container IDs. Everything is allocated afresh, as a decoder does.
func churnPod(i, step int) *v1.Pod {
	rs := "web-" + strconv.Itoa(i/200)
	created := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	stamped := metav1.NewTime(created.Add(time.Duration(step) * time.Second))
	traffic, ready := "on", v1.ConditionTrue
	if step%2 == 1 {
		traffic, ready = "off", v1.ConditionFalse
	}
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: rs + "-" + strconv.Itoa(i), Namespace: "ns-" + strconv.Itoa(i/200%3),
			UID:             types.UID("uid-" + strconv.Itoa(i)),
			ResourceVersion: strconv.Itoa(1000 + 2*step + i),
			Labels:          map[string]string{"app": rs, "tier": "web", "traffic": traffic},
			Annotations:     map[string]string{"churned-at": stamped.String()},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs, UID: "rs-uid"}},
			ManagedFields: []metav1.ManagedFieldsEntry{
				churnManager("applier", &created, `{"f:metadata":{"f:labels":{"f:app":{},"f:tier":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{".":{},"f:env":{},"f:image":{},"f:name":{},"f:resources":{}}}}}`),
				churnManager("churn", &stamped, `{"f:metadata":{"f:annotations":{"f:churned-at":{}},"f:labels":{"f:traffic":{}}}}`),
				churnManager("kubelet", &stamped, `{"f:status":{"f:conditions":{"k:{\"type\":\"Ready\"}":{"f:status":{}}},"f:podIP":{}}}`),
			},
		},
		Spec: v1.PodSpec{
			NodeName: "node-" + strconv.Itoa(i%50),
			Containers: []v1.Container{{
				Name: "web", Image: "registry/" + rs + ":1.0",
				Env: []v1.EnvVar{{Name: "MODE", Value: "prod"}, {Name: "POD", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
				Resources: v1.ResourceRequirements{Requests: v1.ResourceList{
					v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("64Mi")}},
				ReadinessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/ready"}}, PeriodSeconds: 5},
				VolumeMounts:   []v1.VolumeMount{{Name: "token", MountPath: "/var/run/secrets"}},
			}},
			Volumes: []v1.Volume{{Name: "token", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{
				Sources: []v1.VolumeProjection{{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token"}}}}}}},
		},
		Status: v1.PodStatus{
			Phase: v1.PodRunning, PodIP: "10.0." + strconv.Itoa(i/250) + "." + strconv.Itoa(i%250), StartTime: &created,
			Conditions: []v1.PodCondition{
				{Type: v1.PodScheduled, Status: v1.ConditionTrue, LastTransitionTime: created},
				{Type: v1.PodReady, Status: ready, Reason: "Churn" + traffic, Message: "flipped at " + stamped.String(), LastTransitionTime: stamped},
			},
			ContainerStatuses: []v1.ContainerStatus{{Name: "web", Ready: true, ContainerID: "cri://" + strconv.Itoa(i),
				State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: created}}}},
		},
	}
}

// churnManager is a managedFields entry of manager, written at t.
func churnManager(manager string, t *metav1.Time, fields string) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationApply, APIVersion: "v1",
		Time: t, FieldsType: "FieldsV1", FieldsV1: fieldsV1(fields)}
}

// BenchmarkDedupTwinWalk times the walk of one update beside its twin, the
// object it replaces (ShareUpdate, update.go): what a compaction costs per
// updated object, and what sharing on arrival costs per watch event. Each
// op decodes the update from protobuf first, as a watch event does; the
// "decode" sub-benchmark does only that, so the walk's cost is the
// difference. The pods and updates are churnPod's: a label, an
// annotation, a manager's time and a condition change, the rest is equal.
func BenchmarkDedupTwinWalk(b *testing.B) {
	const pods = 2000
	s := New(Options{})
	twins := make([]interface{}, pods)
	wire := make([][]byte, pods)
	for i := range pods {
		twins[i] = s.Share(churnPod(i, 0))
		data, err := churnPod(i, 1).Marshal()
		if err != nil {
			b.Fatal(err)
		}
		wire[i] = data
	}
	decode := func(k int) *v1.Pod {
		p := &v1.Pod{}
		if err := p.Unmarshal(wire[k]); err != nil {
			b.Fatal(err)
		}
		return p
	}
	b.Run("decode", func(b *testing.B) {
		i := 0
		for b.Loop() {
			decode(i % pods)
			i++
		}
	})
	b.Run("decode+share", func(b *testing.B) {
		i := 0
		for b.Loop() {
			k := i % pods
			p := decode(k)
			if s.Share(p) == interface{}(p) {
				b.Fatal("nothing shared")
			}
			i++
		}
	})
	b.Run("decode+walk", func(b *testing.B) {
		i := 0
		for b.Loop() {
			k := i % pods
			p := decode(k)
			if s.ShareUpdate(p, twins[k]) == interface{}(p) {
				b.Fatal("nothing shared")
			}
			i++
		}
	})
}
