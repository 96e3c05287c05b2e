package compat_test

import (
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
)

// seenRequest is what fakeAPIServer recorded of one request.
type seenRequest struct {
	Path  string
	Query url.Values
}

// fakeAPIServer answers GETs on the pods collection the way kube-apiserver
// does on the wire: a JSON PodList for a list, and for ?watch=true a stream
// of JSON-encoded metav1.WatchEvents that stays open until the client goes.
type fakeAPIServer struct {
	t      *testing.T
	list   *v1.PodList
	events []watch.Event

	mu   sync.Mutex // guards seen
	seen []seenRequest
}

// podCodec encodes objects as v1 JSON with apiVersion and kind set, like
// the server does.
var podCodec = scheme.Codecs.LegacyCodec(v1.SchemeGroupVersion)

// frameEncoder encodes the watch event envelopes.
var frameEncoder = json.NewSerializerWithOptions(json.DefaultMetaFactory, nil, nil, json.SerializerOptions{})

func (s *fakeAPIServer) requests() []seenRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]seenRequest(nil), s.seen...)
}

func (s *fakeAPIServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.seen = append(s.seen, seenRequest{Path: r.URL.Path, Query: r.URL.Query()})
	s.mu.Unlock()
	if r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, "/pods") {
		http.Error(w, "unexpected request "+r.Method+" "+r.URL.Path, http.StatusNotFound)
		return
	}
	if r.URL.Query().Get("watch") == "true" {
		s.serveWatch(w, r)
		return
	}
	body, err := runtime.Encode(podCodec, s.list)
	if err != nil {
		s.t.Errorf("encoding the list: %v", err)
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

func (s *fakeAPIServer) serveWatch(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		s.t.Errorf("response writer cannot flush")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	enc := streaming.NewEncoder(w, frameEncoder)
	for _, ev := range s.events {
		raw, err := runtime.Encode(podCodec, ev.Object)
		if err != nil {
			s.t.Errorf("encoding a watch event object: %v", err)
			return
		}
		frame := &metav1.WatchEvent{Type: string(ev.Type), Object: runtime.RawExtension{Raw: raw}}
		if err := enc.Encode(frame); err != nil {
			return // the client went away
		}
		flusher.Flush()
	}
	<-r.Context().Done()
}
