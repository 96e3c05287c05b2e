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

// Setup is what setup measured: how long creating took, and how long until
// KWOK had every node Ready and every pod Running and Ready.
type Setup struct {
	Nodes          int           `json:"nodes"`
	Pods           int           `json:"pods"`
	Created        time.Duration `json:"created"`          // from the first create to the last
	AllRunning     time.Duration `json:"all_running"`      // from the first create until every pod ran
	LagAfterCreate time.Duration `json:"lag_after_create"` // AllRunning - Created
}

const setupTimeout = 45 * time.Minute

func setup(ctx context.Context, c kubernetes.Interface, p plan, workers int, out string) error {
	start := time.Now()
	for i := range namespaces {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s%d", namespaceBase, i)}}
		if _, err := c.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating namespace %s: %w", ns.Name, err)
		}
	}
	if err := parallel(ctx, p.nodes, workers, func(i int) error {
		_, err := c.CoreV1().Nodes().Create(ctx, fakeNode(i), metav1.CreateOptions{})
		return err
	}); err != nil {
		return fmt.Errorf("creating nodes: %w", err)
	}
	if err := parallel(ctx, p.pods, workers, func(i int) error {
		pod := p.pod(i)
		_, err := c.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
		return err
	}); err != nil {
		return fmt.Errorf("creating pods: %w", err)
	}
	s := Setup{Nodes: p.nodes, Pods: p.pods, Created: time.Since(start)}
	log.Printf("created %d nodes and %d pods in %s", p.nodes, p.pods, s.Created.Round(time.Second))
	if err := waitRunning(ctx, c, p, start); err != nil {
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

// waitRunning polls until every node is Ready and every pod Running and
// Ready, logging progress.
func waitRunning(ctx context.Context, c kubernetes.Interface, p plan, start time.Time) error {
	deadline := time.Now().Add(setupTimeout)
	for {
		st, err := readState(ctx, c)
		if err != nil {
			return err
		}
		nodes, pods := st.readyNodes(), st.runningPods()
		if nodes == p.nodes && pods == p.pods {
			return nil
		}
		log.Printf("%s: %d of %d nodes Ready, %d of %d pods Running and Ready",
			time.Since(start).Round(time.Second), nodes, p.nodes, pods, p.pods)
		if time.Now().After(deadline) {
			return fmt.Errorf("after %s, %d of %d nodes Ready and %d of %d pods running", setupTimeout, nodes, p.nodes, pods, p.pods)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Second):
		}
	}
}
