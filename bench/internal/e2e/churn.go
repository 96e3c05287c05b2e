package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"
)

// What the churn phase writes. Its metadata writer is a controller of its
// own (ChurnManager); its status writer is the kubelet of the pods'
// creation (StatusManager).
const (
	ChurnManager = "e2e-churn-controller"
	// ChurnLabel flips between "on" and "off" at every update, as a
	// traffic-shifting controller would flip a pod's label.
	ChurnLabel = "e2e.kcache.io/traffic"
	// ChurnAnnotation holds the time of the update (RFC 3339, nanoseconds).
	ChurnAnnotation = "e2e.kcache.io/churned-at"
	// unreadyReason and unreadyMessage are what a kubelet writes into the
	// Ready condition of a pod whose container stopped being ready.
	unreadyReason  = "ContainersNotReady"
	unreadyMessage = "containers with unready status: [app]"
)

// Churn is the update stream of the churn phase: Rate pod updates per
// second for Duration, spread over Workers writers. Each update is two
// writes, so two watch events: a server-side apply of the pod's labels
// and annotations (ChurnLabel flipped, ChurnAnnotation set to now), then
// an update of its status subresource that flips the Ready condition
// (status, reason, message) and sets its lastTransitionTime to now. Pods
// 0..Pods-1 of Layout are taken in an order drawn from Seed, every pod
// once before any pod twice; the same Churn makes the same stream of pods
// and values but for the timestamps.
type Churn struct {
	Layout   Layout
	Pods     int
	Rate     float64 // pod updates per second
	Duration time.Duration
	Seed     uint64
	Workers  int
}

// ChurnStats is what a Churn run did.
type ChurnStats struct {
	Updates int // pod updates made
	// Events is the number of writes made: every one changes its pod (a
	// flip from the state the previous write left, and only the churn
	// writes the pods), so each is one watch event every informer on the
	// pods receives.
	Events int64
	// Seconds is the wall time from the first update's schedule to the
	// end of the last one; above Duration when the server fell behind.
	Seconds float64
}

// Updates is the number of pod updates the stream makes.
func (c Churn) Updates() int { return int(c.Rate * c.Duration.Seconds()) }

// Order is the pod index of each update, in order.
func (c Churn) Order() []int {
	n := c.Updates()
	if n <= 0 || c.Pods <= 0 {
		return nil
	}
	perm := rand.New(rand.NewPCG(c.Seed, c.Seed^0x9E3779B97F4A7C15)).Perm(c.Pods)
	order := make([]int, n)
	for k := range order {
		order[k] = perm[k%len(perm)]
	}
	return order
}

// churnPod is what the writers know of one pod. Its update holds mu for
// the whole update, so that a pod is never written by two writers at once
// and every write starts from the state the previous one left.
type churnPod struct {
	mu      sync.Mutex
	traffic string // ChurnLabel's value after the last write
}

// Run makes the stream and returns what it did. The first failed write
// stops it.
func (c Churn) Run(ctx context.Context, cs kubernetes.Interface) (ChurnStats, error) {
	order := c.Order()
	if len(order) == 0 {
		return ChurnStats{}, fmt.Errorf("churn: no updates to make (%d pods, %g/s for %s)", c.Pods, c.Rate, c.Duration)
	}
	pods, err := c.current(ctx, cs)
	if err != nil {
		return ChurnStats{}, err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var (
		next, events atomic.Int64
		wg           sync.WaitGroup
	)
	start := time.Now()
	for range max(c.Workers, 1) {
		wg.Go(func() {
			for ctx.Err() == nil {
				k := int(next.Add(1)) - 1
				if k >= len(order) {
					return
				}
				if err := sleepUntil(ctx, start.Add(time.Duration(float64(k)/c.Rate*float64(time.Second)))); err != nil {
					return
				}
				i := order[k]
				n, err := c.update(ctx, cs, i, &pods[i], time.Now())
				events.Add(n)
				if err != nil {
					cancel(err)
					return
				}
			}
		})
	}
	wg.Wait()
	stats := ChurnStats{Updates: len(order), Events: events.Load(), Seconds: time.Since(start).Seconds()}
	if err := context.Cause(ctx); err != nil {
		return stats, err
	}
	return stats, nil
}

// sleepUntil waits for t or the end of ctx.
func sleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// current reads ChurnLabel of pods 0..Pods-1.
func (c Churn) current(ctx context.Context, cs kubernetes.Interface) ([]churnPod, error) {
	index := make(map[string]int, c.Pods)
	for i := range c.Pods {
		index[c.Layout.PodNamespace(i)+"/"+c.Layout.PodName(i)] = i
	}
	pods := make([]churnPod, c.Pods)
	found := 0
	for j := range c.Layout.Namespaces {
		ns := NamespaceName(j)
		opts := metav1.ListOptions{Limit: 5000}
		for {
			list, err := cs.CoreV1().Pods(ns).List(ctx, opts)
			if err != nil {
				return nil, fmt.Errorf("churn: list pods in %s: %w", ns, err)
			}
			for k := range list.Items {
				p := &list.Items[k]
				if i, ok := index[ns+"/"+p.Name]; ok {
					pods[i].traffic = p.Labels[ChurnLabel]
					found++
				}
			}
			if list.Continue == "" {
				break
			}
			opts.Continue = list.Continue
		}
	}
	if found != c.Pods {
		return nil, fmt.Errorf("churn: found %d of the %d pods to update", found, c.Pods)
	}
	return pods, nil
}

// update makes pod i's update at time at and returns how many of its two
// writes succeeded.
func (c Churn) update(ctx context.Context, cs kubernetes.Interface, i int, p *churnPod, at time.Time) (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	ns, name := c.Layout.PodNamespace(i), c.Layout.PodName(i)
	pods := cs.CoreV1().Pods(ns)
	traffic := flipTraffic(p.traffic)
	got, err := pods.Apply(ctx, ChurnApply(ns, name, traffic, at), metav1.ApplyOptions{FieldManager: ChurnManager, Force: true})
	if err != nil {
		return 0, fmt.Errorf("churn: apply pod %s/%s: %w", ns, name, err)
	}
	p.traffic = traffic
	FlipReady(&got.Status, at) // from the pod as the apply left it
	if _, err := pods.UpdateStatus(ctx, got, metav1.UpdateOptions{FieldManager: StatusManager}); err != nil {
		return 1, fmt.Errorf("churn: update status of pod %s/%s: %w", ns, name, err)
	}
	return 2, nil
}

func flipTraffic(v string) string {
	if v == "on" {
		return "off"
	}
	return "on"
}

// ChurnApply is the churn's server-side apply of pod namespace/name: its
// ChurnLabel set to traffic and its ChurnAnnotation to at.
func ChurnApply(namespace, name, traffic string, at time.Time) *corev1ac.PodApplyConfiguration {
	return corev1ac.Pod(name, namespace).
		WithLabels(map[string]string{ChurnLabel: traffic}).
		WithAnnotations(map[string]string{ChurnAnnotation: at.UTC().Format(time.RFC3339Nano)})
}

// FlipReady flips the Ready condition of st, as a kubelet does when a
// container stops or starts being ready: True becomes False with a reason
// and message, anything else True without them; its lastTransitionTime
// becomes at. A status without the condition gets one, False.
func FlipReady(st *v1.PodStatus, at time.Time) {
	k := -1
	for j := range st.Conditions {
		if st.Conditions[j].Type == v1.PodReady {
			k = j
		}
	}
	if k < 0 {
		st.Conditions = append(st.Conditions, v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionTrue})
		k = len(st.Conditions) - 1
	}
	c := &st.Conditions[k]
	if c.Status == v1.ConditionTrue {
		c.Status, c.Reason, c.Message = v1.ConditionFalse, unreadyReason, unreadyMessage
	} else {
		c.Status, c.Reason, c.Message = v1.ConditionTrue, "", ""
	}
	c.LastTransitionTime = metav1.NewTime(at)
}
