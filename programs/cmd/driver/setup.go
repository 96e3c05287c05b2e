package main

import (
	"context"
	"fmt"
	"log"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kcache/cache/programs/internal/runstats"
)

// Setup is what setup measured: how long until KWOK had every node Ready,
// how long creating the pods took, and how long until every pod was Running
// and Ready.
type Setup struct {
	Nodes          int           `json:"nodes"`
	Pods           int           `json:"pods"`
	NodesReady     time.Duration `json:"nodes_ready"`      // from the first node create until every node was Ready
	Created        time.Duration `json:"created"`          // from the first pod create to the last
	AllRunning     time.Duration `json:"all_running"`      // from the first pod create until every pod ran
	LagAfterCreate time.Duration `json:"lag_after_create"` // AllRunning - Created
}

// setupOptions are setup's knobs.
type setupOptions struct {
	workers int
	// nodesFirst waits until KWOK has every node Ready before any pod is
	// created (see setup); without it nodes and pods are created at once,
	// which bench-programs-kwok-race uses to show KWOK's race.
	nodesFirst bool
	// wait bounds each wait, for the nodes and for the pods.
	wait time.Duration
}

// setup creates the namespaces and the nodes, waits until KWOK has every
// node Ready, then creates the pods and waits until every one runs.
//
// The pods wait for the nodes because of a race in KWOK v0.8.0, not in
// tools/cache: a pod event is dropped as "read only" while KWOK's Lease
// informer does not yet hold the Lease KWOK has just created for the pod's
// node, and the one re-list of the node's pods that follows the Lease's
// creation can be dropped the same way. A pod both miss stays Pending for
// good. KWOK plays a node's stages only once it holds the node's Lease, so
// a Ready node is one whose pods are no longer dropped.
func setup(ctx context.Context, c kubernetes.Interface, p plan, o setupOptions, out string) error {
	begin := time.Now()
	for i := range namespaces {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s%d", namespaceBase, i)}}
		if _, err := c.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating namespace %s: %w", ns.Name, err)
		}
	}
	if err := parallel(ctx, p.nodes, o.workers, func(i int) error {
		_, err := c.CoreV1().Nodes().Create(ctx, fakeNode(i), metav1.CreateOptions{})
		return err
	}); err != nil {
		return fmt.Errorf("creating nodes: %w", err)
	}
	s := Setup{Nodes: p.nodes, Pods: p.pods}
	if o.nodesFirst {
		if err := waitNodesReady(ctx, c, p, o.wait); err != nil {
			return err
		}
		s.NodesReady = time.Since(begin)
		log.Printf("every node was Ready after %s", s.NodesReady.Round(time.Millisecond))
	}
	start := time.Now()
	if err := parallel(ctx, p.pods, o.workers, func(i int) error {
		pod := p.pod(i)
		_, err := c.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
		return err
	}); err != nil {
		return fmt.Errorf("creating pods: %w", err)
	}
	s.Created = time.Since(start)
	log.Printf("created %d pods in %s", p.pods, s.Created.Round(time.Second))
	if err := waitRunning(ctx, c, p, start, o.wait); err != nil {
		return err
	}
	s.AllRunning = time.Since(start)
	s.LagAfterCreate = s.AllRunning - s.Created
	log.Printf("every pod ran after %s", s.AllRunning.Round(time.Second))
	return runstats.Write(out, s)
}

// parallel calls do(0..n-1) on workers goroutines and returns the first error.
func parallel(ctx context.Context, n, workers int, do func(int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range next {
				if err := do(i); err != nil {
					cancel(fmt.Errorf("item %d: %w", i, err))
				}
			}
		})
	}
	for i := 0; i < n && ctx.Err() == nil; i++ {
		select {
		case next <- i:
		case <-ctx.Done():
		}
	}
	close(next)
	wg.Wait()
	return context.Cause(ctx)
}

// poll calls check every period until it reports done, fails, ctx ends
// or wait has passed; then the error says what the last check saw.
func poll(ctx context.Context, wait, period time.Duration, check func() (done bool, saw string, err error)) error {
	deadline := time.Now().Add(wait)
	for {
		done, saw, err := check()
		if err != nil || done {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %s, %s", wait, saw)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(period):
		}
	}
}

// waitNodesReady polls until every node is Ready.
func waitNodesReady(ctx context.Context, c kubernetes.Interface, p plan, wait time.Duration) error {
	return poll(ctx, wait, 200*time.Millisecond, func() (bool, string, error) {
		nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, "", fmt.Errorf("listing nodes: %w", err)
		}
		ready := 0
		for i := range nodes.Items {
			if nodeReady(&nodes.Items[i]) {
				ready++
			}
		}
		return ready == p.nodes, fmt.Sprintf("%d of %d nodes Ready", ready, p.nodes), nil
	})
}

// waitRunning polls until every node is Ready and every pod Running and
// Ready, logging progress.
func waitRunning(ctx context.Context, c kubernetes.Interface, p plan, start time.Time, wait time.Duration) error {
	return poll(ctx, wait, 5*time.Second, func() (bool, string, error) {
		st, err := readState(ctx, c)
		if err != nil {
			return false, "", err
		}
		nodes, pods := st.readyNodes(), st.runningPods()
		saw := fmt.Sprintf("%d of %d nodes Ready and %d of %d pods running", nodes, p.nodes, pods, p.pods)
		done := nodes == p.nodes && pods == p.pods
		if !done {
			log.Printf("%s: %s", time.Since(start).Round(time.Second), saw)
		}
		return done, saw, nil
	})
}
