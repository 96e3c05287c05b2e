package adoption

import (
	"context"
	"testing"

	"go.uber.org/goleak"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
)

// deployments is how many Deployments each controller is given.
const deployments = 5

// TestSampleController runs SampleController against the server: every
// Deployment gets its ConfigMap, a scale change reaches it, every delete is
// seen and cleaned up, and nothing keeps running after the stop.
func TestSampleController(t *testing.T) {
	e := needEnv(t)
	ns := e.namespace(t, "sample")
	leaks := goleak.IgnoreCurrent()

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	factory := informers.NewSharedInformerFactoryWithOptions(e.client, 0, informers.WithNamespace(ns))
	record := NewRecord()
	c, err := NewSampleController(e.client, factory, record)
	if err != nil {
		t.Fatal(err)
	}
	checkImplementation(t, c.DeploymentInformer)
	factory.Start(ctx.Done())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx, 2) }()

	ds := e.createDeployments(t, ns, deployments)
	scaled := ds[0].DeepCopy()
	// The controller records a key after writing its ConfigMap, so the
	// record is part of the condition.
	eventually(t, "every Deployment has its ConfigMap and is recorded", func(ctx context.Context) (bool, error) {
		if !containsAll(record.Reconciled(), keysOf(ds)) {
			return false, nil
		}
		return e.configMapsMatch(ctx, ds)
	})
	replicas := int32(7)
	scaled.Spec.Replicas = &replicas
	updated, err := e.client.AppsV1().Deployments(ns).Update(t.Context(), scaled, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("scale %s: %v", scaled.Name, err)
	}
	ds[0] = updated
	eventually(t, "the scaled Deployment's ConfigMap follows", func(ctx context.Context) (bool, error) {
		return e.configMapsMatch(ctx, ds[:1])
	})
	if got, want := record.Reconciled(), keysOf(ds); !containsAll(got, want) {
		t.Fatalf("reconciled %v, want all of %v", got, want)
	}

	e.deleteDeployments(t, ds)
	eventually(t, "every delete is seen", func(context.Context) (bool, error) {
		return containsAll(record.Deleted(), keysOf(ds)), nil
	})
	eventually(t, "every ConfigMap is removed", func(ctx context.Context) (bool, error) {
		list, err := e.client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, cm := range list.Items {
			if metav1.GetControllerOf(&cm) != nil {
				return false, nil
			}
		}
		return true, nil
	})

	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	factory.Shutdown()
	goleak.VerifyNone(t, leakOptions(leaks)...)
}

// configMapsMatch reports whether every Deployment in ds has the ConfigMap
// SampleController should write for it, read from the server.
func (e *env) configMapsMatch(ctx context.Context, ds []*appsv1.Deployment) (bool, error) {
	for _, d := range ds {
		cm, err := e.client.CoreV1().ConfigMaps(d.Namespace).Get(ctx, d.Name+ConfigMapSuffix, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if !sameData(cm.Data, DesiredConfigMapData(d)) {
			return false, nil
		}
	}
	return true, nil
}

// TestManagerReconciler runs a controller-runtime manager with
// ManagerReconciler: every Deployment is annotated, every delete is seen,
// and the manager leaves nothing running after its context ends.
func TestManagerReconciler(t *testing.T) {
	e := needEnv(t)
	ns := e.namespace(t, "manager")
	leaks := goleak.IgnoreCurrent()

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	record := NewRecord()
	mgr, err := NewManager(e.cfg, ns, record)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		t.Fatal("manager cache did not sync")
	}
	informer, err := mgr.GetCache().GetInformer(ctx, &appsv1.Deployment{})
	if err != nil {
		t.Fatalf("GetInformer: %v", err)
	}
	checkImplementation(t, informer)

	ds := e.createDeployments(t, ns, deployments)
	// The reconciler records a key after its patch returns, so the record
	// is part of the condition, not checked after it.
	eventually(t, "every Deployment is annotated and recorded", func(ctx context.Context) (bool, error) {
		if !containsAll(record.Reconciled(), keysOf(ds)) {
			return false, nil
		}
		for _, d := range ds {
			got, err := e.client.AppsV1().Deployments(ns).Get(ctx, d.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if got.Annotations[ReconciledAnnotation] != string(d.UID) {
				return false, nil
			}
		}
		return true, nil
	})
	if got, want := record.Reconciled(), keysOf(ds); !containsAll(got, want) {
		t.Fatalf("reconciled %v, want all of %v", got, want)
	}

	e.deleteDeployments(t, ds)
	eventually(t, "every delete is seen", func(context.Context) (bool, error) {
		return containsAll(record.Deleted(), keysOf(ds)), nil
	})

	cancel()
	if err := <-done; err != nil {
		t.Fatalf("manager Start: %v", err)
	}
	goleak.VerifyNone(t, leakOptions(leaks)...)
}
