package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	framework "github.com/kcache/cache/testing"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
)

// servePods serves pods as an API server serves Pods, until the test
// ends: lists and watches of the collection (testing's HTTPHandler) and
// reads of one Pod by its path.
func servePods(t *testing.T, pods *framework.FakeControllerSource) *httptest.Server {
	codec := scheme.Codecs.LegacyCodec(corev1.SchemeGroupVersion)
	collection := framework.HTTPHandler{Source: pods, Encoder: codec}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// api/v1/namespaces/<ns>/pods/<name>
		parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
		if len(parts) != 6 || parts[4] != "pods" {
			collection.ServeHTTP(w, r)
			return
		}
		var body runtime.Object
		code := http.StatusOK
		if obj, ok := pods.Get(parts[3], parts[5]); ok {
			body = obj
		} else {
			status := apierrors.NewNotFound(corev1.Resource("pods"), parts[5]).Status()
			body, code = &status, http.StatusNotFound
		}
		raw, err := runtime.Encode(codec, body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = w.Write(raw)
	}))
	t.Cleanup(srv.Close)
	return srv
}
