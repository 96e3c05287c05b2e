package main

import (
	"context"
	"fmt"
	"time"
)

// scaleResult compares one replica holding every Pod with opts.scaleReplicas
// replicas sharing them out, each reconcile spending opts.work of CPU.
type scaleResult struct {
	pods, replicas int
	// heapSingle is the single replica's heap in use after the sync and
	// two collections; heapPerReplica the mean of the group's, heapMax
	// the largest.
	heapSingle, heapPerReplica, heapMax float64
	// settled* are the times from start until the caches settled;
	// reconciled* until every Pod had been reconciled once.
	settledSingle, settledGroup       time.Duration
	reconciledSingle, reconciledGroup time.Duration
}

func (r scaleResult) line() string {
	return fmt.Sprintf("scale-out-scale: pods=%d replicas=%d heap-single-mib=%.1f heap-per-replica-mib=%.1f heap-max-mib=%.1f heap/replica-vs-single=%.2f settled-single-s=%.1f settled-group-s=%.1f reconciled-all-single-s=%.1f reconciled-all-group-s=%.1f throughput-group/single=%.2f",
		r.pods, r.replicas, r.heapSingle/(1<<20), r.heapPerReplica/(1<<20), r.heapMax/(1<<20), r.heapRatio(),
		r.settledSingle.Seconds(), r.settledGroup.Seconds(), r.reconciledSingle.Seconds(), r.reconciledGroup.Seconds(), r.throughputRatio())
}

func (r scaleResult) heapRatio() float64 { return r.heapPerReplica / r.heapSingle }

// throughputRatio is the group's reconcile throughput over the single
// replica's, over the first reconcile of every Pod.
func (r scaleResult) throughputRatio() float64 {
	return r.reconciledSingle.Seconds() / r.reconciledGroup.Seconds()
}

// measureScale runs one replica alone, then opts.scaleReplicas together,
// each time in a group of its own, and stops them after.
func (g *group) measureScale(ctx context.Context) (scaleResult, error) {
	res := scaleResult{pods: len(g.truth), replicas: g.opts.scaleReplicas}
	single, err := g.runFresh(ctx, "scale-single", 1)
	if err != nil {
		return res, err
	}
	res.settledSingle, res.reconciledSingle = single.settled, single.reconciled
	res.heapSingle = single.heaps[0]
	group, err := g.runFresh(ctx, "scale-group", g.opts.scaleReplicas)
	if err != nil {
		return res, err
	}
	res.settledGroup, res.reconciledGroup = group.settled, group.reconciled
	for _, h := range group.heaps {
		res.heapPerReplica += h / float64(len(group.heaps))
		res.heapMax = max(res.heapMax, h)
	}
	return res, nil
}

// freshRun is what runFresh measured.
type freshRun struct {
	settled, reconciled time.Duration
	heaps               []float64
}

// runFresh starts n replicas in a new group (the replicas of the fault
// runs are stopped by then), waits until they settled and reconciled every
// Pod, reads their heaps after two collections, and stops them.
func (g *group) runFresh(ctx context.Context, name string, n int) (freshRun, error) {
	spec := g.spec
	spec.group = g.spec.group + "-" + name
	spec.work = g.opts.work
	fresh := &group{spec: spec, opts: g.opts, truth: g.truth, out: g.out, progress: g.progress, started: 100 * (n + 1)}
	defer fresh.stopAll()
	began := time.Now()
	for range n {
		if _, err := fresh.newReplica(ctx); err != nil {
			return freshRun{}, err
		}
	}
	var run freshRun
	for {
		rd := look(ctx, fresh.replicas, g.truth, n)
		if rd.settled && run.settled == 0 {
			run.settled = time.Since(began)
		}
		if run.reconciled == 0 && reconciledAll(rd, g.truth) {
			run.reconciled = time.Since(began)
		}
		if run.settled > 0 && run.reconciled > 0 {
			break
		}
		if time.Since(began) > g.opts.timeout {
			return run, fmt.Errorf("%s: %d replicas did not settle and reconcile every Pod in %s", name, n, g.opts.timeout)
		}
		select {
		case <-ctx.Done():
			return run, ctx.Err()
		case <-time.After(g.opts.interval):
		}
	}
	for _, r := range fresh.replicas {
		st, ok := fetchState(ctx, r.stateURL+"?gc=1")
		if !ok {
			return run, fmt.Errorf("%s: %s did not answer", name, r.identity)
		}
		run.heaps = append(run.heaps, float64(st.HeapInuse))
	}
	fmt.Fprintf(g.progress, "scale-out: %s: %d replicas settled in %.1f s, every Pod reconciled in %.1f s\n", name, n, run.settled.Seconds(), run.reconciled.Seconds())
	return run, nil
}

// reconciledAll reports whether every Pod of truth was reconciled by some
// claiming replica.
func reconciledAll(rd round, truth map[string]bool) bool {
	done := 0
	for key := range truth {
		for _, st := range rd.states {
			if st.Reconciled[key] != "" {
				done++
				break
			}
		}
	}
	return done == len(truth)
}
