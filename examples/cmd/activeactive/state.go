package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"time"

	"github.com/kcache/cache/sharding"
	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// replicaState is what --state-addr serves at /state: enough for a driver
// outside the group (bench/cmd/scale-out) to check, round after round,
// which replica holds which Pod and what each reconciled.
type replicaState struct {
	Identity string `json:"identity"`
	// Claiming is the Sharder's: the replica holds a range and its
	// informers were moved to it. While it is false its reconciler lets
	// no cached Pod through.
	Claiming bool `json:"claiming"`
	Index    int  `json:"index"`
	Count    int  `json:"count"`
	// Cached maps each cached Pod's namespace/name to its resourceVersion.
	Cached map[string]string `json:"cached"`
	// Reconciled maps each Pod the reconciler read from the cache to the
	// newest resourceVersion it read.
	Reconciled map[string]string `json:"reconciled"`
	// HeapInuse is the process's heap in use, after two collections when
	// the request asked for them (/state?gc=1).
	HeapInuse uint64 `json:"heapInuse"`
}

// serveState serves the replica's state on addr until ctx ends, after
// printing where to out.
func serveState(ctx context.Context, addr, identity string, s *sharding.Sharder, c cache.Cache, p *podCounter, out io.Writer) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("state endpoint: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/state", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("gc") == "1" {
			runtime.GC()
			runtime.GC()
		}
		st, err := currentState(r.Context(), identity, s, c, p)
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(st)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(out, "%s: state at http://%s/state\n", identity, ln.Addr())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	<-ctx.Done()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdownCtx)
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("state endpoint: %w", err)
	}
	return nil
}

// currentState reads the replica's state now.
func currentState(ctx context.Context, identity string, s *sharding.Sharder, c cache.Cache, p *podCounter) (replicaState, error) {
	pods, err := cachedPods(ctx, c)
	if err != nil {
		return replicaState{}, err
	}
	a := s.Assignment()
	st := replicaState{
		Identity: identity, Claiming: s.Claiming(), Index: a.Index, Count: a.Count,
		Cached: make(map[string]string, len(pods)), Reconciled: p.reconciledVersions(),
	}
	for _, pod := range pods {
		st.Cached[pod.Namespace+"/"+pod.Name] = pod.ResourceVersion
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	st.HeapInuse = ms.HeapInuse
	return st, nil
}

// cachedPods returns the Pods the replica caches. It reads the informer's
// store, which hands out the cached objects themselves, where it can: the
// cache's List copies every object, too slow to do several times a second
// at tens of thousands of Pods. The objects must not be modified.
func cachedPods(ctx context.Context, c cache.Cache) ([]*corev1.Pod, error) {
	inf, err := c.GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		return nil, fmt.Errorf("the Pod informer: %w", err)
	}
	if withStore, ok := inf.(interface{ GetStore() toolscache.Store }); ok {
		var out []*corev1.Pod
		for _, obj := range withStore.GetStore().List() {
			if pod, ok := obj.(*corev1.Pod); ok {
				out = append(out, pod)
			}
		}
		return out, nil
	}
	var list corev1.PodList
	if err := c.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing the cached Pods: %w", err)
	}
	out := make([]*corev1.Pod, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}
