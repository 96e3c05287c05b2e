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
	var pods corev1.PodList
	if err := c.List(ctx, &pods); err != nil {
		return replicaState{}, fmt.Errorf("listing the cached Pods: %w", err)
	}
	a := s.Assignment()
	st := replicaState{
		Identity: identity, Claiming: s.Claiming(), Index: a.Index, Count: a.Count,
		Cached: make(map[string]string, len(pods.Items)), Reconciled: p.reconciledVersions(),
	}
	for i := range pods.Items {
		st.Cached[pods.Items[i].Namespace+"/"+pods.Items[i].Name] = pods.Items[i].ResourceVersion
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	st.HeapInuse = ms.HeapInuse
	return st, nil
}
