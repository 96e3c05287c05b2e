package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	pkgruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// byteCounter counts the response body bytes one client reads (after the
// transport undid any gzip), lists and watch streams alike.
type byteCounter struct{ n atomic.Int64 }

// wrap is a rest.Config WrapTransport function.
func (c *byteCounter) wrap(next http.RoundTripper) http.RoundTripper {
	return countingTransport{next: next, counter: c}
}

// countingTransport hands every response body to its counter.
type countingTransport struct {
	next    http.RoundTripper
	counter *byteCounter
}

func (t countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if resp != nil && resp.Body != nil {
		resp.Body = &countingBody{ReadCloser: resp.Body, counter: t.counter}
	}
	return resp, err
}

// countingBody adds what is read through it to its counter.
type countingBody struct {
	io.ReadCloser
	counter *byteCounter
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.counter.n.Add(int64(n))
	return n, err
}

// countedClient returns a clientset of its own (own connections) whose
// received bytes are counted.
func (s *server) countedClient(t testing.TB) (kubernetes.Interface, *byteCounter) {
	t.Helper()
	config := rest.CopyConfig(s.config)
	counter := &byteCounter{}
	config.Wrap(counter.wrap)
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		t.Fatalf("build counted clientset: %v", err)
	}
	return client, counter
}

// protobufClient returns a clientset that writes and reads protobuf, the
// cheapest encoding for the server and for a client under -race; the
// sharding tests write their pods with it.
func (s *server) protobufClient(t testing.TB) kubernetes.Interface {
	t.Helper()
	config := rest.CopyConfig(s.config)
	config.ContentType = "application/vnd.kubernetes.protobuf"
	config.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		t.Fatalf("build protobuf clientset: %v", err)
	}
	return client
}

// countingLW is a ListerWatcher over list and watch functions that counts
// the objects it receives: the items of every list answer and the object
// events (added, modified, deleted) of every watch, initial events of a
// streaming list included. Below a ShardedListerWatcher that is what the
// client decoded, before any filtering on the client. listOnly makes it
// report that it lacks streaming-list semantics, so that a Reflector lists
// and then watches instead.
type countingLW struct {
	list     listFunc
	watch    watchFunc
	listOnly bool
	decoded  atomic.Int64
}

func (c *countingLW) List(options metav1.ListOptions) (pkgruntime.Object, error) {
	return c.ListWithContext(context.Background(), options)
}

func (c *countingLW) Watch(options metav1.ListOptions) (watch.Interface, error) {
	return c.WatchWithContext(context.Background(), options)
}

func (c *countingLW) ListWithContext(ctx context.Context, options metav1.ListOptions) (pkgruntime.Object, error) {
	list, err := c.list(ctx, options)
	if err == nil {
		c.decoded.Add(int64(meta.LenList(list)))
	}
	return list, err
}

func (c *countingLW) WatchWithContext(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
	w, err := c.watch(ctx, options)
	if err != nil || w == nil {
		return w, err
	}
	return newCountingWatch(w, &c.decoded), nil
}

// IsWatchListSemanticsUnSupported reports listOnly.
func (c *countingLW) IsWatchListSemanticsUnSupported() bool { return c.listOnly }

// countingWatch passes a watch's events on, counting the object events.
type countingWatch struct {
	inner   watch.Interface
	counter *atomic.Int64
	out     chan watch.Event
	// done is closed by Stop; once guards the close.
	done chan struct{}
	once sync.Once
}

func newCountingWatch(inner watch.Interface, counter *atomic.Int64) *countingWatch {
	w := &countingWatch{inner: inner, counter: counter, out: make(chan watch.Event), done: make(chan struct{})}
	go w.forward()
	return w
}

func (w *countingWatch) forward() {
	defer close(w.out)
	for {
		select {
		case <-w.done:
			return
		case ev, ok := <-w.inner.ResultChan():
			if !ok {
				return
			}
			switch ev.Type {
			case watch.Added, watch.Modified, watch.Deleted:
				w.counter.Add(1)
			}
			select {
			case w.out <- ev:
			case <-w.done:
				return
			}
		}
	}
}

func (w *countingWatch) ResultChan() <-chan watch.Event { return w.out }

func (w *countingWatch) Stop() {
	w.once.Do(func() { close(w.done) })
	w.inner.Stop()
}

// heapAfterGC returns the live heap after a full collection.
func heapAfterGC() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// mib formats a byte count in MiB.
func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
