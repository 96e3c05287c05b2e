package sharding

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	framework "github.com/kcache/cache/testing"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// podServer is an API server for Pods alone, over testing's simulated
// server: lists and watches of /api/v1/pods, and reads of one Pod by its
// path (a manager's API reader).
type podServer struct {
	pods *framework.FakeControllerSource
	srv  *httptest.Server
}

// newPodServer serves pods until the test ends.
func newPodServer(t *testing.T, pods *framework.FakeControllerSource) *podServer {
	t.Helper()
	p := &podServer{pods: pods}
	p.srv = httptest.NewServer(p)
	t.Cleanup(p.srv.Close)
	return p
}

// config returns a client configuration for the server.
func (p *podServer) config() *rest.Config { return &rest.Config{Host: p.srv.URL} }

var podCodec = scheme.Codecs.LegacyCodec(corev1.SchemeGroupVersion)

func (p *podServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	// api/v1/namespaces/<ns>/pods/<name>
	if len(parts) == 6 && parts[2] == "namespaces" && parts[4] == "pods" {
		p.get(w, parts[3], parts[5])
		return
	}
	framework.HTTPHandler{Source: p.pods, Encoder: podCodec}.ServeHTTP(w, r)
}

// get answers a read of one Pod.
func (p *podServer) get(w http.ResponseWriter, namespace, name string) {
	var body runtime.Object
	code := http.StatusOK
	if obj, ok := p.pods.Get(namespace, name); ok {
		body = obj
	} else {
		status := apierrors.NewNotFound(corev1.Resource("pods"), name).Status()
		body, code = &status, http.StatusNotFound
	}
	raw, err := runtime.Encode(podCodec, body)
	if err != nil {
		http.Error(w, fmt.Sprint(err), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(raw)
}

// podMapper is a RESTMapper that knows Pods.
func podMapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(corev1.SchemeGroupVersion.WithKind("Pod"), meta.RESTScopeNamespace)
	return m
}
