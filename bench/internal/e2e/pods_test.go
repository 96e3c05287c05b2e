package e2e

import (
	"context"
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestApplyPodTokenVolume(t *testing.T) {
	for _, tc := range []struct {
		name      string
		wantToken bool
	}{
		{"admission adds it", false},
		{"the applier writes it", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := DefaultLayout
			l.ApplierOwnsToken = tc.wantToken
			for i := range 3 {
				pod := l.ApplyPod(i)
				if got := HasTokenVolume(pod); got != tc.wantToken {
					t.Errorf("pod %d: HasTokenVolume = %v, want %v", i, got, tc.wantToken)
				}
				for _, c := range pod.Spec.Containers {
					mounted := false
					for _, m := range c.VolumeMounts {
						mounted = mounted || strings.HasPrefix(m.Name, TokenVolumePrefix)
					}
					if mounted != tc.wantToken {
						t.Errorf("pod %d container %s mounts a token volume = %v, want %v", i, c.Name, mounted, tc.wantToken)
					}
				}
			}
		})
	}
}

// Pods of one ReplicaSet are written from one template: their specs differ
// only in the node (the scheduler's pick) unless the applier owns the
// token volume, whose name is the pod's own.
func TestApplyPodSameTemplateInReplicaSet(t *testing.T) {
	for _, owns := range []bool{false, true} {
		l := DefaultLayout
		l.ApplierOwnsToken = owns
		a, b := l.ApplyPod(0), l.ApplyPod(1)
		b.Spec.NodeName = a.Spec.NodeName
		if got := reflect.DeepEqual(a.Spec, b.Spec); got == owns {
			t.Errorf("ApplierOwnsToken %v: specs of two pods of one ReplicaSet equal = %v", owns, got)
		}
	}
}

func TestEnsureNamespace(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset()
	harsh := DefaultLayout
	harsh.ApplierOwnsToken = true
	if err := ensureNamespace(ctx, cs, DefaultLayout, "e2e-00"); err != nil {
		t.Fatalf("first ensureNamespace: %v", err)
	}
	if _, err := cs.CoreV1().ServiceAccounts("e2e-00").Get(ctx, "default", metav1.GetOptions{}); err != nil {
		t.Errorf("service account default: %v", err)
	}
	if err := ensureNamespace(ctx, cs, DefaultLayout, "e2e-00"); err != nil {
		t.Errorf("again with the same layout: %v", err)
	}
	err := ensureNamespace(ctx, cs, harsh, "e2e-00")
	if err == nil || !strings.Contains(err.Error(), `written by "admission", not by "applier"`) {
		t.Errorf("with another layout: err = %v, want one naming both layouts", err)
	}
	old := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "e2e-01"}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, old, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := ensureNamespace(ctx, cs, DefaultLayout, "e2e-01"); err == nil {
		t.Error("a namespace without the annotation (an older run's) was taken")
	}
}
