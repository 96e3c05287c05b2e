package adoption

import (
	"context"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// ConfigMapSuffix names the ConfigMap SampleController keeps for each
// Deployment: <deployment name><ConfigMapSuffix>.
const ConfigMapSuffix = "-seen"

// SampleController keeps, for every Deployment it sees, a ConfigMap owned
// by it that holds the Deployment's UID and replica count; when the
// Deployment is gone it deletes the ConfigMap and records the delete. It is
// built the way k8s.io/sample-controller is: generated informers and
// listers, handlers that only enqueue keys, a rate-limited queue, workers.
type SampleController struct {
	client      kubernetes.Interface
	deployments appslisters.DeploymentLister
	configMaps  corelisters.ConfigMapLister
	synced      []cache.InformerSynced
	queue       workqueue.TypedRateLimitingInterface[string]
	record      *Record

	// DeploymentInformer is the informer the factory built, exposed so a
	// test can check which cache implementation runs.
	DeploymentInformer cache.SharedIndexInformer
}

// NewSampleController registers its handlers on factory's Deployment and
// ConfigMap informers. Start the factory after this, then call Run.
func NewSampleController(client kubernetes.Interface, factory informers.SharedInformerFactory, record *Record) (*SampleController, error) {
	deployments := factory.Apps().V1().Deployments()
	configMaps := factory.Core().V1().ConfigMaps()
	c := &SampleController{
		client:      client,
		deployments: deployments.Lister(),
		configMaps:  configMaps.Lister(),
		synced:      []cache.InformerSynced{deployments.Informer().HasSynced, configMaps.Informer().HasSynced},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "adoption-sample"}),
		record:             record,
		DeploymentInformer: deployments.Informer(),
	}
	if _, err := deployments.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(_, obj any) { c.enqueue(obj) },
		DeleteFunc: c.enqueue,
	}); err != nil {
		return nil, fmt.Errorf("add deployment handler: %w", err)
	}
	if _, err := configMaps.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj any) { c.enqueueOwner(obj) },
		DeleteFunc: c.enqueueOwner,
	}); err != nil {
		return nil, fmt.Errorf("add configmap handler: %w", err)
	}
	return c, nil
}

func (c *SampleController) enqueue(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		klog.Background().Error(err, "Cannot key object", "object", obj)
		return
	}
	c.queue.Add(key)
}

// enqueueOwner enqueues the Deployment that owns a ConfigMap, so a
// ConfigMap changed or deleted behind the controller's back is repaired.
func (c *SampleController) enqueueOwner(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return
	}
	if ref := metav1.GetControllerOf(cm); ref != nil && ref.Kind == "Deployment" {
		c.queue.Add(cm.Namespace + "/" + ref.Name)
	}
}

// Run waits for the caches, runs workers until ctx ends, then shuts the
// queue down and returns once every worker has returned.
func (c *SampleController) Run(ctx context.Context, workers int) error {
	defer c.queue.ShutDown()
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return fmt.Errorf("caches did not sync: %w", ctx.Err())
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() { wait.UntilWithContext(ctx, c.runWorker, time.Second) })
	}
	<-ctx.Done()
	c.queue.ShutDown()
	wg.Wait()
	return nil
}

func (c *SampleController) runWorker(ctx context.Context) {
	for c.processNext(ctx) {
	}
}

func (c *SampleController) processNext(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	if err := c.sync(ctx, key); err != nil {
		klog.FromContext(ctx).V(2).Info("Requeue after error", "key", key, "err", err)
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	return true
}

// sync brings one Deployment's ConfigMap to the desired state.
func (c *SampleController) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil // a key we never enqueue; nothing to retry
	}
	d, err := c.deployments.Deployments(ns).Get(name)
	if apierrors.IsNotFound(err) {
		err := c.client.CoreV1().ConfigMaps(ns).Delete(ctx, name+ConfigMapSuffix, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete configmap of %s: %w", key, err)
		}
		c.record.markDeleted(key)
		return nil
	}
	if err != nil {
		return fmt.Errorf("get deployment %s: %w", key, err)
	}
	want := DesiredConfigMapData(d)
	cm, err := c.configMaps.ConfigMaps(ns).Get(name + ConfigMapSuffix)
	switch {
	case apierrors.IsNotFound(err):
		_, err = c.client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{
				Name:            name + ConfigMapSuffix,
				Namespace:       ns,
				OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(d, appsv1.SchemeGroupVersion.WithKind("Deployment"))},
			},
			Data: want,
		}, metav1.CreateOptions{})
	case err != nil:
		return fmt.Errorf("get configmap of %s: %w", key, err)
	case !sameData(cm.Data, want):
		cm = cm.DeepCopy()
		cm.Data = want
		_, err = c.client.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("write configmap of %s: %w", key, err)
	}
	c.record.markReconciled(key)
	return nil
}

// DesiredConfigMapData is what SampleController writes for d.
func DesiredConfigMapData(d *appsv1.Deployment) map[string]string {
	replicas := int32(1)
	if d.Spec.Replicas != nil {
		replicas = *d.Spec.Replicas
	}
	return map[string]string{"uid": string(d.UID), "replicas": fmt.Sprint(replicas)}
}

func sameData(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if bv, ok := b[k]; !ok || bv != v {
			return false
		}
	}
	return true
}
