package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	cache "github.com/kcache/cache"
	"github.com/kcache/cache/examples/internal/simcluster"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// source is where the demo's Pods come from: the simulated cluster or a
// real one.
type source struct {
	// lw lists and watches Pods, observed by a listObserver.
	lw cache.ListerWatcher
	// description says in a few words what the source is.
	description string
	// sim is the simulated cluster, nil for a real one.
	sim *simcluster.Cluster
	// churn changes the simulated cluster; nil for a real one.
	churn *simcluster.Churn
}

// newSimSource builds a simulated cluster holding cfg.pods Pods, with a
// Churn that changes it at cfg.rate and reports its misbehaviours to con.
func newSimSource(cfg config, con *console, obs *listObserver) (*source, error) {
	c := simcluster.New(simcluster.Options{ListLatency: cfg.listLatency, StreamingLists: cfg.streamingList})
	gen := simcluster.NewGenerator(cfg.seed)
	if err := simcluster.Populate(c, gen.InitialPods(cfg.pods)); err != nil {
		return nil, err
	}
	churn := simcluster.NewChurn(c, gen, simcluster.ChurnOptions{
		Rate:        cfg.rate,
		Target:      cfg.pods,
		DropEvery:   cfg.dropEvery,
		ExpireEvery: cfg.expireEvery,
		OnMisbehave: func(what string) { con.Linef("SIM", "%s", what) },
	})
	obs.expectTotal = c.Len
	lists := "paginated lists"
	if cfg.streamingList {
		lists = "streaming lists"
	}
	return &source{
		lw:          cache.ToListWatcherWithWatchListSemantics(obs.wrap(c.ListWatch()), c),
		description: fmt.Sprintf("simulated cluster: %s pods, ~%g changes/s, %s, seed %d", thousands(cfg.pods), cfg.rate, lists, cfg.seed),
		sim:         c,
		churn:       churn,
	}, nil
}

// newKubeSource connects to the cluster of cfg.kubeconfig, or to the
// cluster the demo runs in, through a client-go clientset.
func newKubeSource(cfg config, obs *listObserver) (*source, error) {
	var (
		restConfig *rest.Config
		err        error
		where      string
	)
	if cfg.kubeconfig != "" {
		restConfig, err = clientcmd.BuildConfigFromFlags("", cfg.kubeconfig)
		where = cfg.kubeconfig
	} else {
		restConfig, err = rest.InClusterConfig()
		where = "in-cluster config"
	}
	if err != nil {
		return nil, fmt.Errorf("loading %s: %w", where, err)
	}
	clientset, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return nil, fmt.Errorf("creating a clientset: %w", err)
	}
	pods := clientset.CoreV1().Pods(cfg.namespace)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return pods.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return pods.Watch(ctx, opts)
		},
	}
	ns := cfg.namespace
	if ns == "" {
		ns = "all namespaces"
	}
	return &source{
		lw:          obs.wrap(lw),
		description: fmt.Sprintf("cluster at %s (%s, from %s)", restConfig.Host, ns, where),
	}, nil
}

// listProgress is how far one list has got.
type listProgress struct {
	// initial says this is the first list, the informer's initial sync.
	initial bool
	// streamed says the list is a streaming list (a watch), not pages.
	streamed bool
	pages    int
	items    int
	// total is the expected number of items, or -1 when unknown.
	total   int
	done    bool
	elapsed time.Duration
}

// listObserver sees the list requests a reflector makes, so that the demo
// can draw the initial sync's progress and count relists. report is
// called on the reflector's goroutine, once per page (or every
// streamReportEvery streamed items) and once when a list completes.
type listObserver struct {
	report func(listProgress)
	// expectTotal, if set, tells how many items a streaming list will
	// bring, which the stream itself does not say.
	expectTotal func() int

	// mu guards cur and started.
	mu      sync.Mutex
	cur     listProgress
	started time.Time

	// completed counts lists that completed, the initial one included.
	completed atomic.Int64
}

// streamReportEvery is how many streamed items make a progress report.
const streamReportEvery = 250

// relists returns how many lists completed after the initial one.
func (o *listObserver) relists() int64 { return max(0, o.completed.Load()-1) }

// wrap returns lw with its list and watch functions observed.
func (o *listObserver) wrap(lw *cache.ListWatch) *cache.ListWatch {
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			obj, err := lw.ListWithContext(ctx, opts)
			if err == nil {
				o.page(opts.Continue == "", obj)
			}
			return obj, err
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			w, err := lw.WatchWithContext(ctx, opts)
			if err != nil || opts.SendInitialEvents == nil || !*opts.SendInitialEvents {
				return w, err
			}
			return o.stream(w), nil
		},
	}
}

// page records one page of a list.
func (o *listObserver) page(first bool, obj runtime.Object) {
	acc, err := meta.ListAccessor(obj)
	if err != nil {
		return
	}
	n := meta.LenList(obj)
	o.mu.Lock()
	if first {
		o.started = time.Now()
		o.cur = listProgress{initial: o.completed.Load() == 0, total: -1}
	}
	o.cur.pages++
	o.cur.items += n
	if first {
		switch rest := acc.GetRemainingItemCount(); {
		case rest != nil:
			o.cur.total = n + int(*rest)
		case acc.GetContinue() == "":
			o.cur.total = n
		}
	}
	o.cur.done = acc.GetContinue() == ""
	o.cur.elapsed = time.Since(o.started)
	p := o.cur
	o.mu.Unlock()
	o.publish(p)
}

func (o *listObserver) publish(p listProgress) {
	if p.done {
		o.completed.Add(1)
	}
	if o.report != nil {
		o.report(p)
	}
}

// stream returns w observed: ADDED events are counted as streamed list
// items until the bookmark that ends the initial state.
func (o *listObserver) stream(w watch.Interface) watch.Interface {
	o.mu.Lock()
	o.started = time.Now()
	o.cur = listProgress{initial: o.completed.Load() == 0, streamed: true, total: -1}
	if o.expectTotal != nil {
		o.cur.total = o.expectTotal()
	}
	o.mu.Unlock()
	sw := &observedStream{inner: w, result: make(chan watch.Event), stopped: make(chan struct{})}
	go sw.run(o)
	return sw
}

// observedStream forwards a streaming list's events and counts them.
type observedStream struct {
	inner    watch.Interface
	result   chan watch.Event
	stopped  chan struct{}
	stopOnce sync.Once
}

func (s *observedStream) ResultChan() <-chan watch.Event { return s.result }

func (s *observedStream) Stop() {
	s.stopOnce.Do(func() {
		close(s.stopped)
		s.inner.Stop()
	})
}

func (s *observedStream) run(o *listObserver) {
	defer close(s.result)
	initial := true
	for ev := range s.inner.ResultChan() {
		if initial {
			initial = o.streamed(ev)
		}
		select {
		case s.result <- ev:
		case <-s.stopped:
			return
		}
	}
}

// streamed records one event of a streaming list and reports whether the
// initial state is still being streamed.
func (o *listObserver) streamed(ev watch.Event) bool {
	o.mu.Lock()
	switch {
	case ev.Type == watch.Added:
		o.cur.items++
		if o.cur.items%streamReportEvery != 0 {
			o.mu.Unlock()
			return true
		}
	case ev.Type == watch.Bookmark && isInitialEventsEnd(ev.Object):
		o.cur.done = true
		o.cur.total = o.cur.items
	default:
		o.mu.Unlock()
		return true
	}
	o.cur.elapsed = time.Since(o.started)
	p := o.cur
	o.mu.Unlock()
	o.publish(p)
	return !p.done
}

func isInitialEventsEnd(obj runtime.Object) bool {
	acc, err := meta.Accessor(obj)
	return err == nil && acc.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true"
}
