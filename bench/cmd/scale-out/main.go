// Command scale-out (make bench-scale-out) runs replicas of
// examples/cmd/activeactive, a controller-runtime manager reconciling Pods
// active-active through github.com/kcache/cache/sharding, against kas, and
// does to them what clusters do, while Pods keep changing: it kills one
// (SIGKILL) and starts it again; cuts one off from the API server (a proxy
// in front of each replica stops every byte both ways without closing a
// connection) and heals it; fails one's Lease renewals while its watches
// work (its Leases go through a second proxy); restarts every replica in
// turn; grows the group and shrinks it; and restarts the API server while
// a newcomer takes its range over. Every few hundred milliseconds it
// reads each replica's state (--state-addr): which Pods it caches while it
// claims a range, and the newest resourceVersion it reconciled per Pod.
//
// Per fault it prints a scale-out-fault: line: the longest stretch during
// which some Pod had no owner, or two, and the time until the group settled
// (every live replica claiming, the caches disjoint, their union the
// server's Pods). At the end, with the changes stopped, every Pod's
// current resourceVersion must have been reconciled by its owner (missed
// counts those that were not), and the last line sums the run up.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kcache/cache/bench/internal/e2e"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

type options struct {
	pods, replicas               int
	leaseDuration, renewDeadline time.Duration
	retryPeriod, partition       time.Duration
	interval, timeout            time.Duration
	changeRate                   float64
	replicaBin                   string
	faults                       []string
	scaleUp, scaleDown           int
	// scaleReplicas, if positive, adds the scale comparison: one replica
	// against that many; work is each reconcile's CPU time.
	scaleReplicas int
	work          time.Duration
}

func parseOptions(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("scale-out", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.IntVar(&o.pods, "pods", 3000, "Pods on the server (created as make bench-e2e creates them)")
	fs.IntVar(&o.replicas, "replicas", 3, "replicas in the group")
	fs.DurationVar(&o.leaseDuration, "lease-duration", 6*time.Second, "membership LeaseDuration (whole seconds)")
	fs.DurationVar(&o.renewDeadline, "renew-deadline", 4*time.Second, "membership RenewDeadline")
	fs.DurationVar(&o.retryPeriod, "retry-period", time.Second, "membership RetryPeriod")
	fs.DurationVar(&o.partition, "partition", 20*time.Second, "how long the cut-off replica stays cut off")
	fs.DurationVar(&o.interval, "interval", 250*time.Millisecond, "time between two looks at the replicas")
	fs.DurationVar(&o.timeout, "timeout", 3*time.Minute, "longest wait for the group to settle after a fault")
	fs.Float64Var(&o.changeRate, "change-rate", 20, "Pod changes per second during the faults")
	fs.StringVar(&o.replicaBin, "replica", "", "activeactive binary (default: built from ../examples)")
	faults := fs.String("faults", strings.Join(allFaults, ","), "faults to do, in this order whatever the order given: "+strings.Join(allFaults, ", "))
	fs.IntVar(&o.scaleUp, "scale-up", 5, "replicas the scale fault grows the group to")
	fs.IntVar(&o.scaleDown, "scale-down", 2, "replicas the scale fault then shrinks it to")
	fs.IntVar(&o.scaleReplicas, "scale-replicas", 0, "after the faults, compare one replica holding every Pod with this many sharing them (0: skip): heap per replica, reconcile throughput")
	fs.DurationVar(&o.work, "work", time.Millisecond, "CPU time each reconcile spends in the scale comparison")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.replicas < 2 || o.pods < 1 {
		return o, fmt.Errorf("scale-out: want at least 2 replicas and 1 Pod")
	}
	for f := range strings.SplitSeq(*faults, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		if !slices.Contains(allFaults, f) {
			return o, fmt.Errorf("scale-out: -faults: unknown fault %q (want some of %s)", f, strings.Join(allFaults, ", "))
		}
		o.faults = append(o.faults, f)
	}
	if o.scaleDown < 1 || o.scaleUp < o.replicas || o.scaleDown > o.scaleUp {
		return o, fmt.Errorf("scale-out: want 1 <= -scale-down <= -scale-up and -scale-up >= -replicas")
	}
	return o, nil
}

func main() {
	opts, err := parseOptions(os.Args[1:], os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if err := run(context.Background(), opts, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(ctx context.Context, opts options, out, progress io.Writer) error {
	kubeconfig := os.Getenv("KUBECONFIG")
	if kubeconfig == "" {
		return fmt.Errorf("scale-out: KUBECONFIG is not set (bench/e2e.sh sets it from kas)")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 200, 400
	// The pods' layout repeats a port name on purpose; the server's
	// warning about it, once per created Pod, would bury the output.
	cfg.WarningHandler = rest.NoWarnings{}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "kcache-scale-out-")
	if err != nil {
		return err
	}
	fmt.Fprintf(progress, "scale-out: replica logs and kubeconfigs in %s\n", dir)
	if _, err := e2e.Populate(ctx, cs, e2e.DefaultLayout, opts.pods, 8, progress); err != nil {
		return err
	}
	truth, err := podKeys(ctx, cs)
	if err != nil {
		return err
	}
	bin, err := replicaBinary(ctx, opts.replicaBin, dir)
	if err != nil {
		return err
	}
	apiserver, err := target(kubeconfig)
	if err != nil {
		return err
	}
	spec := replicaSpec{bin: bin, kubeconfig: kubeconfig, dir: dir, target: apiserver, group: "scale-out-" + strconv.FormatInt(time.Now().Unix(), 36),
		leaseDuration: opts.leaseDuration, renewDeadline: opts.renewDeadline, retryPeriod: opts.retryPeriod}
	g := &group{spec: spec, opts: opts, truth: truth, out: out, progress: progress, controlURL: os.Getenv("KAS_CONTROL_URL")}
	defer g.stopAll()
	if err := g.runFaults(ctx, cs); err != nil {
		return err
	}
	missed, err := g.missed(ctx, cs)
	if err != nil {
		return err
	}
	var scaled *scaleResult
	if opts.scaleReplicas > 0 {
		g.stopAll()
		res, err := g.measureScale(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintln(out, res.line())
		scaled = &res
	}
	fmt.Fprintln(out, summary(opts, g.phases, missed, scaled))
	return nil
}

// podKeys returns the namespace/name of every Pod on the server.
func podKeys(ctx context.Context, cs kubernetes.Interface) (map[string]bool, error) {
	pods, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	keys := make(map[string]bool, len(pods.Items))
	for _, p := range pods.Items {
		keys[p.Namespace+"/"+p.Name] = true
	}
	return keys, nil
}

// replicaBinary returns bin, or builds examples/cmd/activeactive into dir.
func replicaBinary(ctx context.Context, bin, dir string) (string, error) {
	if bin != "" {
		return bin, nil
	}
	out := filepath.Join(dir, "activeactive")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "./cmd/activeactive")
	cmd.Dir = "../examples"
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("scale-out: build the replica: %w", err)
	}
	return out, nil
}

// changer changes Pods at rate per second (an annotation) until ctx ends.
func changer(ctx context.Context, cs kubernetes.Interface, truth map[string]bool, rate float64) {
	keys := make([]string, 0, len(truth))
	for k := range truth {
		keys = append(keys, k)
	}
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer tick.Stop()
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		ns, name := splitKey(keys[rand.IntN(len(keys))])
		patch := fmt.Sprintf(`{"metadata":{"annotations":{"scale-out.kcache.io/change":"%d"}}}`, n)
		_, _ = cs.CoreV1().Pods(ns).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	}
}

func splitKey(key string) (string, string) {
	for i := range len(key) {
		if key[i] == '/' {
			return key[:i], key[i+1:]
		}
	}
	return "", key
}
