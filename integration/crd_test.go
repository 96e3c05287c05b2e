package integration

import (
	"context"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
)

// widgets is the custom resource the CRD scenario creates.
var widgets = schema.GroupVersionResource{Group: "kcache.io", Version: "v1", Resource: "widgets"}

// widgetCRD defines widgets: namespaced, with an integer spec.size.
func widgetCRD() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: widgets.Resource + "." + widgets.Group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: widgets.Group,
			Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Plural: widgets.Resource, Singular: "widget", Kind: "Widget", ListKind: "WidgetList",
			},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: widgets.Version, Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
							"size": {Type: "integer"},
						}},
					},
				}},
			}},
		},
	}
}

// needWidgets creates the widgets CRD (once per server; it is kept) and
// waits until it is Established, then returns a client for widgets.
func needWidgets(t *testing.T, s *server) dynamicClient {
	t.Helper()
	client, err := apiextensions.NewForConfig(s.config)
	if err != nil {
		t.Fatalf("apiextensions clientset: %v", err)
	}
	crds := client.ApiextensionsV1().CustomResourceDefinitions()
	ctx := context.Background()
	crd := widgetCRD()
	if _, err := crds.Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create CRD %s: %v", crd.Name, err)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := crds.Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range got.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("CRD %s not Established: %v", crd.Name, err)
	}
	return dynamicClient{client: s.dynamic, gvr: widgets, build: newWidget}
}

func newWidget(namespace, name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": widgets.GroupVersion().String(),
		"kind":       "Widget",
		"metadata": map[string]any{
			"namespace": namespace,
			"name":      name,
			"labels":    map[string]any{testLabel: "true"},
		},
		"spec": map[string]any{"size": int64(len(name))},
	}}
}
