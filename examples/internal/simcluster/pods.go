package simcluster

import (
	"fmt"
	"math/rand/v2"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Apps are the values of the "app" label generated Pods get.
var Apps = []string{"web", "api", "worker", "cache", "batch"}

// Namespaces are the namespaces generated Pods live in.
var Namespaces = []string{"default", "shop", "jobs"}

// AppLabel is the label key naming a Pod's application.
const AppLabel = "app"

// NewPod returns a Pending Pod namespace/name labelled app=app. Its
// resource version and UID are set when a Cluster stores it.
func NewPod(namespace, name, app string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: namespace,
			Name:      name,
			Labels:    map[string]string{AppLabel: app},
		},
		Spec:   v1.PodSpec{Containers: []v1.Container{{Name: app, Image: "example.com/" + app + ":1"}}},
		Status: v1.PodStatus{Phase: v1.PodPending},
	}
}

// WithPhase returns a copy of pod in phase.
func WithPhase(pod *v1.Pod, phase v1.PodPhase) *v1.Pod {
	out := pod.DeepCopy()
	out.Status.Phase = phase
	return out
}

// Generator makes Pods from a seed: the same seed gives the same Pods in
// the same order. It is not safe for concurrent use.
type Generator struct {
	rng *rand.Rand
	seq int
}

// NewGenerator returns a Generator seeded with seed.
func NewGenerator(seed uint64) *Generator {
	return &Generator{rng: rand.New(rand.NewPCG(seed, seed^0x6b63616368650000))}
}

// Pod returns a new Pending Pod with a random app and namespace and a
// name unique to this Generator, such as "web-00042".
func (g *Generator) Pod() *v1.Pod {
	app := Apps[g.rng.IntN(len(Apps))]
	ns := Namespaces[g.rng.IntN(len(Namespaces))]
	g.seq++
	return NewPod(ns, fmt.Sprintf("%s-%05d", app, g.seq), app)
}

// InitialPods returns n Pods for a cluster that has been running for a
// while: about one in ten is still Pending, the others are Running.
func (g *Generator) InitialPods(n int) []*v1.Pod {
	pods := make([]*v1.Pod, n)
	for i := range pods {
		pods[i] = g.Pod()
		if g.rng.IntN(10) != 0 {
			pods[i].Status.Phase = v1.PodRunning
		}
	}
	return pods
}

// NextPhase returns the phase that follows phase in a Pod's life:
// Pending → Running → Succeeded (mostly) or Failed. It returns "" for a
// Pod that has finished and is next deleted.
func (g *Generator) NextPhase(phase v1.PodPhase) v1.PodPhase {
	switch phase {
	case v1.PodPending:
		return v1.PodRunning
	case v1.PodRunning:
		if g.rng.IntN(4) == 0 {
			return v1.PodFailed
		}
		return v1.PodSucceeded
	}
	return ""
}

// Populate stores pods in c, failing on the first error.
func Populate(c *Cluster, pods []*v1.Pod) error {
	for _, p := range pods {
		if _, err := c.Create(p); err != nil {
			return fmt.Errorf("populating the cluster: %w", err)
		}
	}
	return nil
}
