package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	cache "github.com/kcache/cache"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	v1 "k8s.io/api/core/v1"
)

// appIndex is the name of the informer's index of Pods by their "app"
// label.
const appIndex = "by-app"

// podsByApp is the index function of appIndex: a Pod without the label is
// not indexed.
func podsByApp(obj interface{}) ([]string, error) {
	pod, ok := obj.(*v1.Pod)
	if !ok {
		return nil, fmt.Errorf("indexing by app: expected a *v1.Pod, got %T", obj)
	}
	if app, ok := pod.Labels["app"]; ok {
		return []string{app}, nil
	}
	return nil, nil
}

// podSummary is one Pod in the answer of /pods.
type podSummary struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Phase     string `json:"phase"`
}

// newMux serves the demo's HTTP endpoints from the informer's cache.
func newMux(inf cache.SharedIndexInformer, gatherers ...prometheus.Gatherer) *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /pods", func(w http.ResponseWriter, r *http.Request) {
		app := r.URL.Query().Get("app")
		if app == "" {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "missing query parameter: /pods?app=NAME (see /apps)"})
			return
		}
		objs, err := inf.GetIndexer().ByIndex(appIndex, app)
		if err != nil {
			writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, summarize(objs))
	})
	mux.HandleFunc("GET /apps", func(w http.ResponseWriter, r *http.Request) {
		indexer := inf.GetIndexer()
		counts := map[string]int{}
		for _, app := range indexer.ListIndexFuncValues(appIndex) {
			keys, err := indexer.IndexKeys(appIndex, app)
			if err == nil && len(keys) > 0 {
				counts[app] = len(keys)
			}
		}
		writeJSON(w, http.StatusOK, counts)
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if !inf.HasSynced() {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, "not synced: the initial list is still loading")
			return
		}
		fmt.Fprintln(w, "ok: synced")
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(prometheus.Gatherers(gatherers), promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "kcache demo. Endpoints:")
		fmt.Fprintln(w, "  /pods?app=NAME  Pods labelled app=NAME, from the informer's index (JSON)")
		fmt.Fprintln(w, "  /apps           the index's values and how many Pods each has (JSON)")
		fmt.Fprintln(w, "  /metrics        Prometheus text format")
		fmt.Fprintln(w, "  /healthz        200 once the cache has synced, 503 before")
	})
	return mux
}

// summarize turns cached Pods into summaries ordered by namespace and
// name. The cached objects are shared and read-only: only read them.
func summarize(objs []interface{}) []podSummary {
	out := make([]podSummary, 0, len(objs))
	for _, obj := range objs {
		if pod, ok := obj.(*v1.Pod); ok {
			out = append(out, podSummary{Namespace: pod.Namespace, Name: pod.Name, Phase: string(pod.Status.Phase)})
		}
	}
	slices.SortFunc(out, func(a, b podSummary) int {
		if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
