package adoption

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// ReconciledAnnotation is the annotation ManagerReconciler sets on every
// Deployment: its value is the Deployment's UID.
const ReconciledAnnotation = "adoption.kcache.io/reconciled"

// ManagerReconciler annotates each Deployment with its own UID and records
// Deployments it finds gone. It is a plain controller-runtime reconciler.
type ManagerReconciler struct {
	Client client.Client
	Record *Record
}

// Reconcile implements reconcile.Reconciler.
func (r *ManagerReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var d appsv1.Deployment
	if err := r.Client.Get(ctx, req.NamespacedName, &d); err != nil {
		if apierrors.IsNotFound(err) {
			r.Record.markDeleted(req.String())
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("get deployment %s: %w", req, err)
	}
	if d.Annotations[ReconciledAnnotation] != string(d.UID) {
		patched := d.DeepCopy()
		if patched.Annotations == nil {
			patched.Annotations = map[string]string{}
		}
		patched.Annotations[ReconciledAnnotation] = string(d.UID)
		if err := r.Client.Patch(ctx, patched, client.MergeFrom(&d)); err != nil {
			return ctrl.Result{}, fmt.Errorf("annotate deployment %s: %w", req, err)
		}
	}
	r.Record.markReconciled(req.String())
	return ctrl.Result{}, nil
}

// TestLabel marks the objects of one test: its value is the test's
// namespace. NewManager caches only objects carrying it.
const TestLabel = "adoption.kcache.io/test"

// NewManager builds a manager whose cache holds only objects labelled
// TestLabel=ns (a label selector, not DefaultNamespaces: a namespace list
// puts controller-runtime's multi-namespace wrapper in front of the
// informers), serves no metrics or probes, and runs ManagerReconciler on
// Deployments.
func NewManager(cfg *rest.Config, ns string, record *Record) (manager.Manager, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("build scheme: %w", err)
	}
	skip := true
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  cache.Options{DefaultLabelSelector: labels.SelectorFromSet(labels.Set{TestLabel: ns})},
		Controller:             config.Controller{SkipNameValidation: &skip},
	})
	if err != nil {
		return nil, fmt.Errorf("new manager: %w", err)
	}
	err = ctrl.NewControllerManagedBy(mgr).
		For(&appsv1.Deployment{}).
		Named("adoption").
		Complete(&ManagerReconciler{Client: mgr.GetClient(), Record: record})
	if err != nil {
		return nil, fmt.Errorf("build controller: %w", err)
	}
	return mgr, nil
}
