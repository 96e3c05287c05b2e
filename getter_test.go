package cache

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

// sentRequest is what fakeRESTClient saw of one request.
type sentRequest struct {
	Verb      string // "list" or "watch"
	Namespace string // "" when Namespace was never called
	Resource  string
	Params    url.Values
	Context   string // tag of the context given to Do or Watch
}

// fakeRESTClient mimics the request builder of client-go's REST client,
// with the method set Getter's doc comment names, and records what it is
// asked to send.
type fakeRESTClient struct {
	mu   sync.Mutex // guards sent
	sent []sentRequest

	list    runtime.Object
	watcher watch.Interface
	err     error
	discard bool // do not record requests (benchmarks)
}

type fakeRequest struct {
	client *fakeRESTClient
	sent   sentRequest
	err    error
}

type fakeResult struct {
	obj runtime.Object
	err error
}

func (c *fakeRESTClient) Get() *fakeRequest { return &fakeRequest{client: c} }

func (c *fakeRESTClient) requests() []sentRequest {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]sentRequest(nil), c.sent...)
}

func (r *fakeRequest) Namespace(ns string) *fakeRequest {
	if ns == "" {
		r.err = errors.New("fake: empty namespace set explicitly")
	}
	r.sent.Namespace = ns
	return r
}

func (r *fakeRequest) Resource(resource string) *fakeRequest {
	r.sent.Resource = resource
	return r
}

func (r *fakeRequest) VersionedParams(obj runtime.Object, codec runtime.ParameterCodec) *fakeRequest {
	if codec != metav1.ParameterCodec {
		r.err = errors.New("fake: not metav1.ParameterCodec")
		return r
	}
	params, err := codec.EncodeParameters(obj, schema.GroupVersion{Version: "v1"})
	if err != nil {
		r.err = err
	}
	r.sent.Params = params
	return r
}

func (r *fakeRequest) record(verb string, ctx context.Context) {
	r.sent.Verb = verb
	r.sent.Context = contextTag(ctx)
	if r.client.discard {
		return
	}
	r.client.mu.Lock()
	defer r.client.mu.Unlock()
	r.client.sent = append(r.client.sent, r.sent)
}

func (r *fakeRequest) Do(ctx context.Context) fakeResult {
	r.record("list", ctx)
	if r.err != nil {
		return fakeResult{err: r.err}
	}
	return fakeResult{obj: r.client.list, err: r.client.err}
}

func (r *fakeRequest) Watch(ctx context.Context) (watch.Interface, error) {
	r.record("watch", ctx)
	if r.err != nil {
		return nil, r.err
	}
	return r.client.watcher, r.client.err
}

func (r fakeResult) Get() (runtime.Object, error) { return r.obj, r.err }

// restInterface is how callers usually hold client-go's REST client: as an
// interface value.
type restInterface interface {
	Get() *fakeRequest
}

func TestListWatch_FromClientSendsTheRequestClientGoWould(t *testing.T) {
	tests := map[string]struct {
		namespace string
		selector  fields.Selector
		call      func(lw *ListWatch) error
		want      sentRequest
	}{
		"List in a namespace with a field selector": {
			namespace: "ns1",
			selector:  fields.OneTermEqualSelector("spec.nodeName", "n1"),
			call: func(lw *ListWatch) error {
				_, err := lw.List(metav1.ListOptions{ResourceVersion: "0", Limit: 500})
				return err
			},
			want: sentRequest{
				Verb: "list", Namespace: "ns1", Resource: "pods",
				Params: url.Values{"fieldSelector": {"spec.nodeName=n1"}, "resourceVersion": {"0"}, "limit": {"500"}},
			},
		},
		"ListWithContext across all namespaces passes the context": {
			selector: fields.Everything(),
			call: func(lw *ListWatch) error {
				_, err := lw.ListWithContext(taggedContext("caller"), metav1.ListOptions{LabelSelector: "app=x"})
				return err
			},
			want: sentRequest{
				Verb: "list", Resource: "pods", Context: "caller",
				Params: url.Values{"labelSelector": {"app=x"}},
			},
		},
		"Watch sets watch=true and keeps the resource version": {
			namespace: "ns1",
			selector:  fields.Everything(),
			call: func(lw *ListWatch) error {
				_, err := lw.Watch(metav1.ListOptions{ResourceVersion: "42", AllowWatchBookmarks: true})
				return err
			},
			want: sentRequest{
				Verb: "watch", Namespace: "ns1", Resource: "pods",
				Params: url.Values{"watch": {"true"}, "resourceVersion": {"42"}, "allowWatchBookmarks": {"true"}},
			},
		},
		"WatchWithContext passes the context": {
			selector: fields.OneTermEqualSelector("metadata.name", "p"),
			call: func(lw *ListWatch) error {
				_, err := lw.WatchWithContext(taggedContext("caller"), metav1.ListOptions{ResourceVersion: "3"})
				return err
			},
			want: sentRequest{
				Verb: "watch", Resource: "pods", Context: "caller",
				Params: url.Values{"watch": {"true"}, "resourceVersion": {"3"}, "fieldSelector": {"metadata.name=p"}},
			},
		},
		"caller's field selector is replaced by the ListWatch's": {
			selector: fields.OneTermEqualSelector("a", "b"),
			call: func(lw *ListWatch) error {
				_, err := lw.List(metav1.ListOptions{FieldSelector: "c=d"})
				return err
			},
			want: sentRequest{Verb: "list", Resource: "pods", Params: url.Values{"fieldSelector": {"a=b"}}},
		},
		"nil selector means everything": {
			call: func(lw *ListWatch) error {
				_, err := lw.List(metav1.ListOptions{})
				return err
			},
			want: sentRequest{Verb: "list", Resource: "pods", Params: url.Values{}},
		},
	}
	for name, tc := range tests {
		for _, holder := range []string{"concrete", "interface"} {
			t.Run(name+"/"+holder, func(t *testing.T) {
				client := &fakeRESTClient{list: &v1.PodList{}, watcher: watch.NewFake()}
				var getter Getter = client
				if holder == "interface" {
					var ri restInterface = client
					getter = ri
				}
				lw := NewListWatchFromClient(getter, "pods", tc.namespace, tc.selector)
				if err := tc.call(lw); err != nil {
					t.Fatalf("call: %v", err)
				}
				if diff := cmp.Diff([]sentRequest{tc.want}, client.requests()); diff != "" {
					t.Errorf("requests (-want +got):\n%s", diff)
				}
			})
		}
	}
}

func TestListWatch_FromClientReturnsTheClientsResults(t *testing.T) {
	list := &v1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "9"}, Items: []v1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "p"}}}}
	w := watch.NewFake()
	client := &fakeRESTClient{list: list, watcher: w}
	lw := NewListWatchFromClient(client, "pods", "", fields.Everything())
	got, err := lw.List(metav1.ListOptions{})
	if err != nil || got != list {
		t.Errorf("List = %v, %v; want the client's list", got, err)
	}
	gotW, err := lw.Watch(metav1.ListOptions{})
	if err != nil || gotW != w {
		t.Errorf("Watch = %v, %v; want the client's watch", gotW, err)
	}
}

func TestListWatch_FromClientKeepsAPIErrorsUnwrapped(t *testing.T) {
	gone := apierrors.NewResourceExpired("too old resource version: 1 (5)")
	client := &fakeRESTClient{err: gone}
	lw := NewListWatchFromClient(client, "pods", "ns", fields.Everything())
	_, listErr := lw.ListWithContext(context.Background(), metav1.ListOptions{})
	_, watchErr := lw.WatchWithContext(context.Background(), metav1.ListOptions{})
	for name, err := range map[string]error{"list": listErr, "watch": watchErr} {
		// The reflector classifies errors; a wrapped StatusError would still
		// pass apierrors.IsResourceExpired but break type assertions.
		if _, ok := err.(*apierrors.StatusError); !ok || !apierrors.IsResourceExpired(err) {
			t.Errorf("%s error = %#v, want the client's *StatusError itself", name, err)
		}
	}
}

func TestListWatch_FilteredFromClientAppliesTheModifierToACopy(t *testing.T) {
	client := &fakeRESTClient{list: &v1.PodList{}, watcher: watch.NewFake()}
	var sawWatch []bool
	lw := NewFilteredListWatchFromClient(client, "pods", "ns", func(o *metav1.ListOptions) {
		sawWatch = append(sawWatch, o.Watch)
		o.LabelSelector = "team=a"
		o.ResourceVersion = "" // the modifier has the last word
	})
	opts := metav1.ListOptions{ResourceVersion: "5"}
	if _, err := lw.List(opts); err != nil {
		t.Fatal(err)
	}
	if _, err := lw.Watch(opts); err != nil {
		t.Fatal(err)
	}
	if opts.ResourceVersion != "5" || opts.LabelSelector != "" || opts.Watch {
		t.Errorf("caller's options were modified: %+v", opts)
	}
	if diff := cmp.Diff([]bool{false, true}, sawWatch); diff != "" {
		t.Errorf("Watch flag seen by the modifier (-want +got):\n%s", diff)
	}
	want := []sentRequest{
		{Verb: "list", Namespace: "ns", Resource: "pods", Params: url.Values{"labelSelector": {"team=a"}}},
		{Verb: "watch", Namespace: "ns", Resource: "pods", Params: url.Values{"labelSelector": {"team=a"}, "watch": {"true"}}},
	}
	if diff := cmp.Diff(want, client.requests()); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

func TestListWatch_FilteredFromClientAcceptsANilModifier(t *testing.T) {
	client := &fakeRESTClient{list: &v1.PodList{}}
	lw := NewFilteredListWatchFromClient(client, "pods", "", nil)
	if _, err := lw.List(metav1.ListOptions{Limit: 1}); err != nil {
		t.Fatal(err)
	}
	want := []sentRequest{{Verb: "list", Resource: "pods", Params: url.Values{"limit": {"1"}}}}
	if diff := cmp.Diff(want, client.requests()); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

func TestListWatch_FromClientSetsAllFourFunctions(t *testing.T) {
	lw := NewListWatchFromClient(&fakeRESTClient{}, "pods", "", fields.Everything())
	if lw.ListFunc == nil || lw.WatchFunc == nil || lw.ListWithContextFunc == nil || lw.WatchFuncWithContext == nil {
		t.Errorf("some function fields are nil: %+v", lw)
	}
	if lw.DisableChunking {
		t.Errorf("DisableChunking set")
	}
}

// Getters of the wrong shape, one defect each.
type (
	noGetMethod    struct{}
	getWithArg     struct{}
	getReturnsInt  struct{}
	badReq         struct{}
	reqNoWatch     struct{}
	reqBadParams   struct{}
	reqBadResult   struct{}
	resultNoGet    struct{}
	panickyGetter  struct{}
	nilReqGetter   struct{}
	chainReq       struct{}
	reqStringWatch struct{}
)

func (getWithArg) Get(string) *fakeRequest { return nil }
func (getReturnsInt) Get() int             { return 0 }
func (badReq) Get() *reqNoWatch            { return nil }

func (r *reqNoWatch) Namespace(string) *reqNoWatch                                       { return r }
func (r *reqNoWatch) Resource(string) *reqNoWatch                                        { return r }
func (r *reqNoWatch) VersionedParams(runtime.Object, runtime.ParameterCodec) *reqNoWatch { return r }
func (r *reqNoWatch) Do(context.Context) fakeResult                                      { return fakeResult{} }

func (reqBadParams) Get() *reqStringWatch { return nil }

func (r *reqStringWatch) Namespace(string) *reqStringWatch                    { return r }
func (r *reqStringWatch) Resource(string) *reqStringWatch                     { return r }
func (r *reqStringWatch) VersionedParams(*metav1.ListOptions) *reqStringWatch { return r }
func (r *reqStringWatch) Do(context.Context) fakeResult                       { return fakeResult{} }
func (r *reqStringWatch) Watch(context.Context) (watch.Interface, error)      { return nil, nil }

func (reqBadResult) Get() *chainReq { return &chainReq{} }

func (r *chainReq) Namespace(string) *chainReq                                       { return r }
func (r *chainReq) Resource(string) *chainReq                                        { return r }
func (r *chainReq) VersionedParams(runtime.Object, runtime.ParameterCodec) *chainReq { return r }
func (r *chainReq) Do(context.Context) resultNoGet                                   { return resultNoGet{} }
func (r *chainReq) Watch(context.Context) (watch.Interface, error)                   { return nil, nil }

func (panickyGetter) Get() *fakeRequest { panic("no connection configured") }
func (nilReqGetter) Get() *fakeRequest  { return nil }

func TestListWatch_InvalidGetterFailsEveryCallWithAClearError(t *testing.T) {
	var nilClient *fakeRESTClient
	var nilInterface restInterface
	tests := map[string]struct {
		getter  Getter
		wantMsg string
	}{
		"nil":                       {getter: nil, wantMsg: "the client is nil"},
		"nil interface value":       {getter: nilInterface, wantMsg: "the client is nil"},
		"typed nil pointer":         {getter: nilClient, wantMsg: "the client is a nil *cache.fakeRESTClient"},
		"no Get method":             {getter: noGetMethod{}, wantMsg: "cache.noGetMethod has no method Get() interface {}"},
		"Get takes an argument":     {getter: getWithArg{}, wantMsg: "cache.getWithArg.Get is func(cache.getWithArg, string) *cache.fakeRequest"},
		"Get returns a non-builder": {getter: getReturnsInt{}, wantMsg: "the request returned by Get: int has no method Namespace(string) int"},
		"request has no Watch": {
			getter:  badReq{},
			wantMsg: "the request returned by Get: *cache.reqNoWatch has no method Watch(context.Context) (watch.Interface, error)",
		},
		"VersionedParams without a codec": {
			getter:  reqBadParams{},
			wantMsg: "*cache.reqStringWatch.VersionedParams is func(*cache.reqStringWatch, *v1.ListOptions) *cache.reqStringWatch, want VersionedParams(*v1.ListOptions, runtime.ParameterCodec) *cache.reqStringWatch",
		},
		"Do's result has no Get": {
			getter:  reqBadResult{},
			wantMsg: "the result returned by Do: cache.resultNoGet has no method Get() (runtime.Object, error)",
		},
		"a plain string": {getter: "https://example.invalid", wantMsg: "string has no method Get()"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			lw := NewListWatchFromClient(tc.getter, "pods", "ns", fields.Everything())
			ctx := context.Background()
			_, e1 := lw.List(metav1.ListOptions{})
			_, e2 := lw.ListWithContext(ctx, metav1.ListOptions{})
			_, e3 := lw.Watch(metav1.ListOptions{})
			_, e4 := lw.WatchWithContext(ctx, metav1.ListOptions{})
			for i, err := range []error{e1, e2, e3, e4} {
				if !errors.Is(err, errInvalidGetter) {
					t.Errorf("call %d: error %v does not wrap errInvalidGetter", i, err)
					continue
				}
				if !strings.Contains(err.Error(), tc.wantMsg) {
					t.Errorf("call %d: error %q does not contain %q", i, err, tc.wantMsg)
				}
				wantPrefix := "listing pods: invalid Getter: "
				if i >= 2 {
					wantPrefix = "watching pods: invalid Getter: "
				}
				if !strings.HasPrefix(err.Error(), wantPrefix) {
					t.Errorf("call %d: error %q does not start with %q", i, err, wantPrefix)
				}
			}
		})
	}
}

func TestListWatch_GetterFailuresAtRequestTimeBecomeErrors(t *testing.T) {
	tests := map[string]struct {
		getter  Getter
		wantMsg string
	}{
		"Get panics": {
			getter:  panickyGetter{},
			wantMsg: "client panicked: no connection configured",
		},
		"Get returns a nil request whose methods dereference it": {
			getter:  nilReqGetter{},
			wantMsg: "client panicked: runtime error: invalid memory address or nil pointer dereference",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			lw := NewListWatchFromClient(tc.getter, "pods", "", fields.Everything())
			_, listErr := lw.List(metav1.ListOptions{})
			_, watchErr := lw.Watch(metav1.ListOptions{})
			for op, err := range map[string]error{"listing pods: ": listErr, "watching pods: ": watchErr} {
				if err == nil || !strings.HasPrefix(err.Error(), op) || !strings.Contains(err.Error(), tc.wantMsg) {
					t.Errorf("error = %v, want %q...%q", err, op, tc.wantMsg)
				}
			}
		})
	}
}

func TestListWatch_WatchWithoutWatchOrErrorIsAnError(t *testing.T) {
	lw := NewListWatchFromClient(&fakeRESTClient{}, "pods", "", fields.Everything())
	if _, err := lw.Watch(metav1.ListOptions{}); err == nil || !strings.Contains(err.Error(), "neither a watch nor an error") {
		t.Errorf("error = %v, want one saying the client returned nothing", err)
	}
}

func TestListWatch_FromClientIsSafeForConcurrentUse(t *testing.T) {
	client := &fakeRESTClient{list: &v1.PodList{}, watcher: watch.NewFake()}
	lw := NewListWatchFromClient(client, "pods", "ns", fields.Everything())
	const workers = 8
	var wg sync.WaitGroup
	errs := make(chan error, 2*workers)
	for range workers {
		wg.Go(func() {
			_, err := lw.ListWithContext(context.Background(), metav1.ListOptions{})
			errs <- err
			_, err = lw.WatchWithContext(context.Background(), metav1.ListOptions{})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if got := len(client.requests()); got != 2*workers {
		t.Errorf("%d requests sent, want %d", got, 2*workers)
	}
}

// BenchmarkListWatch_FromClientList measures what the reflective request
// chain adds to a list call (the fake client itself does almost nothing).
func BenchmarkListWatch_FromClientList(b *testing.B) {
	client := &fakeRESTClient{list: &v1.PodList{}, discard: true}
	lw := NewListWatchFromClient(client, "pods", "ns", fields.Everything())
	opts := metav1.ListOptions{ResourceVersion: "0", Limit: 500}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := lw.List(opts); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkListWatch_DirectList is the same request without reflection, the
// baseline for BenchmarkListWatch_FromClientList.
func BenchmarkListWatch_DirectList(b *testing.B) {
	client := &fakeRESTClient{list: &v1.PodList{}, discard: true}
	opts := metav1.ListOptions{ResourceVersion: "0", Limit: 500}
	b.ReportAllocs()
	for b.Loop() {
		o := opts
		o.FieldSelector = fields.Everything().String()
		_, err := client.Get().Namespace("ns").Resource("pods").
			VersionedParams(&o, metav1.ParameterCodec).Do(context.Background()).Get()
		if err != nil {
			b.Fatal(err)
		}
	}
}
