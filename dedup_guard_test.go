package cache

import (
	"context"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/kcache/cache/internal/dedup"
	fcache "github.com/kcache/cache/testing"
)

// kickedGuards makes every guard run during the test run a round only
// when kicked, and returns them as they start.
func kickedGuards(t *testing.T) <-chan *kicked {
	made := make(chan *kicked, 4)
	runGuard = func(g *dedup.Guard, ctx context.Context) {
		k := &kicked{kick: make(chan struct{}), done: make(chan int)}
		made <- k
		k.serve(ctx, func() int { return g.Round(ctx) })
	}
	t.Cleanup(func() { runGuard = (*dedup.Guard).Run })
	return made
}

// logLines is a logger that keeps its lines.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) logger() klog.Logger {
	return funcr.New(func(prefix, args string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.lines = append(l.lines, prefix+" "+args)
	}, funcr.Options{})
}

func (l *logLines) find(s string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range l.lines {
		if strings.Contains(line, s) {
			return line
		}
	}
	return ""
}

// A write into a shared part of a cached pod (against the contract) is
// found by the guard, logged with its field path and the number of cached
// objects sharing it, and repaired by a relist: every cached pod equals
// the server's again, and the index serves each under its own labels.
func TestDedupGuard_FindsAndRepairsAWrite(t *testing.T) {
	eagerDedup(t)
	guards := kickedGuards(t)
	src := fcache.NewFakeControllerSource()
	t.Cleanup(src.Shutdown)
	for i := range 6 {
		src.Add(safetyPod("web", i))
		src.Add(safetyPod("db", i))
	}
	byApp := func(obj interface{}) ([]string, error) { return []string{obj.(*v1.Pod).Labels["app"]}, nil }
	inf := NewSharedIndexInformer(src, &v1.Pod{}, 0, Indexers{"app": byApp})
	var logs logLines
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logs.logger()))
	done := make(chan struct{})
	go func() {
		defer close(done)
		inf.RunWithContext(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })
	if !WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("no sync")
	}
	g := <-guards
	pods := cachedPods(t, inf)
	web0 := pods[len(pods)-6]
	if web0.Labels["app"] != "web" || !sameMap(web0.Labels, pods[len(pods)-1].Labels) {
		t.Fatalf("pod %s's labels are not shared with its app's: the test proves nothing", web0.Name)
	}
	g.kick <- struct{}{}
	if n := <-g.done; n != 0 {
		t.Fatalf("the guard found %d changed values before any write", n)
	}
	watches := src.Stats().Watches

	web0.Labels["app"] = "hijacked" // against the contract

	g.kick <- struct{}{}
	if n := <-g.done; n != 1 {
		t.Fatalf("the guard found %d changed values after one write, want 1", n)
	}
	line := logs.find("A cached object was modified")
	for _, want := range []string{`"fieldPath"="metadata.labels"`, `"objects"=6`, `"type"="*v1.Pod"`} {
		if !strings.Contains(line, want) {
			t.Errorf("log line %q lacks %s", line, want)
		}
	}
	waitFor(t, func() bool { return src.Stats().Watches > watches && cachedEqualsServer(t, inf, src) })
	for _, app := range []string{"web", "db"} {
		objs, err := inf.GetIndexer().ByIndex("app", app)
		if err != nil {
			t.Fatal(err)
		}
		for _, obj := range objs {
			if got := obj.(*v1.Pod).Labels["app"]; got != app {
				t.Errorf("index %q serves %s, labelled %q", app, obj.(*v1.Pod).Name, got)
			}
		}
		if len(objs) != 6 {
			t.Errorf("index %q serves %d pods, want 6", app, len(objs))
		}
	}
	g.kick <- struct{}{}
	if n := <-g.done; n != 0 {
		t.Errorf("after the repair the guard still finds %d changed values", n)
	}
}

// cachedEqualsServer reports whether every object inf caches equals the
// source's, and no other is cached.
func cachedEqualsServer(t *testing.T, inf SharedIndexInformer, src *fcache.FakeControllerSource) bool {
	list, err := src.List(metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	items := list.(*v1.List).Items
	if len(items) != len(inf.GetStore().List()) {
		return false
	}
	for _, raw := range items {
		want := raw.Object.(*v1.Pod)
		got, ok, _ := inf.GetStore().GetByKey(want.Namespace + "/" + want.Name)
		if !ok || !reflect.DeepEqual(got, want) {
			return false
		}
	}
	return true
}

// Unchanged values are never reported, however many rounds run, and a
// guard stops with its context.
func TestDedupGuard_QuietOnUnchangedValues(t *testing.T) {
	s := eagerTable()
	store := NewStore(MetaNamespaceKeyFunc)
	for i := range 200 {
		if err := store.Add(s.Share(quantityPod(i))); err != nil {
			t.Fatal(err)
		}
	}
	g := sharedGuard(s, store, InformerNameAndResource{}, nil)
	for range 3 {
		if n := g.Round(context.Background()); n != 0 {
			t.Fatalf("%d unchanged values reported", n)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		g.Run(ctx)
	}()
	time.Sleep(20 * time.Millisecond)
	cancel()
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("the guard did not stop with its context")
	}
}

// guardMetrics is an InformerMetricsProvider that also counts changed
// shared values.
type guardMetrics struct {
	noopInformerMetricsProvider
	changed *countingMetric
}

type countingMetric struct{ n int }

func (c *countingMetric) Inc() { c.n++ }

func (m guardMetrics) NewSharedValueChangedMetric(InformerNameAndResource) CounterMetric {
	return m.changed
}

// A changed shared value is counted by a SharedValueMetricsProvider, for
// an informer with a registered name.
func TestDedupGuard_CountsChangedValues(t *testing.T) {
	name, err := NewInformerName("guard-metrics-test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(name.Release)
	id := name.WithResource(v1.SchemeGroupVersion.WithResource("pods"))
	s := eagerTable()
	store := NewStore(MetaNamespaceKeyFunc)
	for i := range 3 {
		if err := store.Add(s.Share(safetyPod("web", i))); err != nil {
			t.Fatal(err)
		}
	}
	metrics := guardMetrics{changed: &countingMetric{}}
	g := sharedGuard(s, store, id, metrics)
	obj, _, _ := store.GetByKey("ns/web-0")
	obj.(*v1.Pod).Labels["tier"] = "x"
	if n := g.Round(klog.NewContext(context.Background(), klog.Background().V(10))); n != 1 || metrics.changed.n != 1 {
		t.Errorf("round found %d, counter %d; want 1 and 1", n, metrics.changed.n)
	}
}
