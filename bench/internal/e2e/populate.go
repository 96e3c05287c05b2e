package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// Managers name the two writers of every pod's managedFields.
const (
	ApplyManager  = "e2e-replicaset-controller"
	StatusManager = "e2e-kubelet"
)

// Populate makes sure pods 0..n-1 of layout exist, each created by a
// server-side apply and then given a status by an update, using workers
// concurrent writers. Pods already present are left alone. It returns how
// many pods the e2e namespaces hold afterwards.
func Populate(ctx context.Context, cs kubernetes.Interface, l Layout, n, workers int, progress io.Writer) (int, error) {
	for j := range l.Namespaces {
		ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: NamespaceName(j)}}
		if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return 0, fmt.Errorf("create namespace %s: %w", ns.Name, err)
		}
	}
	have, err := existing(ctx, cs, l)
	if err != nil {
		return 0, err
	}
	var todo []int
	for i := range n {
		if !have[l.PodNamespace(i)+"/"+l.PodName(i)] {
			todo = append(todo, i)
		}
	}
	if len(todo) > 0 {
		began := time.Now()
		fmt.Fprintf(progress, "e2e: creating %d pods (%d present) with %d writers\n", len(todo), len(have), workers)
		if err := createAll(ctx, cs, l, todo, workers); err != nil {
			return 0, err
		}
		fmt.Fprintf(progress, "e2e: created %d pods in %.1f s\n", len(todo), time.Since(began).Seconds())
	}
	have, err = existing(ctx, cs, l)
	if err != nil {
		return 0, err
	}
	return len(have), nil
}

// existing returns the keys of the pods in the e2e namespaces.
func existing(ctx context.Context, cs kubernetes.Interface, l Layout) (map[string]bool, error) {
	have := make(map[string]bool)
	for j := range l.Namespaces {
		ns := NamespaceName(j)
		opts := metav1.ListOptions{Limit: 5000}
		for {
			list, err := cs.CoreV1().Pods(ns).List(ctx, opts)
			if err != nil {
				return nil, fmt.Errorf("list pods in %s: %w", ns, err)
			}
			for k := range list.Items {
				have[ns+"/"+list.Items[k].Name] = true
			}
			if list.Continue == "" {
				break
			}
			opts.Continue = list.Continue
		}
	}
	return have, nil
}

// createAll writes the pods of todo with workers goroutines; the first
// error stops them all.
func createAll(ctx context.Context, cs kubernetes.Interface, l Layout, todo []int, workers int) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range max(workers, 1) {
		wg.Go(func() {
			for ctx.Err() == nil {
				k := int(next.Add(1)) - 1
				if k >= len(todo) {
					return
				}
				if err := createOne(ctx, cs, l, todo[k]); err != nil {
					cancel(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil && err != context.Canceled {
		return err
	}
	return nil
}

// createOne applies pod i's spec, then updates its status.
func createOne(ctx context.Context, cs kubernetes.Interface, l Layout, i int) error {
	want := l.ApplyPod(i)
	body, err := json.Marshal(want)
	if err != nil {
		return fmt.Errorf("encode pod %d: %w", i, err)
	}
	force := true
	pods := cs.CoreV1().Pods(want.Namespace)
	got, err := pods.Patch(ctx, want.Name, types.ApplyPatchType, body,
		metav1.PatchOptions{FieldManager: ApplyManager, Force: &force})
	if err != nil {
		return fmt.Errorf("apply pod %s/%s: %w", want.Namespace, want.Name, err)
	}
	got.Status = l.Status(i, got)
	if _, err := pods.UpdateStatus(ctx, got, metav1.UpdateOptions{FieldManager: StatusManager}); err != nil {
		return fmt.Errorf("update status of pod %s/%s: %w", want.Namespace, want.Name, err)
	}
	return nil
}
