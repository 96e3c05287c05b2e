// Command demo shows kcache at work: a shared informer keeps a cache of
// Pods in step with a busy cluster, while the terminal shows the initial
// sync, each change, and a status line, and an HTTP server answers
// questions from the cache.
//
// By default the cluster is simulated in-process (5,000 Pods, churning,
// with a watch drop and a "410 Gone" now and then); with --kubeconfig or
// --in-cluster the same runs against a real cluster. See examples/README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	cache "github.com/kcache/cache"
	"github.com/kcache/cache/examples/internal/simcluster"
	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
)

// config is the demo's flags.
type config struct {
	addr          string
	duration      time.Duration
	pods          int
	rate          float64
	seed          uint64
	listLatency   time.Duration
	dropEvery     time.Duration
	expireEvery   time.Duration
	streamingList bool
	printRate     int
	statusEvery   time.Duration
	handlerDelay  time.Duration
	backlogLimit  int
	kubeconfig    string
	inCluster     bool
	namespace     string
}

func parseFlags(args []string, errOut io.Writer) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(errOut)
	fs.StringVar(&cfg.addr, "addr", "127.0.0.1:0", "HTTP listen address (port 0: any free port; the address is printed)")
	fs.DurationVar(&cfg.duration, "duration", 0, "stop after this long (0: run until Ctrl-C or SIGTERM)")
	fs.IntVar(&cfg.pods, "pods", 5000, "simulated cluster: number of Pods")
	fs.Float64Var(&cfg.rate, "rate", 20, "simulated cluster: changes per second")
	fs.Uint64Var(&cfg.seed, "seed", 1, "simulated cluster: random seed (same seed, same initial Pods)")
	fs.DurationVar(&cfg.listLatency, "list-latency", 100*time.Millisecond, "simulated cluster: time to serve one LIST page of 500 Pods")
	fs.DurationVar(&cfg.dropEvery, "drop-every", 10*time.Second, "simulated cluster: drop every watch this often (0: never)")
	fs.DurationVar(&cfg.expireEvery, "expire-every", 25*time.Second, "simulated cluster: compact the history this often, so watchers get 410 Gone and relist (0: never)")
	fs.BoolVar(&cfg.streamingList, "streaming-list", false, "simulated cluster: serve streaming lists (watch with sendInitialEvents) instead of pages")
	fs.IntVar(&cfg.printRate, "print-rate", 30, "print at most this many events per second; the status line counts the rest (0: print all)")
	fs.DurationVar(&cfg.statusEvery, "status-every", 2*time.Second, "how often to print the status line")
	fs.DurationVar(&cfg.handlerDelay, "handler-delay", 0, "make the second handler take this long per event, to watch its backlog")
	fs.IntVar(&cfg.backlogLimit, "backlog-limit", -1, "pending notifications per handler past which kcache merges them per object (negative: the default, merge only for a stalled handler; 0: never, as in client-go)")
	fs.StringVar(&cfg.kubeconfig, "kubeconfig", "", "watch the Pods of a real cluster, with this kubeconfig file")
	fs.BoolVar(&cfg.inCluster, "in-cluster", false, "watch the Pods of the cluster the demo runs in (in-cluster config)")
	fs.StringVar(&cfg.namespace, "namespace", "", "real cluster: namespace to watch (default: all)")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	if cfg.pods < 0 || cfg.rate < 0 || cfg.statusEvery <= 0 {
		return cfg, errors.New("--pods and --rate must not be negative, --status-every must be positive")
	}
	return cfg, nil
}

func main() {
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop() // a second Ctrl-C kills the process at once
	}()
	if err := run(ctx, cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

// run is the demo: it returns nil when ctx ends or cfg.duration elapses,
// after everything it started has stopped.
func run(ctx context.Context, cfg config, out io.Writer) error {
	start := time.Now()
	var cancel context.CancelFunc
	if cfg.duration > 0 {
		ctx, cancel = context.WithTimeoutCause(ctx, cfg.duration, errDurationElapsed)
	} else {
		ctx, cancel = context.WithCancel(ctx)
	}
	defer cancel()

	con := newConsole(out)
	defer cache.SetListenerBacklogLimit(cache.SetListenerBacklogLimit(cfg.backlogLimit))
	reg := prometheus.NewRegistry()
	installReflectorMetrics()
	view := &syncView{con: con}
	relists := prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "kcache", Subsystem: "demo", Name: "relists_total",
		Help: "Lists completed after the initial sync (after 410 Gone, for instance).",
	})
	reg.MustRegister(relists)
	obs := &listObserver{report: func(p listProgress) {
		view.report(p)
		if p.done && !p.initial {
			relists.Inc()
		}
	}}

	src, err := newSource(cfg, con, obs)
	if err != nil {
		return err
	}
	if src.sim != nil {
		defer src.sim.Close()
		registerSimMetrics(reg, src.sim)
	}

	// A Reserved identity lets kcache report the informer's metrics,
	// handler backlogs included, to the provider.
	name, err := cache.NewInformerName("kcache-demo")
	if err != nil {
		return err
	}
	defer name.Release()
	imetrics := newInformerMetrics(reg)
	inf := cache.NewSharedIndexInformerWithOptions(src.lw, &v1.Pod{}, cache.SharedIndexInformerOptions{
		Indexers:                cache.Indexers{appIndex: podsByApp},
		Identifier:              name.WithResource(simcluster.PodsResource),
		InformerMetricsProvider: imetrics,
	})
	if err := inf.SetWatchErrorHandlerWithContext(watchErrorPrinter(con)); err != nil {
		return err
	}
	printer := newEventPrinter(con, cfg.printRate)
	stats := newPodStats(reg, cfg.handlerDelay)
	printerReg, err := inf.AddEventHandler(printer)
	if err != nil {
		return err
	}
	statsReg, err := inf.AddEventHandler(stats)
	if err != nil {
		return err
	}
	reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "kcache", Subsystem: "demo", Name: "pods_cached", Help: "Pods in the informer's cache."},
			func() float64 { return float64(len(inf.GetStore().ListKeys())) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "kcache", Subsystem: "demo", Name: "synced", Help: "1 once the informer has synced."},
			func() float64 { return boolFloat(inf.HasSynced()) }),
	)

	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", cfg.addr, err)
	}
	srv := &http.Server{Handler: newMux(inf, reg, reflectorRegistry), ReadHeaderTimeout: 5 * time.Second}

	con.Linef("DEMO", "kcache demo: %s", src.description)
	con.Linef("HTTP", "serving http://%s  (try /pods?app=web, /apps, /metrics, /healthz)", ln.Addr())

	var wg sync.WaitGroup
	wg.Go(func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			con.Linef("HTTP", "server failed: %v", err)
		}
	})
	wg.Go(func() { inf.RunWithContext(ctx) })
	churnErr := make(chan error, 1)
	if src.churn != nil {
		wg.Go(func() { churnErr <- src.churn.Run(ctx) })
	}

	wg.Go(func() {
		if cache.WaitForCacheSync(ctx.Done(), inf.HasSynced, printerReg.HasSynced, statsReg.HasSynced) {
			con.Linef("SYNCED", "cache holds %s pods; both handlers have processed the initial list (%.2fs after start)",
				thousands(len(inf.GetStore().ListKeys())), time.Since(start).Seconds())
		}
	})
	st := statusLine{con: con, inf: inf, stats: stats, printer: printer, metrics: imetrics, obs: obs, sim: src.sim}
	st.loop(ctx, cfg.statusEvery)

	reason := "signal received"
	if errors.Is(context.Cause(ctx), errDurationElapsed) {
		reason = fmt.Sprintf("--duration %s elapsed", cfg.duration)
	}
	con.Linef("STOP", "stopping: %s", reason)
	shutdownCtx, cancelShutdown := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancelShutdown()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		con.Linef("STOP", "HTTP shutdown: %v", err)
	}
	wg.Wait()
	if src.churn != nil {
		if err := <-churnErr; err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("simulated cluster: %w", err)
		}
	}
	con.Linef("STOP", "stopped cleanly after %.1fs", time.Since(start).Seconds())
	return nil
}

var errDurationElapsed = errors.New("duration elapsed")

func newSource(cfg config, con *console, obs *listObserver) (*source, error) {
	if cfg.kubeconfig != "" || cfg.inCluster {
		return newKubeSource(cfg, obs)
	}
	return newSimSource(cfg, con, obs)
}

// registerSimMetrics exposes what the simulated cluster did.
func registerSimMetrics(reg prometheus.Registerer, c *simcluster.Cluster) {
	stat := func(name, help string, pick func(simcluster.Stats) int64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "kcache", Subsystem: "demo_sim", Name: name, Help: help},
			func() float64 { return float64(pick(c.Stats())) })
	}
	reg.MustRegister(
		stat("watches_dropped_total", "Watches the simulated cluster dropped.", func(s simcluster.Stats) int64 { return s.WatchesDropped }),
		stat("expirations_total", "Times the simulated cluster compacted its history.", func(s simcluster.Stats) int64 { return s.Expirations }),
		stat("gone_errors_total", "Requests the simulated cluster answered with 410 Gone.", func(s simcluster.Stats) int64 { return s.GoneErrors }),
		stat("list_pages_total", "LIST pages the simulated cluster served.", func(s simcluster.Stats) int64 { return s.ListPages }),
	)
}

// watchErrorPrinter reports the errors that end a reflector's
// list-and-watch cycle, then lets kcache's default handler log them.
func watchErrorPrinter(con *console) cache.WatchErrorHandlerWithContext {
	return func(ctx context.Context, r *cache.Reflector, err error) {
		con.Linef("WATCH", "%v; the reflector lists again", err)
		cache.DefaultWatchErrorHandler(ctx, r, err)
	}
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
