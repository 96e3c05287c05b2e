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

// tokenOwnerAnnotation on an e2e namespace says who wrote the token
// volumes of its pods (Layout.TokenOwner), so that a run never measures
// pods another layout left behind.
const tokenOwnerAnnotation = "e2e.kcache.io/token-volume-by"

// Populate makes sure pods 0..n-1 of layout exist, each created by a
// server-side apply and then given a status by an update, using workers
// concurrent writers. Pods already present are left alone. It returns how
// many pods the e2e namespaces hold afterwards.
func Populate(ctx context.Context, cs kubernetes.Interface, l Layout, n, workers int, progress io.Writer) (int, error) {
	for j := range l.Namespaces {
		if err := ensureNamespace(ctx, cs, l, NamespaceName(j)); err != nil {
			return 0, err
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

// ensureNamespace creates namespace name for l's pods, with the
// ServiceAccount "default" that admission gives their pods (a controller
// manager would create it; kas runs none). An existing namespace must have
// been made for the same layout.
func ensureNamespace(ctx context.Context, cs kubernetes.Interface, l Layout, name string) error {
	ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name,
		Annotations: map[string]string{tokenOwnerAnnotation: l.TokenOwner()}}}
	_, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		got, getErr := cs.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		if getErr != nil {
			return fmt.Errorf("get namespace %s: %w", name, getErr)
		}
		if by := got.Annotations[tokenOwnerAnnotation]; by != l.TokenOwner() {
			return fmt.Errorf("namespace %s holds pods whose token volumes were written by %q, not by %q: "+
				"start from an empty server (kas/run.sh stop; bench/e2e.sh starts a fresh one)", name, by, l.TokenOwner())
		}
	} else if err != nil {
		return fmt.Errorf("create namespace %s: %w", name, err)
	}
	sa := &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: name}}
	if _, err := cs.CoreV1().ServiceAccounts(name).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create service account %s/default: %w", name, err)
	}
	return nil
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
	if !l.ApplierOwnsToken && !HasTokenVolume(got) {
		return fmt.Errorf("pod %s/%s got no service account token volume: the API server runs without ServiceAccount admission "+
			"(start kas with KAS_APISERVER_ARGS=--enable-admission-plugins=ServiceAccount, as bench/e2e.sh does)", want.Namespace, want.Name)
	}
	got.Status = l.Status(i, got)
	if _, err := pods.UpdateStatus(ctx, got, metav1.UpdateOptions{FieldManager: StatusManager}); err != nil {
		return fmt.Errorf("update status of pod %s/%s: %w", want.Namespace, want.Name, err)
	}
	return nil
}
