package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// group is the run's replicas and what they are judged against.
type group struct {
	spec  replicaSpec
	opts  options
	truth map[string]bool
	// out gets each phase's line as it ends; progress the rest.
	out, progress io.Writer
	// replicas are the live replicas, and those killed (their state no
	// longer answers); started counts every replica ever started.
	replicas []*replica
	started  int
	// controlURL is kas's control API (KAS_CONTROL_URL), for the API
	// server restart.
	controlURL string
	phases     []phase
}

// The faults a run can do, in the order it does them.
var allFaults = []string{"kill", "partition", "lease-failure", "rolling-restart", "scale", "apiserver-restart"}

// newReplica starts one more replica, each behind proxies of its own.
func (g *group) newReplica(ctx context.Context) (*replica, error) {
	p, err := newProxy(g.spec.target)
	if err != nil {
		return nil, err
	}
	leases, err := newProxy(g.spec.target)
	if err != nil {
		p.close()
		return nil, err
	}
	r, err := g.spec.start(ctx, fmt.Sprintf("replica-%d", g.started), p, leases)
	if err != nil {
		p.close()
		leases.close()
		return nil, err
	}
	g.started++
	g.replicas = append(g.replicas, r)
	return r, nil
}

// watch measures the phase name of replica from at until the group
// settles with want claiming replicas.
func (g *group) watch(ctx context.Context, name, replica string, want int, at time.Time) error {
	p, err := watchUntilSettled(ctx, name, replica, g.replicas, g.truth, want, at, g.opts.interval, g.opts.timeout)
	g.phases = append(g.phases, p)
	fmt.Fprintln(g.out, p.line())
	return err
}

// live is the replicas not killed or stopped.
func (g *group) live() []*replica {
	var out []*replica
	for _, r := range g.replicas {
		if !r.ended() {
			out = append(out, r)
		}
	}
	return out
}

// runFaults starts the group, then, with Pods changing, does each fault of
// opts.faults in turn, watching the group settle after each step.
func (g *group) runFaults(ctx context.Context, cs kubernetes.Interface) error {
	n := g.opts.replicas
	began := time.Now()
	for range n {
		if _, err := g.newReplica(ctx); err != nil {
			return err
		}
	}
	if err := g.watch(ctx, "start", "all", n, began); err != nil {
		return err
	}
	changes, stopChanges := context.WithCancel(ctx)
	defer stopChanges()
	go changer(changes, cs, g.truth, g.opts.changeRate)
	for _, f := range allFaults {
		if !slices.Contains(g.opts.faults, f) {
			continue
		}
		var err error
		switch f {
		case "kill":
			err = g.killAndRestart(ctx)
		case "partition":
			err = g.cutOff(ctx, "partition", func(r *replica) []*proxy { return []*proxy{r.proxy, r.leases} })
		case "lease-failure":
			err = g.cutOff(ctx, "lease-failure", func(r *replica) []*proxy { return []*proxy{r.leases} })
		case "rolling-restart":
			err = g.rollingRestart(ctx)
		case "scale":
			err = g.scale(ctx)
		case "apiserver-restart":
			err = g.apiserverRestart(ctx)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// killAndRestart kills one replica (SIGKILL: its Lease stays until it
// expires) and then starts it again.
func (g *group) killAndRestart(ctx context.Context) error {
	live := g.live()
	victim := live[len(live)/2]
	at := time.Now()
	victim.kill()
	if err := g.watch(ctx, "kill", victim.identity, len(live)-1, at); err != nil {
		return err
	}
	at = time.Now()
	again, err := g.spec.start(ctx, victim.identity, victim.proxy, victim.leases)
	if err != nil {
		return err
	}
	g.replicas = append(g.replicas, again)
	return g.watch(ctx, "restart", again.identity, len(live), at)
}

// cutOff blackholes proxies of a replica (which picks: all its traffic, or
// only its Leases'), waits until the others settled and opts.partition
// passed, and heals them.
func (g *group) cutOff(ctx context.Context, name string, which func(*replica) []*proxy) error {
	live := g.live()
	cut := live[len(live)-1]
	set := func(on bool) {
		for _, p := range which(cut) {
			p.setBlackholed(on)
		}
	}
	at := time.Now()
	set(true)
	if err := g.watch(ctx, name, cut.identity, len(live)-1, at); err != nil {
		set(false)
		return err
	}
	if rest := g.opts.partition - time.Since(at); rest > 0 {
		time.Sleep(rest)
	}
	at = time.Now()
	set(false)
	return g.watch(ctx, name+"-healed", cut.identity, len(live), at)
}

// rollingRestart stops each replica cleanly (it releases its Lease) and
// starts it again, one after the other, as a Deployment's rollout does.
func (g *group) rollingRestart(ctx context.Context) error {
	live := g.live()
	for _, r := range live {
		at := time.Now()
		r.stop()
		again, err := g.spec.start(ctx, r.identity, r.proxy, r.leases)
		if err != nil {
			return err
		}
		g.replicas = append(g.replicas, again)
		if err := g.watch(ctx, "rolling-restart", r.identity, len(live), at); err != nil {
			return err
		}
	}
	return nil
}

// scale grows the group to opts.scaleUp replicas, then shrinks it to
// opts.scaleDown, stopping replicas cleanly.
func (g *group) scale(ctx context.Context) error {
	at := time.Now()
	for len(g.live()) < g.opts.scaleUp {
		if _, err := g.newReplica(ctx); err != nil {
			return err
		}
	}
	if err := g.watch(ctx, "scale-up", fmt.Sprintf("to-%d", g.opts.scaleUp), g.opts.scaleUp, at); err != nil {
		return err
	}
	at = time.Now()
	live := g.live()
	for _, r := range live[g.opts.scaleDown:] {
		r.stop()
	}
	return g.watch(ctx, "scale-down", fmt.Sprintf("to-%d", g.opts.scaleDown), g.opts.scaleDown, at)
}

// apiserverRestart starts one more replica, so that ranges move, and
// restarts the API server while the others hand their Pods over.
func (g *group) apiserverRestart(ctx context.Context) error {
	if g.controlURL == "" {
		return fmt.Errorf("apiserver-restart: KAS_CONTROL_URL is not set")
	}
	want := len(g.live()) + 1
	at := time.Now()
	r, err := g.newReplica(ctx)
	if err != nil {
		return err
	}
	// The handoff is under way once the newcomer serves its state.
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.controlURL+"/restart-apiserver", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("apiserver-restart: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("apiserver-restart: %s", resp.Status)
	}
	return g.watch(ctx, "apiserver-restart", r.identity, want, at)
}

// missed waits, with the changes stopped, until the owner of every Pod has
// reconciled its current resourceVersion, and returns how many Pods still
// lack that when the timeout passes.
func (g *group) missed(ctx context.Context, cs kubernetes.Interface) (int, error) {
	deadline := time.Now().Add(g.opts.timeout)
	for {
		pods, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return 0, err
		}
		rd := look(ctx, g.replicas, g.truth, len(g.live()))
		missed := 0
		for _, p := range pods.Items {
			key := p.Namespace + "/" + p.Name
			seen := false
			for _, st := range rd.states {
				if st.Cached[key] != "" && st.Reconciled[key] == p.ResourceVersion {
					seen = true
				}
			}
			if !seen {
				missed++
			}
		}
		if missed == 0 || time.Now().After(deadline) {
			return missed, nil
		}
		time.Sleep(g.opts.interval)
	}
}

// stopAll stops every live replica cleanly and closes the proxies.
func (g *group) stopAll() {
	for _, r := range g.live() {
		r.stop()
	}
	closed := map[*proxy]bool{}
	for _, r := range g.replicas {
		for _, p := range []*proxy{r.proxy, r.leases} {
			if p != nil && !closed[p] {
				closed[p] = true
				p.close()
			}
		}
	}
}

// summary is the last line, for tools.
func summary(opts options, phases []phase, missed int, scaled *scaleResult) string {
	var unowned, doubled time.Duration
	faults := 0
	for _, p := range phases {
		if p.name == "start" {
			continue
		}
		faults++
		unowned, doubled = max(unowned, p.unownedMax), max(doubled, p.doubledMax)
	}
	// Every phase ended settled (runFaults fails otherwise): the caches
	// were disjoint and their union the server's Pods.
	heap, throughput := "-", "-"
	if scaled != nil {
		heap, throughput = fmt.Sprintf("%.2f", scaled.heapRatio()), fmt.Sprintf("%.2f", scaled.throughputRatio())
	}
	return fmt.Sprintf("scale-out: pods=%d replicas=%d faults=%d unowned-max=%.1fs double-max=%.1fs missed=%d union=OK disjoint=OK heap/replica vs single = %s throughput R/1 = %s",
		opts.pods, opts.replicas, faults, unowned.Seconds(), doubled.Seconds(), missed, heap, throughput)
}
