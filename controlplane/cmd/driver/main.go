// Command driver runs the control-plane scenario against a cluster whose
// kube-controller-manager, kube-scheduler and KWOK already run, and records
// what the two components cost on the way (from their /metrics) and the
// cluster's end state. See controlplane/README.md.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"

	"github.com/kcache/cache/controlplane/internal/runresult"
)

type clients struct {
	kube kubernetes.Interface
	meta metadata.Interface
}

// The record of a run, shared with cmd/report.
type (
	phaseResult = runresult.Phase
	memory      = runresult.Memory
	result      = runresult.Result
)

func main() {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster")
	pods := flag.Int("pods", envInt("CP_PODS", 20000), "pods the workloads ask for (env CP_PODS)")
	nodes := flag.Int("nodes", envInt("CP_NODES", 0), "fake nodes for KWOK (0: one per 100 pods, at least 3; env CP_NODES)")
	churn := flag.Duration("churn", envDuration("CP_CHURN", 5*time.Minute), "steady churn duration (env CP_CHURN)")
	churnRate := flag.Int("churn-rate", envInt("CP_CHURN_RATE", 20), "churn writes per second (env CP_CHURN_RATE)")
	idle := flag.Duration("idle", envDuration("CP_IDLE", 30*time.Second), "idle window at steady state, twice")
	timeout := flag.Duration("phase-timeout", envDuration("CP_PHASE_TIMEOUT", 20*time.Minute), "longest wait for a phase to converge")
	kcmURL := flag.String("kcm-metrics", "", "kube-controller-manager's /metrics URL")
	schedURL := flag.String("scheduler-metrics", "", "kube-scheduler's /metrics URL")
	variant := flag.String("variant", "", "name of this run (stock or kcache)")
	out := flag.String("out", "", "directory for result.json and endstate.txt")
	seed := flag.Uint64("seed", 1, "seed of the churn's choices")
	flag.Parse()
	if *kcmURL == "" || *schedURL == "" || *out == "" || *variant == "" {
		log.Fatal("driver: -kcm-metrics, -scheduler-metrics, -variant and -out are required")
	}
	log.SetPrefix("driver[" + *variant + "] ")
	log.SetFlags(log.Ltime)

	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		log.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 500, 1000
	metricsToken = cfg.BearerToken
	c := &clients{kube: kubernetes.NewForConfigOrDie(cfg), meta: metadata.NewForConfigOrDie(cfg)}
	if *nodes == 0 {
		*nodes = max(3, *pods/100)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		log.Fatal(err)
	}
	r := &run{c: c, plan: makePlan(*pods), timeout: *timeout, out: *out, rng: rand.New(rand.NewPCG(*seed, 36)),
		comps: []*component{{name: "kcm", url: *kcmURL}, {name: "scheduler", url: *schedURL}}}
	res := result{Variant: *variant, Pods: r.plan.pods, Nodes: *nodes, Namespaces: len(r.plan.namespaces)}
	ctx := context.Background()

	if err := r.waitComponents(ctx); err != nil {
		log.Fatal(err)
	}
	pollCtx, stopPoll := context.WithCancel(ctx)
	for _, comp := range r.comps {
		go comp.poll(pollCtx, 2*time.Second, log.Printf)
	}

	res.Phases = append(res.Phases, r.phase(ctx, "nodes", func() error { return r.createNodes(ctx, *nodes) }, r.nodesReady(*nodes)))
	began := time.Now()
	var allBound time.Time
	create := r.phase(ctx, "create", func() error { return r.createWorkloads(ctx) }, func(cl *cluster) string {
		if allBound.IsZero() && cl.scheduled() >= r.plan.pods {
			allBound = time.Now()
		}
		return cl.pending(r.expectNS)
	})
	res.Phases = append(res.Phases, create)
	if !allBound.IsZero() {
		res.ScheduleSecs = allBound.Sub(began).Seconds()
		res.ScheduledPS = float64(r.plan.pods) / res.ScheduleSecs
	}
	res.Steady = r.idle(ctx, *idle, "steady")
	res.Phases = append(res.Phases, r.phase(ctx, "rolling-update", func() error { return r.rollingUpdate(ctx) }, r.converged))
	res.Phases = append(res.Phases, r.phase(ctx, "scale", func() error { return r.scale(ctx) }, r.converged))
	res.Phases = append(res.Phases, r.phase(ctx, "delete", func() error { return r.deletes(ctx) }, r.converged))
	res.Phases = append(res.Phases, r.phase(ctx, "churn", func() error { return r.churn(ctx, *churn, *churnRate) }, r.converged))
	res.SteadyEnd = r.idle(ctx, *idle, "end")
	stopPoll()
	res.Peak = map[string]memory{}
	for _, comp := range r.comps {
		h, rss := comp.peak()
		res.Peak[comp.name] = memory{Heap: h, RSS: rss}
	}

	lines, err := endState(ctx, c)
	if err != nil {
		log.Fatal(err)
	}
	res.EndStateLines = len(lines)
	if err := os.MkdirAll(*out, 0o755); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(*out, "endstate.txt"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		log.Fatal(err)
	}
	b, _ := json.MarshalIndent(res, "", "  ")
	if err := os.WriteFile(filepath.Join(*out, "result.json"), b, 0o644); err != nil {
		log.Fatal(err)
	}
	for _, p := range res.Phases {
		if !p.Converged {
			log.Fatalf("phase %s did not converge: %s", p.Name, p.Pending)
		}
	}
	log.Printf("done: %d pods, %d end-state lines", res.Pods, len(lines))
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

func envDuration(name string, def time.Duration) time.Duration {
	if v, err := time.ParseDuration(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

type run struct {
	c        *clients
	plan     plan
	timeout  time.Duration
	rng      *rand.Rand
	comps    []*component
	expectNS map[string]bool
	out      string
}

// waitComponents waits until both components serve metrics and hold their
// leader leases.
func (r *run) waitComponents(ctx context.Context) error {
	deadline := time.Now().Add(3 * time.Minute)
	for {
		var missing []string
		for _, comp := range r.comps {
			if _, err := comp.scrape(ctx); err != nil {
				missing = append(missing, err.Error())
			}
		}
		for _, l := range []string{"kube-controller-manager", "kube-scheduler"} {
			lease, err := r.c.kube.CoordinationV1().Leases("kube-system").Get(ctx, l, metav1.GetOptions{})
			if err != nil || lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
				missing = append(missing, "leader lease "+l)
			}
		}
		if len(missing) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("components not ready after 3m: %v", missing)
		}
		time.Sleep(time.Second)
	}
}

// phase runs action, then reads the cluster every second until check says
// nothing is pending, and records the components' CPU over the phase.
func (r *run) phase(ctx context.Context, name string, action func() error, check func(*cluster) string) phaseResult {
	res := phaseResult{Name: name, CPU: map[string]float64{}, PeakHeap: map[string]float64{}}
	start := map[string]sample{}
	for _, comp := range r.comps {
		s, err := comp.record(ctx)
		if err != nil {
			log.Fatalf("phase %s: %v", name, err)
		}
		start[comp.name] = s
	}
	began := time.Now()
	log.Printf("phase %s: start", name)
	profiled := r.profileCPU(ctx, name)
	defer profiled.Wait()
	if err := action(); err != nil {
		log.Fatalf("phase %s: %v", name, err)
	}
	last := ""
	for {
		cl, err := read(ctx, r.c.kube)
		pending := ""
		if err != nil {
			pending = err.Error()
		} else {
			pending = check(cl)
		}
		if pending == "" {
			res.Converged = true
			break
		}
		if time.Since(began) > r.timeout {
			res.Pending = pending
			break
		}
		if pending != last && time.Since(began) > 10*time.Second {
			log.Printf("phase %s: %s", name, pending)
			last = pending
		}
		time.Sleep(time.Second)
	}
	res.Seconds = time.Since(began).Seconds()
	for _, comp := range r.comps {
		s, err := comp.record(ctx)
		if err != nil {
			log.Fatalf("phase %s: %v", name, err)
		}
		res.CPU[comp.name] = s.CPU - start[comp.name].CPU
		for _, x := range comp.between(start[comp.name].At, s.At) {
			res.PeakHeap[comp.name] = max(res.PeakHeap[comp.name], x.HeapIn)
		}
	}
	log.Printf("phase %s: converged=%v in %.1f s, cpu kcm %.1f s scheduler %.1f s", name, res.Converged, res.Seconds, res.CPU["kcm"], res.CPU["scheduler"])
	return res
}

func (r *run) converged(cl *cluster) string { return cl.pending(r.expectNS) }

// cpuProfiledPhases are the phases whose first cpuProfileSeconds are
// CPU-profiled in each component: where most of the CPU goes (create) and
// the steady state (churn).
var cpuProfiledPhases = map[string]bool{"create": true, "churn": true}

// profileCPU starts, for a phase of cpuProfiledPhases, a CPU profile of
// each component, kept as cpu-PHASE-COMPONENT.pb.gz; the phase waits for
// them before it ends.
func (r *run) profileCPU(ctx context.Context, phase string) *sync.WaitGroup {
	var wg sync.WaitGroup
	if !cpuProfiledPhases[phase] {
		return &wg
	}
	for _, comp := range r.comps {
		wg.Go(func() {
			if err := comp.cpuProfile(ctx, filepath.Join(r.out, "cpu-"+phase+"-"+comp.name+".pb.gz")); err != nil {
				log.Printf("phase %s: CPU profile of %s: %v", phase, comp.name, err)
			}
		})
	}
	return &wg
}

// idle waits d with no writes and returns each component's median heap and
// RSS over that window. It starts with a garbage collection in each
// component (its heap profile with gc=1, kept as heap-LABEL-COMPONENT.pb.gz),
// so the window sees live objects rather than whatever garbage the last
// collection left: an idle process may not collect for two minutes.
func (r *run) idle(ctx context.Context, d time.Duration, label string) map[string]memory {
	for _, comp := range r.comps {
		if err := comp.heapProfile(ctx, filepath.Join(r.out, "heap-"+label+"-"+comp.name+".pb.gz")); err != nil {
			log.Printf("idle %s: heap profile of %s: %v", label, comp.name, err)
		}
	}
	from := time.Now()
	time.Sleep(d)
	to := time.Now()
	out := map[string]memory{}
	for _, comp := range r.comps {
		var heap, rss []float64
		for _, s := range comp.between(from, to) {
			heap = append(heap, s.HeapIn)
			rss = append(rss, s.RSS)
		}
		out[comp.name] = memory{Heap: median(heap), RSS: median(rss)}
	}
	log.Printf("idle %s %s: kcm heap %.1f MiB, scheduler heap %.1f MiB", label, d, out["kcm"].Heap/(1<<20), out["scheduler"].Heap/(1<<20))
	return out
}

func (r *run) createNodes(ctx context.Context, n int) error {
	for i := range n {
		if _, err := r.c.kube.CoreV1().Nodes().Create(ctx, fakeNode(i), metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	return nil
}

// nodesReady is the check of the nodes phase: KWOK reports every node Ready.
func (r *run) nodesReady(n int) func(*cluster) string {
	return func(*cluster) string {
		l, err := r.c.kube.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{LabelSelector: "type=kwok"})
		if err != nil {
			return err.Error()
		}
		ready := 0
		for _, nd := range l.Items {
			for _, c := range nd.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		if ready < n {
			return fmt.Sprintf("%d of %d nodes ready", ready, n)
		}
		return ""
	}
}

func (r *run) createWorkloads(ctx context.Context) error {
	k := r.c.kube
	r.expectNS = map[string]bool{}
	co := metav1.CreateOptions{}
	for _, ns := range r.plan.namespaces {
		r.expectNS[ns] = true
		if _, err := k.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, co); err != nil {
			return err
		}
		if _, err := k.CoreV1().ConfigMaps(ns).Create(ctx, configMap(ns), co); err != nil {
			return err
		}
	}
	for _, ns := range r.plan.namespaces {
		for i := range r.plan.deployments[ns] {
			d := deployment(ns, i)
			if _, err := k.CoreV1().Services(ns).Create(ctx, service(ns, d.Name, false), co); err != nil {
				return err
			}
			if _, err := k.AppsV1().Deployments(ns).Create(ctx, d, co); err != nil {
				return err
			}
		}
		for i := range r.plan.statefulsets[ns] {
			s := statefulSet(ns, i)
			if _, err := k.CoreV1().Services(ns).Create(ctx, service(ns, s.Name, true), co); err != nil {
				return err
			}
			if _, err := k.AppsV1().StatefulSets(ns).Create(ctx, s, co); err != nil {
				return err
			}
		}
		for i := range r.plan.jobs[ns] {
			if _, err := k.BatchV1().Jobs(ns).Create(ctx, job(ns, i), co); err != nil {
				return err
			}
		}
	}
	return nil
}

// rollingUpdate changes the pod template of every third deployment.
func (r *run) rollingUpdate(ctx context.Context) error {
	for _, ns := range r.plan.namespaces {
		for i := 0; i < r.plan.deployments[ns]; i += 3 {
			name := deployment(ns, i).Name
			err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				d, err := r.c.kube.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				d.Spec.Template.Annotations["example.com/revision"] = "2"
				c := &d.Spec.Template.Spec.Containers[0]
				c.Env = append(c.Env, corev1.EnvVar{Name: "REVISION", Value: "2"})
				_, err = r.c.kube.AppsV1().Deployments(ns).Update(ctx, d, metav1.UpdateOptions{})
				return err
			})
			if err != nil {
				return err
			}
		}
	}
	return nil
}

func (r *run) patchReplicas(ctx context.Context, kind, ns, name string, n int) error {
	p := []byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, n))
	var err error
	if kind == "deployment" {
		_, err = r.c.kube.AppsV1().Deployments(ns).Patch(ctx, name, types.MergePatchType, p, metav1.PatchOptions{})
	} else {
		_, err = r.c.kube.AppsV1().StatefulSets(ns).Patch(ctx, name, types.MergePatchType, p, metav1.PatchOptions{})
	}
	return err
}

// scale halves one deployment in six, grows another by half, and takes two
// replicas off every other statefulset.
func (r *run) scale(ctx context.Context) error {
	for _, ns := range r.plan.namespaces {
		for i := range r.plan.deployments[ns] {
			switch i % 6 {
			case 1:
				if err := r.patchReplicas(ctx, "deployment", ns, deployment(ns, i).Name, deployReplicas/2); err != nil {
					return err
				}
			case 2:
				if err := r.patchReplicas(ctx, "deployment", ns, deployment(ns, i).Name, deployReplicas*3/2); err != nil {
					return err
				}
			}
		}
		for i := 0; i < r.plan.statefulsets[ns]; i += 2 {
			if err := r.patchReplicas(ctx, "statefulset", ns, statefulSet(ns, i).Name, stsReplicas-2); err != nil {
				return err
			}
		}
	}
	return nil
}

// deletes removes one deployment in six (the garbage collector removes
// their ReplicaSets and pods) and the last namespace.
func (r *run) deletes(ctx context.Context) error {
	bg := metav1.DeletePropagationBackground
	for _, ns := range r.plan.namespaces {
		for i := range r.plan.deployments[ns] {
			if i%6 == 5 {
				if err := r.c.kube.AppsV1().Deployments(ns).Delete(ctx, deployment(ns, i).Name, metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
					return err
				}
			}
		}
	}
	last := r.plan.namespaces[len(r.plan.namespaces)-1]
	r.expectNS[last] = false
	return r.c.kube.CoreV1().Namespaces().Delete(ctx, last, metav1.DeleteOptions{})
}

// churn writes at rate per second for d: pod labels, pod annotations, a
// pod status condition, and (one write in ten) a deployment annotation
// outside its template.
func (r *run) churn(ctx context.Context, d time.Duration, rate int) error {
	end := time.Now().Add(d)
	tick := time.NewTicker(time.Second / time.Duration(max(1, rate)))
	defer tick.Stop()
	var pods []corev1.Pod
	var listed time.Time
	writes, gone := 0, 0
	for n := 0; time.Now().Before(end); n++ {
		<-tick.C
		if time.Since(listed) > 10*time.Second {
			l, err := r.c.kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{ResourceVersion: "0", LabelSelector: "app"})
			if err != nil {
				return err
			}
			pods = pods[:0]
			for _, p := range l.Items {
				if strings.HasPrefix(p.Namespace, "cp-") && p.Status.Phase == corev1.PodRunning {
					pods = append(pods, p)
				}
			}
			listed = time.Now()
		}
		if len(pods) == 0 {
			return fmt.Errorf("churn: no running pods")
		}
		p := pods[r.rng.IntN(len(pods))]
		pc := r.c.kube.CoreV1().Pods(p.Namespace)
		var err error
		switch n % 10 {
		case 0, 1, 2, 3:
			_, err = pc.Patch(ctx, p.Name, types.MergePatchType, fmt.Appendf(nil, `{"metadata":{"labels":{"churn":"c%d"}}}`, n%50), metav1.PatchOptions{})
		case 4, 5, 6:
			_, err = pc.Patch(ctx, p.Name, types.MergePatchType, fmt.Appendf(nil, `{"metadata":{"annotations":{"example.com/churn":"%d"}}}`, n), metav1.PatchOptions{})
		case 7, 8:
			_, err = pc.Patch(ctx, p.Name, types.StrategicMergePatchType,
				fmt.Appendf(nil, `{"status":{"conditions":[{"type":"example.com/Churn","status":"True","message":"write %d"}]}}`, n), metav1.PatchOptions{}, "status")
		case 9:
			ns := p.Namespace
			name := deployment(ns, r.rng.IntN(r.plan.deployments[ns])).Name
			_, err = r.c.kube.AppsV1().Deployments(ns).Patch(ctx, name, types.MergePatchType, fmt.Appendf(nil, `{"metadata":{"annotations":{"example.com/churn":"%d"}}}`, n), metav1.PatchOptions{})
		}
		switch {
		case apierrors.IsNotFound(err):
			gone++
		case err != nil:
			return err
		default:
			writes++
		}
	}
	log.Printf("churn: %d writes, %d on objects gone", writes, gone)
	return nil
}
