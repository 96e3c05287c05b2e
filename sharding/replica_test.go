package sharding

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"maps"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	framework "github.com/kcache/cache/testing"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Short membership timings, so that a replica's Lease expires within the
// test: LeaseDuration must be whole seconds.
const (
	testLeaseDuration = 2 * time.Second
	testRenewDeadline = time.Second
	testRetryPeriod   = 200 * time.Millisecond
	testNamespace     = "kube-system"
	testGroup         = "pods"
)

// replica is one manager of the group, reconciling Pods on a Sharder.
type replica struct {
	identity string
	sharder  *Sharder
	mgr      manager.Manager
	rec      *podRecorder
	cancel   context.CancelFunc
	// done receives the manager's Start result.
	done     chan error
	stopOnce sync.Once
	stopErr  error
}

// startReplica starts a manager called identity against srv, whose
// membership keeps its Lease through leases.
func startReplica(t *testing.T, srv *podServer, leases *fake.Clientset, identity string) *replica {
	t.Helper()
	s, err := New(testOptions(leases, identity))
	if err != nil {
		t.Fatalf("New(%s): %v", identity, err)
	}
	mgr, err := manager.New(srv.config(), manager.Options{
		Scheme: scheme.Scheme,
		MapperProvider: func(*rest.Config, *http.Client) (meta.RESTMapper, error) {
			return podMapper(), nil
		},
		Metrics: metricsserver.Options{BindAddress: "0"},
		Cache:   cache.Options{NewInformer: s.NewInformer},
		Logger:  logr.Discard(),
	})
	if err != nil {
		t.Fatalf("manager.New(%s): %v", identity, err)
	}
	if err := s.SetupWithManager(mgr); err != nil {
		t.Fatalf("SetupWithManager(%s): %v", identity, err)
	}
	rec := &podRecorder{cache: mgr.GetClient(), truth: srv.pods, latest: map[string]string{}}
	err = builder.ControllerManagedBy(mgr).
		For(&corev1.Pod{}).
		Named("pods").
		WithOptions(controller.Options{SkipNameValidation: ptr.To(true)}).
		Complete(s.Reconciler(mgr.GetAPIReader(), &corev1.Pod{}, rec))
	if err != nil {
		t.Fatalf("building the controller of %s: %v", identity, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &replica{identity: identity, sharder: s, mgr: mgr, rec: rec, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- mgr.Start(ctx) }()
	t.Cleanup(func() { _ = r.stop() })
	return r
}

// stop stops the manager and returns what its Start returned; later calls
// return the same.
func (r *replica) stop() error {
	r.stopOnce.Do(func() {
		r.cancel()
		r.stopErr = <-r.done
	})
	return r.stopErr
}

// keys returns the keys of the Pods the replica's cache holds.
func (r *replica) keys(ctx context.Context) ([]string, error) {
	var pods corev1.PodList
	if err := r.mgr.GetCache().List(ctx, &pods); err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(pods.Items))
	for _, p := range pods.Items {
		keys = append(keys, p.Namespace+"/"+p.Name)
	}
	return keys, nil
}

// reconcileTime is how long the test's reconciler works on one request.
const reconcileTime = 10 * time.Millisecond

// podRecorder is the reconciler the replicas wrap: it records the newest
// resourceVersion it reconciled per Pod, and every request it was given
// for a Pod its cache lacks although the server has it (a move taken for
// a deletion).
type podRecorder struct {
	cache client.Reader
	truth *framework.FakeControllerSource

	// mu guards latest, mistaken and calls.
	mu       sync.Mutex
	latest   map[string]string
	mistaken []string
	calls    int
}

func (p *podRecorder) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	// A slow reconciler keeps requests queued while the shards move.
	time.Sleep(reconcileTime)
	var pod corev1.Pod
	err := p.cache.Get(ctx, req.NamespacedName, &pod)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls++
	switch {
	case apierrors.IsNotFound(err):
		if _, exists := p.truth.Get(req.Namespace, req.Name); exists {
			p.mistaken = append(p.mistaken, req.String())
		}
	case err != nil:
		return reconcile.Result{}, err
	default:
		p.latest[req.String()] = pod.ResourceVersion
	}
	return reconcile.Result{}, nil
}

// reconciled returns the newest resourceVersion reconciled per Pod key.
func (p *podRecorder) reconciled() (map[string]string, []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.latest), slices.Clone(p.mistaken)
}

// count returns how many requests the reconciler was given.
func (p *podRecorder) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls
}

// settled checks the promise once the group is settled: every replica
// claims shard i of len(group), the caches are disjoint and their union is
// the server's list.
func settled(ctx context.Context, group []*replica, truth *framework.FakeControllerSource) error {
	owner := map[string]string{}
	for _, r := range group {
		if a := r.sharder.Assignment(); !a.Claiming() || a.Count != len(group) {
			return fmt.Errorf("%s claims %+v, want one of %d shards", r.identity, a, len(group))
		}
		keys, err := r.keys(ctx)
		if err != nil {
			return fmt.Errorf("%s: %w", r.identity, err)
		}
		for _, k := range keys {
			if other, dup := owner[k]; dup {
				return fmt.Errorf("%s is held by %s and %s", k, other, r.identity)
			}
			owner[k] = r.identity
		}
	}
	got := make([]string, 0, len(owner))
	for k := range owner {
		got = append(got, k)
	}
	slices.Sort(got)
	want, err := truthKeys(truth)
	if err != nil {
		return err
	}
	if diff := cmp.Diff(want, got); diff != "" {
		return fmt.Errorf("the union of the caches is not the server's list (-server +caches):\n%s", diff)
	}
	return nil
}

// truthKeys returns the sorted keys of the server's Pods.
func truthKeys(truth *framework.FakeControllerSource) ([]string, error) {
	list, err := truth.List(metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(items))
	for _, item := range items {
		m, err := meta.Accessor(item)
		if err != nil {
			return nil, err
		}
		keys = append(keys, m.GetNamespace()+"/"+m.GetName())
	}
	slices.Sort(keys)
	return keys, nil
}

// allReconciled checks that every Pod of the server was reconciled by some
// replica at its current resourceVersion, and that no replica was handed
// a live Pod its cache lacked.
func allReconciled(group []*replica, truth *framework.FakeControllerSource) error {
	done := map[string]bool{}
	for _, r := range group {
		latest, mistaken := r.rec.reconciled()
		if len(mistaken) > 0 {
			return fmt.Errorf("%s reconciled live Pods its cache lacked (a move taken for a deletion): %v", r.identity, mistaken)
		}
		for k, rv := range latest {
			done[k+"@"+rv] = true
		}
	}
	keys, err := truthKeys(truth)
	if err != nil {
		return err
	}
	var missed []string
	for _, k := range keys {
		namespace, name, _ := strings.Cut(k, "/")
		obj, ok := truth.Get(namespace, name)
		if !ok {
			continue
		}
		m, err := meta.Accessor(obj)
		if err != nil {
			return err
		}
		if v := k + "@" + m.GetResourceVersion(); !done[v] {
			missed = append(missed, v)
		}
	}
	if len(missed) > 0 {
		return fmt.Errorf("%d changes not reconciled yet, e.g. %v", len(missed), missed[0])
	}
	return nil
}

// eventually calls check until it returns nil or timeout passes, and
// returns how long it took.
func eventually(t *testing.T, timeout time.Duration, what string, check func() error) time.Duration {
	t.Helper()
	start := time.Now()
	var err error
	for time.Since(start) < timeout {
		if err = check(); err == nil {
			return time.Since(start)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s: not within %v: %v", what, timeout, err)
	return 0
}
