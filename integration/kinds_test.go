package integration

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
)

// listFunc and watchFunc are the shapes of ListWatch's context-aware
// fields, in both kcache and client-go.
type (
	listFunc  func(ctx context.Context, options metav1.ListOptions) (runtime.Object, error)
	watchFunc func(ctx context.Context, options metav1.ListOptions) (watch.Interface, error)
)

// kindClient writes and reads one kind of object for the workloads, and
// builds the list and watch functions informers use. The objects it
// returns belong to the caller.
type kindClient interface {
	// resource is the plural resource name, e.g. "pods".
	resource() string
	// example is an empty object of the type informers deliver.
	example() runtime.Object
	// deleteMarks reports whether the API server updates an object (sets
	// its deletion timestamp) right before deleting it, as for Pods.
	deleteMarks() bool
	// newObject returns an object to create: namespace and name set,
	// everything else valid and minimal.
	newObject(namespace, name string) metav1.Object
	create(ctx context.Context, obj metav1.Object) (metav1.Object, error)
	update(ctx context.Context, obj metav1.Object) (metav1.Object, error)
	get(ctx context.Context, namespace, name string) (metav1.Object, error)
	// delete deletes the object at once, only if it still has uid.
	delete(ctx context.Context, namespace, name string, uid types.UID) error
	list(ctx context.Context, namespace string, options metav1.ListOptions) ([]metav1.Object, error)
	// listWatch returns list and watch functions for namespace (every
	// namespace when empty).
	listWatch(namespace string) (listFunc, watchFunc)
}

// deleteNow deletes without a grace period (Pods bound to a node would
// otherwise wait for a kubelet that never comes), and only the given UID.
func deleteNow(uid types.UID) metav1.DeleteOptions {
	zero := int64(0)
	return metav1.DeleteOptions{GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &uid}}
}

// podClient handles Pods through the typed clientset. shape, if set,
// adjusts each new Pod (e.g. binds it to a node).
type podClient struct {
	client kubernetes.Interface
	shape  func(*corev1.Pod)
}

func (c podClient) resource() string        { return "pods" }
func (c podClient) example() runtime.Object { return &corev1.Pod{} }
func (c podClient) deleteMarks() bool       { return true }

func (c podClient) newObject(namespace, name string) metav1.Object {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{testLabel: "true"}},
		Spec: corev1.PodSpec{
			// Nothing ever runs it: no scheduler, no kubelet.
			Containers: []corev1.Container{{Name: "main", Image: "registry.invalid/none:1"}},
		},
	}
	if c.shape != nil {
		c.shape(pod)
	}
	return pod
}

func (c podClient) create(ctx context.Context, obj metav1.Object) (metav1.Object, error) {
	return c.client.CoreV1().Pods(obj.GetNamespace()).Create(ctx, obj.(*corev1.Pod), metav1.CreateOptions{})
}

func (c podClient) update(ctx context.Context, obj metav1.Object) (metav1.Object, error) {
	return c.client.CoreV1().Pods(obj.GetNamespace()).Update(ctx, obj.(*corev1.Pod), metav1.UpdateOptions{})
}

func (c podClient) get(ctx context.Context, namespace, name string) (metav1.Object, error) {
	return c.client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (c podClient) delete(ctx context.Context, namespace, name string, uid types.UID) error {
	return c.client.CoreV1().Pods(namespace).Delete(ctx, name, deleteNow(uid))
}

func (c podClient) list(ctx context.Context, namespace string, options metav1.ListOptions) ([]metav1.Object, error) {
	l, err := c.client.CoreV1().Pods(namespace).List(ctx, options)
	if err != nil {
		return nil, err
	}
	out := make([]metav1.Object, len(l.Items))
	for i := range l.Items {
		out[i] = &l.Items[i]
	}
	return out, nil
}

func (c podClient) listWatch(namespace string) (listFunc, watchFunc) {
	pods := c.client.CoreV1().Pods(namespace)
	return func(ctx context.Context, options metav1.ListOptions) (runtime.Object, error) {
			return pods.List(ctx, options)
		}, func(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
			return pods.Watch(ctx, options)
		}
}

// configMapClient handles ConfigMaps through the typed clientset.
type configMapClient struct {
	client kubernetes.Interface
}

func (c configMapClient) resource() string        { return "configmaps" }
func (c configMapClient) example() runtime.Object { return &corev1.ConfigMap{} }
func (c configMapClient) deleteMarks() bool       { return false }

func (c configMapClient) newObject(namespace, name string) metav1.Object {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{testLabel: "true"}},
		Data:       map[string]string{"created": "yes"},
	}
}

func (c configMapClient) create(ctx context.Context, obj metav1.Object) (metav1.Object, error) {
	return c.client.CoreV1().ConfigMaps(obj.GetNamespace()).Create(ctx, obj.(*corev1.ConfigMap), metav1.CreateOptions{})
}

func (c configMapClient) update(ctx context.Context, obj metav1.Object) (metav1.Object, error) {
	return c.client.CoreV1().ConfigMaps(obj.GetNamespace()).Update(ctx, obj.(*corev1.ConfigMap), metav1.UpdateOptions{})
}

func (c configMapClient) get(ctx context.Context, namespace, name string) (metav1.Object, error) {
	return c.client.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (c configMapClient) delete(ctx context.Context, namespace, name string, uid types.UID) error {
	return c.client.CoreV1().ConfigMaps(namespace).Delete(ctx, name, deleteNow(uid))
}

func (c configMapClient) list(ctx context.Context, namespace string, options metav1.ListOptions) ([]metav1.Object, error) {
	l, err := c.client.CoreV1().ConfigMaps(namespace).List(ctx, options)
	if err != nil {
		return nil, err
	}
	out := make([]metav1.Object, len(l.Items))
	for i := range l.Items {
		out[i] = &l.Items[i]
	}
	return out, nil
}

func (c configMapClient) listWatch(namespace string) (listFunc, watchFunc) {
	cms := c.client.CoreV1().ConfigMaps(namespace)
	return func(ctx context.Context, options metav1.ListOptions) (runtime.Object, error) {
			return cms.List(ctx, options)
		}, func(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
			return cms.Watch(ctx, options)
		}
}

// dynamicClient handles any resource as unstructured objects through the
// dynamic client; build is the body of a new object (apiVersion and kind
// included).
type dynamicClient struct {
	client dynamic.Interface
	gvr    schema.GroupVersionResource
	build  func(namespace, name string) *unstructured.Unstructured
}

func (c dynamicClient) resource() string        { return c.gvr.Resource }
func (c dynamicClient) example() runtime.Object { return &unstructured.Unstructured{} }
func (c dynamicClient) deleteMarks() bool       { return false }

func (c dynamicClient) newObject(namespace, name string) metav1.Object {
	return c.build(namespace, name)
}

func (c dynamicClient) create(ctx context.Context, obj metav1.Object) (metav1.Object, error) {
	return c.client.Resource(c.gvr).Namespace(obj.GetNamespace()).Create(ctx, obj.(*unstructured.Unstructured), metav1.CreateOptions{})
}

func (c dynamicClient) update(ctx context.Context, obj metav1.Object) (metav1.Object, error) {
	return c.client.Resource(c.gvr).Namespace(obj.GetNamespace()).Update(ctx, obj.(*unstructured.Unstructured), metav1.UpdateOptions{})
}

func (c dynamicClient) get(ctx context.Context, namespace, name string) (metav1.Object, error) {
	return c.client.Resource(c.gvr).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (c dynamicClient) delete(ctx context.Context, namespace, name string, uid types.UID) error {
	return c.client.Resource(c.gvr).Namespace(namespace).Delete(ctx, name, deleteNow(uid))
}

func (c dynamicClient) list(ctx context.Context, namespace string, options metav1.ListOptions) ([]metav1.Object, error) {
	l, err := c.client.Resource(c.gvr).Namespace(namespace).List(ctx, options)
	if err != nil {
		return nil, err
	}
	out := make([]metav1.Object, len(l.Items))
	for i := range l.Items {
		out[i] = &l.Items[i]
	}
	return out, nil
}

func (c dynamicClient) listWatch(namespace string) (listFunc, watchFunc) {
	r := c.client.Resource(c.gvr).Namespace(namespace)
	return func(ctx context.Context, options metav1.ListOptions) (runtime.Object, error) {
			return r.List(ctx, options)
		}, func(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
			return r.Watch(ctx, options)
		}
}

// metadataListWatch returns list and watch functions that fetch only the
// metadata of gvr's objects (PartialObjectMetadata), in namespace.
func metadataListWatch(client metadata.Interface, gvr schema.GroupVersionResource, namespace string) (listFunc, watchFunc) {
	r := client.Resource(gvr).Namespace(namespace)
	return func(ctx context.Context, options metav1.ListOptions) (runtime.Object, error) {
			return r.List(ctx, options)
		}, func(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
			return r.Watch(ctx, options)
		}
}

// objectKey is the namespace/name key informers use.
func objectKey(obj metav1.Object) string {
	if obj.GetNamespace() == "" {
		return obj.GetName()
	}
	return fmt.Sprintf("%s/%s", obj.GetNamespace(), obj.GetName())
}
