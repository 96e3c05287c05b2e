package e2e

import (
	"context"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestChurnOrderTakesEveryPodOnceBeforeAnyTwice(t *testing.T) {
	c := Churn{Pods: 7, Rate: 10, Duration: 1500 * time.Millisecond, Seed: 3}
	order := c.Order()
	if len(order) != 15 {
		t.Fatalf("%d updates, want 15 (10/s for 1.5 s)", len(order))
	}
	first := slices.Sorted(slices.Values(order[:7]))
	if want := []int{0, 1, 2, 3, 4, 5, 6}; !slices.Equal(first, want) {
		t.Errorf("first pass %v, want every pod once", first)
	}
	if !slices.Equal(order[7:14], order[:7]) || order[14] != order[0] {
		t.Errorf("second pass %v does not repeat the first %v", order[7:], order[:7])
	}
	if again := c.Order(); !slices.Equal(again, order) {
		t.Errorf("same seed, another order: %v vs %v", again, order)
	}
	c.Seed = 4
	if other := c.Order(); slices.Equal(other, order) {
		t.Errorf("seeds 3 and 4 give the same order %v", order)
	}
}

func TestFlipReady(t *testing.T) {
	at := time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)
	old := metav1.NewTime(at.Add(-time.Hour))
	scheduled := v1.PodCondition{Type: v1.PodScheduled, Status: v1.ConditionTrue, LastTransitionTime: old}
	tests := map[string]struct {
		in, want []v1.PodCondition
	}{
		"ready becomes unready": {
			in: []v1.PodCondition{scheduled, {Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: old}},
			want: []v1.PodCondition{scheduled, {Type: v1.PodReady, Status: v1.ConditionFalse, Reason: unreadyReason,
				Message: unreadyMessage, LastTransitionTime: metav1.NewTime(at)}},
		},
		"unready becomes ready, without reason": {
			in: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionFalse, Reason: unreadyReason,
				Message: unreadyMessage, LastTransitionTime: old}},
			want: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: metav1.NewTime(at)}},
		},
		"no condition: one is added, unready": {
			in: []v1.PodCondition{scheduled},
			want: []v1.PodCondition{scheduled, {Type: v1.PodReady, Status: v1.ConditionFalse, Reason: unreadyReason,
				Message: unreadyMessage, LastTransitionTime: metav1.NewTime(at)}},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			st := v1.PodStatus{Conditions: tt.in}
			FlipReady(&st, at)
			if d := cmp.Diff(tt.want, st.Conditions); d != "" {
				t.Errorf("conditions (-want +got):\n%s", d)
			}
		})
	}
}

// TestChurnRun runs a short stream against a fake clientset: every update
// flips the label and the Ready condition, and both of its writes count
// as events (a real server makes one watch event of each, which the fake
// cannot show).
func TestChurnRun(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset()
	l := Layout{Namespaces: 2, PerRS: 3, Nodes: 2, ApplierOwnsToken: true}
	if _, err := Populate(ctx, cs, l, 6, 2, io.Discard); err != nil {
		t.Fatalf("populate: %v", err)
	}
	c := Churn{Layout: l, Pods: 6, Rate: 200, Duration: 45 * time.Millisecond, Seed: 1, Workers: 3}
	stats, err := c.Run(ctx, cs)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if stats.Updates != 9 || stats.Events != 18 {
		t.Errorf("%d updates, %d events; want 9 and 18", stats.Updates, stats.Events)
	}
	updated := map[int]int{}
	for _, i := range c.Order() {
		updated[i]++
	}
	for i := range c.Pods {
		pod, err := cs.CoreV1().Pods(l.PodNamespace(i)).Get(ctx, l.PodName(i), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		wantTraffic, wantReady := "", v1.ConditionTrue
		switch updated[i] {
		case 1:
			wantTraffic, wantReady = "on", v1.ConditionFalse
		case 2:
			wantTraffic, wantReady = "off", v1.ConditionTrue
		}
		var ready v1.ConditionStatus
		for _, cond := range pod.Status.Conditions {
			if cond.Type == v1.PodReady {
				ready = cond.Status
			}
		}
		if got := pod.Labels[ChurnLabel]; got != wantTraffic || ready != wantReady {
			t.Errorf("pod %d updated %d times: traffic %q, ready %s; want %q and %s", i, updated[i], got, ready, wantTraffic, wantReady)
		}
		if updated[i] > 0 && pod.Annotations[ChurnAnnotation] == "" {
			t.Errorf("pod %d: no %s annotation", i, ChurnAnnotation)
		}
	}
}

func TestChurnRunRefusesMissingPods(t *testing.T) {
	l := Layout{Namespaces: 1, PerRS: 3, Nodes: 1, ApplierOwnsToken: true}
	c := Churn{Layout: l, Pods: 3, Rate: 100, Duration: time.Second, Seed: 1, Workers: 1}
	_, err := c.Run(context.Background(), fake.NewClientset())
	if err == nil || !strings.Contains(err.Error(), "found 0 of the 3 pods") {
		t.Errorf("err = %v, want one saying the pods are missing", err)
	}
}
