// Command labelserver answers label-selector queries over HTTP from an
// informer's cache, using an index of every label instead of scanning all
// Pods: GET /pods?selector=app=web,tier=frontend.
//
// It runs a few queries against itself and exits; with --serve it keeps
// serving until Ctrl-C, for you to try with curl.
//
//	go run ./cmd/labelserver
//	go run ./cmd/labelserver --serve --addr 127.0.0.1:8080
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"slices"
	"sync"
	"syscall"
	"time"

	cache "github.com/kcache/cache"
	"github.com/kcache/cache/examples/internal/simcluster"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/sets"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	serve := flag.Bool("serve", false, "keep serving after the sample queries, until Ctrl-C")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Stdout, *addr, *serve); err != nil {
		fmt.Fprintln(os.Stderr, "labelserver:", err)
		os.Exit(1)
	}
}

// labelIndex files each Pod under "key=value" for each of its labels.
const labelIndex = "labels"

func byLabel(obj interface{}) ([]string, error) {
	pod, ok := obj.(*v1.Pod)
	if !ok {
		return nil, fmt.Errorf("indexing labels: expected a *v1.Pod, got %T", obj)
	}
	out := make([]string, 0, len(pod.Labels))
	for k, v := range pod.Labels {
		out = append(out, k+"="+v)
	}
	return out, nil
}

// answer is the JSON of /pods.
type answer struct {
	Selector string `json:"selector"`
	// Indexed says the candidates came from the index; otherwise every
	// cached Pod was checked.
	Indexed bool     `json:"indexed"`
	Pods    []string `json:"pods"`
}

// query returns the keys of the cached Pods that sel matches. Requirements
// of the form key=value or key in (values) narrow the candidates through
// the index; every candidate is then checked against the whole selector.
func query(indexer cache.Indexer, sel labels.Selector) (answer, error) {
	reqs, _ := sel.Requirements()
	var candidates sets.Set[string]
	for _, r := range reqs {
		switch r.Operator() {
		case selection.Equals, selection.DoubleEquals, selection.In:
		default:
			continue
		}
		keys := sets.New[string]()
		for v := range r.Values() {
			k, err := indexer.IndexKeys(labelIndex, r.Key()+"="+v)
			if err != nil {
				return answer{}, err
			}
			keys.Insert(k...)
		}
		if candidates == nil {
			candidates = keys
		} else {
			candidates = candidates.Intersection(keys)
		}
	}
	a := answer{Selector: sel.String(), Indexed: candidates != nil, Pods: []string{}}
	if candidates == nil {
		candidates = sets.New(indexer.ListKeys()...)
	}
	for key := range candidates {
		obj, ok, err := indexer.GetByKey(key)
		if err != nil {
			return answer{}, err
		}
		if ok && sel.Matches(labels.Set(obj.(*v1.Pod).Labels)) {
			a.Pods = append(a.Pods, key)
		}
	}
	slices.Sort(a.Pods)
	return a, nil
}

func newHandler(indexer cache.Indexer) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /pods", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		sel, err := labels.Parse(r.URL.Query().Get("selector"))
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
			return
		}
		a, err := query(indexer, sel)
		if err != nil {
			w.WriteHeader(http.StatusInternalServerError)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
			return
		}
		_ = json.NewEncoder(w).Encode(a)
	})
	return mux
}

// pods is the cluster the server starts with.
func pods() []*v1.Pod {
	var out []*v1.Pod
	add := func(ns, name string, kv ...string) {
		p := simcluster.NewPod(ns, name, kv[1])
		for i := 0; i+1 < len(kv); i += 2 {
			p.Labels[kv[i]] = kv[i+1]
		}
		out = append(out, p)
	}
	add("shop", "web-1", "app", "web", "tier", "frontend", "env", "prod")
	add("shop", "web-2", "app", "web", "tier", "frontend", "env", "prod")
	add("shop", "api-1", "app", "api", "tier", "backend", "env", "prod")
	add("shop", "db-1", "app", "db", "tier", "backend", "env", "prod")
	add("staging", "web-1", "app", "web", "tier", "frontend", "env", "staging")
	add("staging", "api-1", "app", "api", "tier", "backend", "env", "staging")
	add("tools", "debug", "app", "debug")
	return out
}

func run(ctx context.Context, out io.Writer, addr string, serve bool) error {
	cluster := simcluster.New(simcluster.Options{})
	defer cluster.Close()
	if err := simcluster.Populate(cluster, pods()); err != nil {
		return err
	}
	informer := cache.NewSharedIndexInformer(cluster.ListerWatcher(), &v1.Pod{}, 0, cache.Indexers{labelIndex: byLabel})

	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { informer.RunWithContext(ctx) })
	defer wg.Wait()
	defer cancel()
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return errors.New("the informer did not sync")
	}

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: newHandler(informer.GetIndexer()), ReadHeaderTimeout: 5 * time.Second}
	wg.Go(func() { _ = srv.Serve(ln) })
	defer srv.Close()
	base := "http://" + ln.Addr().String()
	fmt.Fprintf(out, "serving %s/pods?selector=...\n", base)

	for _, selector := range []string{
		"app=web",
		"app=web,tier=frontend,env=prod",
		"env in (staging),tier=backend",
		"tier=frontend,env!=prod",
		"app!=web",
		"tier",
		"app=nope",
		"app=web,,",
	} {
		status, body, err := get(base + "/pods?selector=" + url.QueryEscape(selector))
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%-34s %d %s", selector, status, body)
	}

	if serve {
		fmt.Fprintln(out, "serving until Ctrl-C; try: curl -s", "'"+base+"/pods?selector=app%3Dweb'")
		<-ctx.Done()
	}
	return nil
}

func get(u string) (int, string, error) {
	resp, err := http.Get(u)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}
