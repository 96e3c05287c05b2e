package framework

import (
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
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

// filter returns w with the events whose object the selector rejects left
// out; bookmarks and errors always pass. Like kube-apiserver's watch cache
// it judges an event by the object it carries, except that an object
// modified out of the selection is simply no longer sent, where
// kube-apiserver sends a DELETED event.
func (s selector) filter(w watch.Interface) watch.Interface {
	if s.selectsAll() {
		return w
	}
	fw := &filteredWatch{inner: w, sel: s, result: make(chan watch.Event), stopped: make(chan struct{})}
	go fw.relay()
	return fw
}

// filteredWatch relays the events of a watch that its selector lets
// through, on one goroutine, which ends when the inner watch ends or the
// consumer stops the watch (unlike apimachinery's watch.Filter, whose
// goroutine waits forever on a consumer that stopped reading).
type filteredWatch struct {
	inner  watch.Interface
	sel    selector
	result chan watch.Event
	// stopped is closed by Stop.
	stopped  chan struct{}
	stopOnce sync.Once
}

// ResultChan returns the channel the selected events arrive on.
func (w *filteredWatch) ResultChan() <-chan watch.Event { return w.result }

// Stop ends the watch; the result channel closes soon after.
func (w *filteredWatch) Stop() {
	w.stopOnce.Do(func() {
		close(w.stopped)
		w.inner.Stop()
	})
}

// relay forwards the selected events until either side ends.
func (w *filteredWatch) relay() {
	defer close(w.result)
	for e := range w.inner.ResultChan() {
		switch e.Type {
		case watch.Bookmark, watch.Error:
		default:
			if !w.sel.matches(e.Object) {
				continue
			}
		}
		select {
		case w.result <- e:
		case <-w.stopped:
			return
		}
	}
}
