package cache

import (
	"sort"
	"strconv"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// testPod returns a pod with the given namespace, name, resource version and
// labels (pairs of key, value).
func testPod(namespace, name, rv string, labels ...string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, ResourceVersion: rv}}
	if len(labels) > 0 {
		p.Labels = map[string]string{}
		for i := 0; i+1 < len(labels); i += 2 {
			p.Labels[labels[i]] = labels[i+1]
		}
	}
	return p
}

// goneError returns a 410 error with reason Gone, which older API servers
// sent for a resource version that was too old (newer ones send reason
// Expired). The reflector must treat it like Expired and the pager must not,
// so tests need this exact error, and only apimachinery's deprecated
// constructor builds it.
func goneError(msg string) error {
	//lint:ignore SA1019 the tests that call goneError exercise the old reason Gone itself, which NewResourceExpired does not produce
	return apierrors.NewGone(msg)
}

// podOnNode returns a pod scheduled to node.
func podOnNode(namespace, name, node string, rv int) *v1.Pod {
	p := testPod(namespace, name, strconv.Itoa(rv))
	p.Spec.NodeName = node
	return p
}

// byNodeIndex indexes pods by node name; unscheduled pods have no value.
func byNodeIndex(obj interface{}) ([]string, error) {
	pod := obj.(*v1.Pod)
	if pod.Spec.NodeName == "" {
		return nil, nil
	}
	return []string{pod.Spec.NodeName}, nil
}

// keysOf returns the sorted keys of objs under MetaNamespaceKeyFunc.
func keysOf(objs []interface{}) []string {
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		k, err := DeletionHandlingMetaNamespaceKeyFunc(o)
		if err != nil {
			panic(err)
		}
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// sorted returns a sorted copy of s.
func sorted(s []string) []string {
	out := make([]string, len(s))
	copy(out, s)
	sort.Strings(out)
	return out
}
