package framework

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
)

// selector is what a request's label and field selectors let through. The
// zero value, used when the source ignores selectors, lets everything
// through.
type selector struct {
	labels labels.Selector
	fields fields.Selector
	// fieldsOf returns the fields an object can be selected by.
	fieldsOf func(runtime.Object) fields.Set
}

// selectorFor parses the selectors of options when the source honours them
// (FakeControllerSourceOptions.Selectors). A selector that does not parse
// is a 400 Bad Request, as from kube-apiserver.
func (f *FakeControllerSource) selectorFor(options metav1.ListOptions) (selector, error) {
	if !f.opts.Selectors {
		return selector{}, nil
	}
	sel := selector{fieldsOf: f.opts.FieldsOf}
	if sel.fieldsOf == nil {
		sel.fieldsOf = metadataFields
	}
	var err error
	if options.LabelSelector != "" {
		if sel.labels, err = labels.Parse(options.LabelSelector); err != nil {
			return selector{}, apierrors.NewBadRequest(fmt.Sprintf("invalid label selector %q: %v", options.LabelSelector, err))
		}
	}
	if options.FieldSelector != "" {
		if sel.fields, err = fields.ParseSelector(options.FieldSelector); err != nil {
			return selector{}, apierrors.NewBadRequest(fmt.Sprintf("invalid field selector %q: %v", options.FieldSelector, err))
		}
	}
	return sel, nil
}

// metadataFields returns the fields every object can be selected by:
// metadata.name and metadata.namespace.
func metadataFields(obj runtime.Object) fields.Set {
	m, err := meta.Accessor(obj)
	if err != nil {
		return fields.Set{}
	}
	return fields.Set{"metadata.name": m.GetName(), "metadata.namespace": m.GetNamespace()}
}

// selectsAll reports whether the selector lets every object through.
func (s selector) selectsAll() bool {
	return (s.labels == nil || s.labels.Empty()) && (s.fields == nil || s.fields.Empty())
}

// matches reports whether obj passes both selectors.
func (s selector) matches(obj runtime.Object) bool {
	if s.selectsAll() {
		return true
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return false
	}
	if s.labels != nil && !s.labels.Matches(labels.Set(m.GetLabels())) {
		return false
	}
	return s.fields == nil || s.fields.Empty() || s.fields.Matches(s.fieldsOf(obj))
}
