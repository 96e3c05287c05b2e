package framework_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	framework "github.com/kcache/cache/testing"
)

// jsonEncoder encodes core objects as JSON with apiVersion v1 and their
// kind, as the wire needs; it stands in for a codec from a scheme.
type jsonEncoder struct{}

func (jsonEncoder) Encode(obj runtime.Object, w io.Writer) error {
	kind := map[string]string{}
	switch obj.(type) {
	case *v1.Pod:
		kind["kind"] = "Pod"
	case *v1.PodList:
		kind["kind"] = "PodList"
	case *metav1.Status:
		kind["kind"] = "Status"
	}
	obj = obj.DeepCopyObject()
	obj.GetObjectKind().SetGroupVersionKind(v1.SchemeGroupVersion.WithKind(kind["kind"]))
	return json.NewEncoder(w).Encode(obj)
}

func (jsonEncoder) Identifier() runtime.Identifier { return "test-json" }

func servePods(t *testing.T) (*framework.FakeControllerSource, *httptest.Server) {
	t.Helper()
	f := framework.NewFakeControllerSourceWithOptions(framework.FakeControllerSourceOptions{
		Paging:  true,
		NewList: func() runtime.Object { return &v1.PodList{} },
	})
	ts := httptest.NewServer(framework.HTTPHandler{Source: f, Encoder: jsonEncoder{}})
	t.Cleanup(func() {
		ts.Client().CloseIdleConnections()
		ts.Close()
		f.Shutdown()
	})
	return f, ts
}

func get(t *testing.T, ts *httptest.Server, query string) *http.Response {
	t.Helper()
	resp, err := ts.Client().Get(ts.URL + "/api/v1/namespaces/ns/pods?" + query)
	if err != nil {
		t.Fatalf("GET %s: %v", query, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func TestHTTPHandler_Lists(t *testing.T) {
	tests := map[string]struct {
		query    string
		wantCode int
		wantBody string // "name@rv ..." for a list, the reason for a status
	}{
		"a list":               {query: "", wantCode: 200, wantBody: "PodList rv=2 a@1 b@2"},
		"a page":               {query: "limit=1", wantCode: 200, wantBody: "PodList rv=2 a@1 continued"},
		"a bad continue token": {query: "limit=1&continue=junk", wantCode: 400, wantBody: "Status BadRequest"},
		"too large a version":  {query: "resourceVersion=9&resourceVersionMatch=Exact", wantCode: 504, wantBody: "Status Timeout"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f, ts := servePods(t)
			f.Add(pod("a"))
			f.Add(pod("b"))
			resp := get(t, ts, tc.query)
			if resp.StatusCode != tc.wantCode {
				t.Errorf("status code = %d, want %d", resp.StatusCode, tc.wantCode)
			}
			var body struct {
				Kind     string
				Metadata metav1.ListMeta
				Items    []v1.Pod
				Reason   metav1.StatusReason
			}
			if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
				t.Fatalf("decoding the body: %v", err)
			}
			got := body.Kind
			if body.Kind == "Status" {
				got += " " + string(body.Reason)
			} else {
				got += " rv=" + body.Metadata.ResourceVersion
				for _, p := range body.Items {
					got += " " + p.Name + "@" + p.ResourceVersion
				}
				if body.Metadata.Continue != "" {
					got += " continued"
				}
			}
			if got != tc.wantBody {
				t.Errorf("body = %q, want %q", got, tc.wantBody)
			}
		})
	}
}

func TestHTTPHandler_StreamsWatchEvents(t *testing.T) {
	tests := map[string]struct {
		query    string
		compact  bool
		wantCode int
		want     []string
	}{
		"a watch from a resource version": {
			query: "watch=true&resourceVersion=1", wantCode: 200,
			want: []string{"ADDED Pod b@2", "MODIFIED Pod a@3"},
		},
		"a streaming list": {
			query: "watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true", wantCode: 200,
			want: []string{"ADDED Pod a@1", "ADDED Pod b@2", "BOOKMARK Pod @2", "MODIFIED Pod a@3"},
		},
		"a watch from a version too old": {
			query: "watch=true&resourceVersion=1", compact: true, wantCode: 410,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f, ts := servePods(t)
			f.Add(pod("a"))
			f.Add(pod("b"))
			if tc.compact {
				f.Compact()
			}
			resp := get(t, ts, tc.query)
			if resp.StatusCode != tc.wantCode {
				t.Fatalf("status code = %d, want %d", resp.StatusCode, tc.wantCode)
			}
			if tc.want == nil {
				return
			}
			f.Modify(pod("a"))
			dec := json.NewDecoder(bufio.NewReader(resp.Body))
			var got []string
			for range tc.want {
				var frame struct {
					Type   string
					Object struct {
						Kind     string
						Metadata metav1.ObjectMeta
					}
				}
				if err := dec.Decode(&frame); err != nil {
					t.Fatalf("decoding frame %d: %v", len(got)+1, err)
				}
				got = append(got, frame.Type+" "+frame.Object.Kind+" "+frame.Object.Metadata.Name+"@"+frame.Object.Metadata.ResourceVersion)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("frames (-want +got):\n%s", diff)
			}
		})
	}
}

// typeMetaEncoder encodes Pods as a scheme's codec does, writing the
// TypeMeta of the object it is given (a codec restores it afterwards).
type typeMetaEncoder struct{}

func (typeMetaEncoder) Encode(obj runtime.Object, w io.Writer) error {
	obj.GetObjectKind().SetGroupVersionKind(v1.SchemeGroupVersion.WithKind("Pod"))
	return json.NewEncoder(w).Encode(obj)
}

func (typeMetaEncoder) Identifier() runtime.Identifier { return "test-typemeta" }

// Several watches of one source, served with an encoder that writes the
// TypeMeta of what it encodes (as a scheme's codec does), each encode their
// own copy of every event's object: -race fails if they share it.
func TestHTTPHandler_ConcurrentWatchesEncodeTheirOwnCopies(t *testing.T) {
	f := framework.NewFakeControllerSource()
	ts := httptest.NewServer(framework.HTTPHandler{Source: f, Encoder: typeMetaEncoder{}})
	t.Cleanup(func() {
		ts.Client().CloseIdleConnections()
		ts.Close()
		f.Shutdown()
	})
	const watches, changes = 4, 20
	decoders := make([]*json.Decoder, watches)
	for i := range decoders {
		resp := get(t, ts, "watch=true&resourceVersion=0")
		t.Cleanup(func() { resp.Body.Close() })
		decoders[i] = json.NewDecoder(bufio.NewReader(resp.Body))
	}
	for i := range changes {
		f.Add(pod(fmt.Sprint("p", i)))
	}
	var wg sync.WaitGroup
	for i, dec := range decoders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range changes {
				var frame struct{ Object struct{ Kind string } }
				if err := dec.Decode(&frame); err != nil || frame.Object.Kind != "Pod" {
					t.Errorf("watch %d, frame %d: kind %q, %v", i, n, frame.Object.Kind, err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestHTTPHandler_RefusesOtherMethods(t *testing.T) {
	_, ts := servePods(t)
	resp, err := ts.Client().Post(ts.URL+"/api/v1/pods", "application/json", nil)
	if err != nil {
		t.Fatalf("POST: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("status code = %d, want 405", resp.StatusCode)
	}
}
