package cache

import (
	"context"
	"runtime"
	"strconv"
	"testing"
	"weak"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// bodyClient is a Getter whose every list response carries a body of its
// own, as a REST client's result does; the response's Get drops its copy
// of the body once it has "decoded" it, then asks whether anything else
// still holds the body.
type bodyClient struct {
	// body is the latest response body, held weakly: only the result
	// may keep it.
	body weak.Pointer[byte]
	// heldDuringDecode records whether the body was still reachable after
	// the result let go of it, while Get was running.
	heldDuringDecode bool
}

type bodyRequest struct{ c *bodyClient }

// bodyResult holds a response body as client-go's Result does.
type bodyResult struct {
	c    *bodyClient
	body []byte
}

func (c *bodyClient) Get() *bodyRequest                               { return &bodyRequest{c: c} }
func (r *bodyRequest) Namespace(string) *bodyRequest                  { return r }
func (r *bodyRequest) Resource(string) *bodyRequest                   { return r }
func (r *bodyRequest) Watch(context.Context) (watch.Interface, error) { return watch.NewFake(), nil }
func (r *bodyRequest) VersionedParams(apiruntime.Object, apiruntime.ParameterCodec) *bodyRequest {
	return r
}

func (r *bodyRequest) Do(context.Context) bodyResult {
	body := make([]byte, 1<<20)
	r.c.body = weak.Make(&body[0])
	return bodyResult{c: r.c, body: body}
}

func (r bodyResult) Get() (apiruntime.Object, error) {
	// The body is read here, and r is not used again: from here on only
	// a holder of the result outside Get can keep the body.
	c, size := r.c, len(r.body)
	list := &v1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: strconv.Itoa(size >> 20)}}
	runtime.GC()
	c.heldDuringDecode = c.body.Value() != nil
	return list, nil
}

// TestListWatchFromClient_ResultNotHeldDuringDecode lists through a
// ListWatch built from a client and checks that nothing of the ListWatch
// keeps the request's result (and the response body in it) while the
// result decodes itself: with a one-response list of every object, that
// body is as large as the list, and client-go's ListWatch does not keep it.
func TestListWatchFromClient_ResultNotHeldDuringDecode(t *testing.T) {
	c := &bodyClient{}
	lw := NewListWatchFromClient(c, "pods", "", fields.Everything())
	obj, err := lw.ListWithContext(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rv := obj.(*v1.PodList).ResourceVersion; rv != "1" {
		t.Fatalf("listed resource version %q, want \"1\"", rv)
	}
	if c.heldDuringDecode {
		t.Error("the response body was still held by the ListWatch while the result decoded it")
	}
}
