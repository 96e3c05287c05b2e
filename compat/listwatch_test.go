package compat_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	cache "github.com/kcache/cache"
)

// TestMain fails the tests if any goroutine (a watch decoder, an HTTP
// connection) outlives them.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func pod(name, node, rv string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: name, ResourceVersion: rv},
		Spec:       v1.PodSpec{NodeName: node},
	}
}

// startAPIServer serves srv over HTTP and returns a real clientset talking
// to it; everything is torn down when the test ends.
func startAPIServer(t *testing.T, srv *podServer) *kubernetes.Clientset {
	t.Helper()
	ts := httptest.NewServer(srv)
	httpClient := ts.Client()
	t.Cleanup(func() {
		httpClient.CloseIdleConnections()
		ts.Close()
	})
	clientset, err := kubernetes.NewForConfigAndClient(&rest.Config{Host: ts.URL}, httpClient)
	if err != nil {
		t.Fatalf("building the clientset: %v", err)
	}
	return clientset
}

// metav1ListAll lists everything, as the tests' lists do.
var metav1ListAll = metav1.ListOptions{}

func TestNewListWatchFromClient_ListsOverTheWire(t *testing.T) {
	tests := map[string]struct {
		namespace string
		selector  fields.Selector
		list      func(lw *cache.ListWatch, opts metav1.ListOptions) (any, error)
		wantPath  string
		wantQuery url.Values
	}{
		"List in a namespace, every field": {
			namespace: "ns1",
			selector:  fields.Everything(),
			list: func(lw *cache.ListWatch, o metav1.ListOptions) (any, error) {
				return lw.List(o)
			},
			wantPath:  "/api/v1/namespaces/ns1/pods",
			wantQuery: url.Values{"resourceVersion": {"0"}, "limit": {"500"}},
		},
		"ListWithContext in a namespace with a field selector": {
			namespace: "ns1",
			selector:  fields.OneTermEqualSelector("spec.nodeName", "node-1"),
			list: func(lw *cache.ListWatch, o metav1.ListOptions) (any, error) {
				return lw.ListWithContext(context.Background(), o)
			},
			wantPath:  "/api/v1/namespaces/ns1/pods",
			wantQuery: url.Values{"resourceVersion": {"0"}, "limit": {"500"}, "fieldSelector": {"spec.nodeName=node-1"}},
		},
		"ListFunc field across all namespaces": {
			selector: fields.OneTermNotEqualSelector("status.phase", "Succeeded"),
			list: func(lw *cache.ListWatch, o metav1.ListOptions) (any, error) {
				return lw.ListFunc(o)
			},
			wantPath:  "/api/v1/pods",
			wantQuery: url.Values{"resourceVersion": {"0"}, "limit": {"500"}, "fieldSelector": {"status.phase!=Succeeded"}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			srv := newPodServer(t)
			clientset := startAPIServer(t, srv)
			lw := cache.NewListWatchFromClient(clientset.CoreV1().RESTClient(), "pods", tc.namespace, tc.selector)

			got, err := tc.list(lw, metav1.ListOptions{ResourceVersion: "0", Limit: 500})
			if err != nil {
				t.Fatalf("list: %v", err)
			}
			list, ok := got.(*v1.PodList)
			if !ok {
				t.Fatalf("list returned %T, want *v1.PodList", got)
			}
			if diff := cmp.Diff(srv.list(t), list); diff != "" {
				t.Errorf("list (-want +got):\n%s", diff)
			}
			want := []seenRequest{{Path: tc.wantPath, Query: tc.wantQuery}}
			if diff := cmp.Diff(want, srv.requests()); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNewListWatchFromClient_WatchesOverTheWire(t *testing.T) {
	tests := map[string]struct {
		namespace string
		selector  fields.Selector
		watch     func(lw *cache.ListWatch, opts metav1.ListOptions) (watch.Interface, error)
		wantPath  string
		wantQuery url.Values
	}{
		"Watch in a namespace with a field selector": {
			namespace: "ns1",
			selector:  fields.OneTermEqualSelector("spec.nodeName", "node-1"),
			watch: func(lw *cache.ListWatch, o metav1.ListOptions) (watch.Interface, error) {
				return lw.Watch(o)
			},
			wantPath: "/api/v1/namespaces/ns1/pods",
			wantQuery: url.Values{
				"watch": {"true"}, "resourceVersion": {"2"}, "allowWatchBookmarks": {"true"},
				"fieldSelector": {"spec.nodeName=node-1"},
			},
		},
		"WatchWithContext across all namespaces": {
			selector: fields.Everything(),
			watch: func(lw *cache.ListWatch, o metav1.ListOptions) (watch.Interface, error) {
				return lw.WatchWithContext(context.Background(), o)
			},
			wantPath:  "/api/v1/pods",
			wantQuery: url.Values{"watch": {"true"}, "resourceVersion": {"2"}, "allowWatchBookmarks": {"true"}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			srv := newPodServer(t)
			clientset := startAPIServer(t, srv)
			lw := cache.NewListWatchFromClient(clientset.CoreV1().RESTClient(), "pods", tc.namespace, tc.selector)

			w, err := tc.watch(lw, metav1.ListOptions{ResourceVersion: "2", AllowWatchBookmarks: true})
			if err != nil {
				t.Fatalf("watch: %v", err)
			}
			var got []watch.Event
			for range srv.events {
				ev, ok := <-w.ResultChan()
				if !ok {
					t.Fatalf("watch closed after %d events", len(got))
				}
				got = append(got, ev)
			}
			w.Stop()
			// client-go may report the closed body as one error event;
			// nothing else may follow Stop, and the channel must close.
			for ev := range w.ResultChan() {
				if ev.Type != watch.Error {
					t.Errorf("event after Stop: %v", ev)
				}
			}
			if diff := cmp.Diff(srv.events, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			want := []seenRequest{{Path: tc.wantPath, Query: tc.wantQuery}}
			if diff := cmp.Diff(want, srv.requests()); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNewFilteredListWatchFromClient_ModifierReachesTheWire(t *testing.T) {
	srv := newPodServer(t)
	clientset := startAPIServer(t, srv)
	lw := cache.NewFilteredListWatchFromClient(clientset.CoreV1().RESTClient(), "pods", "ns1", func(o *metav1.ListOptions) {
		o.LabelSelector = "app=web"
	})
	if _, err := lw.List(metav1.ListOptions{}); err != nil {
		t.Fatalf("list: %v", err)
	}
	want := []seenRequest{{Path: "/api/v1/namespaces/ns1/pods", Query: url.Values{"labelSelector": {"app=web"}}}}
	if diff := cmp.Diff(want, srv.requests()); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

func TestNewListWatchFromClient_ContextReachesTheRequest(t *testing.T) {
	srv := newPodServer(t)
	clientset := startAPIServer(t, srv)
	lw := cache.NewListWatchFromClient(clientset.CoreV1().RESTClient(), "pods", "ns1", fields.Everything())

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := lw.ListWithContext(cancelled, metav1.ListOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("list with a cancelled context: error = %v, want context.Canceled", err)
	}

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	w, err := lw.WatchWithContext(ctx, metav1.ListOptions{ResourceVersion: "2"})
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	defer w.Stop()
	for range srv.events {
		if _, ok := <-w.ResultChan(); !ok {
			t.Fatalf("watch closed early")
		}
	}
	stop()
	// Cancelling the context must end the stream without a call to Stop.
	for ev := range w.ResultChan() {
		if ev.Type != watch.Error {
			t.Errorf("event after cancel: %v", ev)
		}
	}
}

func TestNewListWatchFromClient_InvalidGetterGivesAClearError(t *testing.T) {
	srv := newPodServer(t)
	clientset := startAPIServer(t, srv)
	tests := map[string]struct {
		getter  cache.Getter
		wantMsg string
	}{
		"nil": {
			getter:  nil,
			wantMsg: "invalid Getter: <nil>: the client is nil",
		},
		"a typed client instead of its RESTClient": {
			getter:  clientset.CoreV1(),
			wantMsg: "invalid Getter: *v1.CoreV1Client: *v1.CoreV1Client has no method Get()",
		},
		"a resource interface, whose Get fetches one object": {
			getter:  clientset.CoreV1().Pods("ns1"),
			wantMsg: "invalid Getter: *v1.pods: *v1.pods.Get is func(*v1.pods, context.Context, string, v1.GetOptions) (*v1.Pod, error), want Get() interface {}",
		},
		"the fake clientset's RESTClient, a nil pointer": {
			getter:  fake.NewClientset().CoreV1().RESTClient(),
			wantMsg: "invalid Getter: *rest.RESTClient: the client is a nil *rest.RESTClient",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			lw := cache.NewListWatchFromClient(tc.getter, "pods", "ns1", fields.Everything())
			_, listErr := lw.List(metav1.ListOptions{})
			_, watchErr := lw.WatchWithContext(context.Background(), metav1.ListOptions{})
			for op, err := range map[string]error{"listing pods: ": listErr, "watching pods: ": watchErr} {
				if want := op + tc.wantMsg; err == nil || !strings.HasPrefix(err.Error(), want) {
					t.Errorf("error = %v\nwant it to start with %q", err, want)
				}
			}
		})
	}
	if got := srv.requests(); len(got) != 0 {
		t.Errorf("invalid getters sent requests: %v", got)
	}
}

// watchListProbe is the capability method client-go's fake clients have.
type watchListProbe interface {
	IsWatchListSemanticsUnSupported() bool
}

func TestToListWatcherWithWatchListSemantics_ReadsClientGoClients(t *testing.T) {
	srv := newPodServer(t)
	real := startAPIServer(t, srv)
	tests := map[string]struct {
		client    any
		wantLacks bool
	}{
		"real clientset can stream lists":      {client: real},
		"fake clientset says it cannot":        {client: fake.NewClientset(), wantLacks: true},
		"nil client is assumed to stream them": {client: nil},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			lw := cache.NewListWatchFromClient(real.CoreV1().RESTClient(), "pods", "ns1", fields.Everything())
			wrapped := cache.ToListWatcherWithWatchListSemantics(lw, tc.client)
			probe, ok := wrapped.(watchListProbe)
			if !ok {
				t.Fatalf("%T has no IsWatchListSemanticsUnSupported method", wrapped)
			}
			if got := probe.IsWatchListSemanticsUnSupported(); got != tc.wantLacks {
				t.Errorf("IsWatchListSemanticsUnSupported = %v, want %v", got, tc.wantLacks)
			}
			if _, err := wrapped.List(metav1.ListOptions{}); err != nil {
				t.Errorf("List through the wrapper: %v", err)
			}
		})
	}
}
