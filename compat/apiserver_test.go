package compat_test

import (
	"net/http"
	"net/url"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"

	framework "github.com/kcache/cache/testing"
)

// seenRequest is what podServer recorded of one request.
type seenRequest struct {
	Path  string
	Query url.Values
}

// podServer is the module's simulated API server (the testing package's
// FakeControllerSource, served over HTTP by its HTTPHandler) holding Pods,
// with a record of the requests it got.
type podServer struct {
	src *framework.FakeControllerSource
	// events are the changes made after the first two Pods were added
	// (from resource version 2 on), as a watch from there gets them.
	events []watch.Event
	http   http.Handler

	mu   sync.Mutex // guards seen
	seen []seenRequest
}

// newPodServer returns a server holding Pods a (node-1) and b (node-2) at
// resource versions 1 and 2, then changed three times: c added on node-1
// (3), a moved to node-3 (4), b deleted (5).
func newPodServer(t *testing.T) *podServer {
	src := framework.NewFakeControllerSourceWithOptions(framework.FakeControllerSourceOptions{
		NewList: func() runtime.Object { return &v1.PodList{} },
	})
	t.Cleanup(src.Shutdown)
	src.Add(pod("a", "node-1", ""))
	src.Add(pod("b", "node-2", ""))
	s := &podServer{
		src: src,
		events: []watch.Event{
			{Type: watch.Added, Object: pod("c", "node-1", "")},
			{Type: watch.Modified, Object: pod("a", "node-3", "")},
			{Type: watch.Deleted, Object: pod("b", "node-2", "")},
		},
		// client-go's scheme encodes v1 JSON with apiVersion and kind set,
		// like kube-apiserver.
		http: framework.HTTPHandler{Source: src, Encoder: scheme.Codecs.LegacyCodec(v1.SchemeGroupVersion)},
	}
	for _, e := range s.events {
		src.Change(e, 1) // sets each event object's resource version
	}
	return s
}

// list is what a list of every Pod returns now.
func (s *podServer) list(t *testing.T) *v1.PodList {
	t.Helper()
	list, err := s.src.List(metav1ListAll)
	if err != nil {
		t.Fatalf("listing the source: %v", err)
	}
	return list.(*v1.PodList)
}

func (s *podServer) requests() []seenRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]seenRequest(nil), s.seen...)
}

// ServeHTTP records the request and hands it to the simulated server.
func (s *podServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.seen = append(s.seen, seenRequest{Path: r.URL.Path, Query: r.URL.Query()})
	s.mu.Unlock()
	s.http.ServeHTTP(w, r)
}
