// Command activeactive runs one replica of a controller-runtime manager that
// reconciles Pods active-active: start it several times against one
// cluster (each with its own --identity) and the replicas share the Pods
// out, each caching and reconciling its own part, with the parts following
// the live replicas through Leases (github.com/kcache/cache/sharding).
//
//	go run ./cmd/activeactive --kubeconfig=$KUBECONFIG --identity=replica-a
//
// Its reconciler only reads: it counts the Pods it reconciled and prints a
// status line every few seconds (its range, the Pods it caches, the
// requests it reconciled). Stopping a replica (Ctrl-C) releases its Lease,
// and the others take its Pods over at once; killing one hands them over
// when its Lease expires.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/kcache/cache/sharding"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func main() {
	cfg, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "activeactive:", err)
		os.Exit(2)
	}
	restConfig, err := ctrl.GetConfig()
	if err != nil {
		fmt.Fprintln(os.Stderr, "activeactive: no cluster to talk to:", err)
		os.Exit(2)
	}
	clientset, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, "activeactive:", err)
		os.Exit(2)
	}
	cfg.rest, cfg.options.Client = restConfig, clientset.CoordinationV1()
	if cfg.leaseKubeconfig != "" {
		// The Leases over a connection of their own, so that a test can
		// fail the renewals while the watches work.
		leaseConfig, err := clientcmd.BuildConfigFromFlags("", cfg.leaseKubeconfig)
		if err != nil {
			fmt.Fprintln(os.Stderr, "activeactive: --lease-kubeconfig:", err)
			os.Exit(2)
		}
		leases, err := kubernetes.NewForConfig(leaseConfig)
		if err != nil {
			fmt.Fprintln(os.Stderr, "activeactive:", err)
			os.Exit(2)
		}
		cfg.options.Client = leases.CoordinationV1()
	}
	ctrl.SetLogger(klog.Background())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "activeactive:", err)
		os.Exit(1)
	}
}

// parseFlags reads the command line into a config without its cluster
// (rest and options.Client).
func parseFlags(args []string) (config, error) {
	fs := flag.NewFlagSet("activeactive", flag.ContinueOnError)
	host, _ := os.Hostname()
	cfg := config{every: 5 * time.Second}
	fs.StringVar(&cfg.options.Identity, "identity", envOr("POD_NAME", host), "this replica's name, unique among the replicas")
	fs.StringVar(&cfg.options.Namespace, "lease-namespace", "kube-system", "namespace of the replicas' Leases")
	fs.StringVar(&cfg.options.Group, "group", "kcache-activeactive", "name of the group of replicas (a label value)")
	fs.DurationVar(&cfg.options.LeaseDuration, "lease-duration", 0, "membership LeaseDuration, whole seconds (0: 15s)")
	fs.DurationVar(&cfg.options.RenewDeadline, "renew-deadline", 0, "membership RenewDeadline (0: 10s)")
	fs.DurationVar(&cfg.options.RetryPeriod, "retry-period", 0, "membership RetryPeriod (0: 2s)")
	fs.DurationVar(&cfg.every, "status-every", cfg.every, "how often to print the status line")
	fs.DurationVar(&cfg.work, "work", 0, "CPU time each reconcile spends (a busy loop), to stand for a CPU-bound reconciler")
	fs.StringVar(&cfg.leaseKubeconfig, "lease-kubeconfig", "", "if set, reach the Leases with this kubeconfig instead of the cluster's (a connection of their own)")
	fs.StringVar(&cfg.stateAddr, "state-addr", "", "if set, serve the replica's state as JSON at http://ADDR/state (e.g. 127.0.0.1:0; the address is printed)")
	// ctrl.GetConfig reads --kubeconfig from the default flag set.
	kubeconfig := flag.CommandLine.Lookup("kubeconfig")
	if kubeconfig != nil {
		fs.Var(kubeconfig.Value, "kubeconfig", kubeconfig.Usage)
	}
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	return cfg, nil
}

func envOr(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}

// config is one replica's setup.
type config struct {
	// rest reaches the cluster. options.Client reaches its Leases.
	rest    *rest.Config
	options sharding.Options
	// every is the time between two status lines.
	every time.Duration
	// stateAddr, if set, is where the state endpoint listens.
	stateAddr string
	// leaseKubeconfig, if set, is the kubeconfig main builds
	// options.Client from.
	leaseKubeconfig string
	// work is the CPU time each reconcile spends.
	work time.Duration
	// managerOptions, if set, adjusts the manager's options (tests give
	// an in-process server a fixed RESTMapper).
	managerOptions func(*manager.Options)
}

// run runs the replica until ctx ends: a manager whose Pod informer and
// Pod controller are sharded, and a status line every cfg.every.
func run(ctx context.Context, cfg config, out io.Writer) error {
	opts := cfg.options
	opts.Objects = []runtime.Object{&corev1.Pod{}}
	sharder, err := sharding.New(opts)
	if err != nil {
		return err
	}
	mopts := manager.Options{
		Scheme:  scheme.Scheme,
		Cache:   cache.Options{NewInformer: sharder.NewInformer},
		Metrics: metricsserver.Options{BindAddress: "0"},
		// The Pod controller runs on every replica, each on its part.
		LeaderElection: false,
	}
	if cfg.managerOptions != nil {
		cfg.managerOptions(&mopts)
	}
	mgr, err := manager.New(cfg.rest, mopts)
	if err != nil {
		return fmt.Errorf("building the manager: %w", err)
	}
	if err := sharder.SetupWithManager(mgr); err != nil {
		return err
	}
	counter := &podCounter{cache: mgr.GetClient(), work: cfg.work}
	if err := ctrl.NewControllerManagedBy(mgr).
		For(&corev1.Pod{}).
		Complete(sharder.Reconciler(mgr.GetAPIReader(), &corev1.Pod{}, counter)); err != nil {
		return fmt.Errorf("building the Pod controller: %w", err)
	}
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		return printStatus(ctx, cfg.options.Identity, sharder, mgr.GetCache(), counter, cfg.every, out)
	})); err != nil {
		return err
	}
	if cfg.stateAddr != "" {
		if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
			return serveState(ctx, cfg.stateAddr, cfg.options.Identity, sharder, mgr.GetCache(), counter, out)
		})); err != nil {
			return err
		}
	}
	return mgr.Start(ctx)
}

// podCounter is the replica's reconciler: it reads the Pod from the cache
// and counts the requests it served.
type podCounter struct {
	cache      client.Reader
	work       time.Duration
	reconciled atomic.Int64
	deleted    atomic.Int64
	// mu guards versions: the newest resourceVersion read per Pod.
	mu       sync.Mutex
	versions map[string]string
}

// record notes that pod was reconciled at its resourceVersion.
func (p *podCounter) record(pod *corev1.Pod) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.versions == nil {
		p.versions = map[string]string{}
	}
	key := pod.Namespace + "/" + pod.Name
	if newerVersion(pod.ResourceVersion, p.versions[key]) {
		p.versions[key] = pod.ResourceVersion
	}
}

// reconciledVersions returns a copy of the newest resourceVersion read per
// Pod.
func (p *podCounter) reconciledVersions() map[string]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]string, len(p.versions))
	for k, v := range p.versions {
		out[k] = v
	}
	return out
}

// newerVersion reports whether resourceVersion a is newer than b (empty is
// oldest). Kubernetes resourceVersions are opaque; kube-apiserver's are
// etcd revisions, compared as numbers here, longer being larger.
func newerVersion(a, b string) bool {
	if len(a) != len(b) {
		return len(a) > len(b)
	}
	return a > b
}

func (p *podCounter) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var pod corev1.Pod
	switch err := p.cache.Get(ctx, req.NamespacedName, &pod); {
	case apierrors.IsNotFound(err):
		// Reconciler lets a request through for an object the cache
		// lacks only when the API server has no such object either.
		p.deleted.Add(1)
	case err != nil:
		return reconcile.Result{}, err
	default:
		busy(p.work)
		p.reconciled.Add(1)
		p.record(&pod)
	}
	return reconcile.Result{}, nil
}

// printStatus prints the replica's status every every until ctx ends.
func printStatus(ctx context.Context, identity string, s *sharding.Sharder, c cache.Cache, p *podCounter, every time.Duration, out io.Writer) error {
	ticker := time.NewTicker(every)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
		var pods corev1.PodList
		if err := c.List(ctx, &pods); err != nil {
			return fmt.Errorf("listing the cached Pods: %w", err)
		}
		a := s.Assignment()
		where := fmt.Sprintf("shard %d of %d", a.Index+1, a.Count)
		if !a.Claiming() {
			where = "no shard (paused)"
		}
		fmt.Fprintf(out, "%s: %s, %d pods cached, %d reconciled, %d deletions\n", identity, where, len(pods.Items), p.reconciled.Load(), p.deleted.Load())
	}
}

// busy spends about d of CPU time in a loop, as a CPU-bound reconciler
// would.
func busy(d time.Duration) {
	if d <= 0 {
		return
	}
	x := uint64(1)
	for end := time.Now().Add(d); time.Now().Before(end); {
		for range 1000 {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	sink.Store(x)
}

// sink keeps busy's loop from being optimised away.
var sink atomic.Uint64
