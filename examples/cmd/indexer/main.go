// Command indexer shows an Indexer used by hand: a store with a custom key
// function (Pods keyed by UID) and secondary indexes (by namespace/name and
// by app label), queried with ByIndex, IndexKeys and ListIndexFuncValues;
// an index added to a store that already holds objects; and an index
// function that fails, which panics the write, as in client-go.
//
//	go run ./cmd/indexer
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	cache "github.com/kcache/cache"
	"github.com/kcache/cache/examples/internal/simcluster"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "indexer:", err)
		os.Exit(1)
	}
}

// byUID keys Pods by UID, so that a Pod deleted and recreated under the
// same name is a different entry.
func byUID(obj interface{}) (string, error) {
	pod, ok := obj.(*v1.Pod)
	if !ok || pod.UID == "" {
		return "", fmt.Errorf("keying by UID: %T has no UID", obj)
	}
	return string(pod.UID), nil
}

// byName indexes Pods by namespace/name, to find them by name again.
func byName(obj interface{}) ([]string, error) {
	pod := obj.(*v1.Pod)
	return []string{pod.Namespace + "/" + pod.Name}, nil
}

// byApp indexes Pods by their app label; a Pod without one is an error, to
// show what a failing index function does.
func byApp(obj interface{}) ([]string, error) {
	pod := obj.(*v1.Pod)
	app, ok := pod.Labels["app"]
	if !ok {
		return nil, errors.New("pod has no app label")
	}
	return []string{app}, nil
}

// byPhase indexes Pods by phase.
func byPhase(obj interface{}) ([]string, error) {
	return []string{string(obj.(*v1.Pod).Status.Phase)}, nil
}

func pod(ns, name, app, uid string, phase v1.PodPhase) *v1.Pod {
	p := simcluster.WithPhase(simcluster.NewPod(ns, name, app), phase)
	p.UID = types.UID(uid)
	return p
}

func run(out io.Writer) error {
	indexer := cache.NewIndexer(byUID, cache.Indexers{"by-name": byName, "by-app": byApp})
	for _, p := range []*v1.Pod{
		pod("shop", "web-1", "web", "uid-1", v1.PodRunning),
		pod("shop", "web-2", "web", "uid-2", v1.PodRunning),
		pod("shop", "api-1", "api", "uid-3", v1.PodPending),
		pod("blog", "web-1", "web", "uid-4", v1.PodRunning),
	} {
		if err := indexer.Add(p); err != nil {
			return err
		}
	}
	fmt.Fprintln(out, "keys (UIDs):", sorted(indexer.ListKeys()))
	fmt.Fprintln(out, "apps:", sorted(indexer.ListIndexFuncValues("by-app")))
	web, err := indexer.ByIndex("by-app", "web")
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "by-app web:", describe(web))
	keys, err := indexer.IndexKeys("by-name", "shop/web-1")
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "by-name shop/web-1 -> keys", keys)

	fmt.Fprintln(out, "\nshop/web-1 is deleted and recreated under the same name (new UID uid-5)")
	if err := indexer.Delete(pod("shop", "web-1", "web", "uid-1", v1.PodRunning)); err != nil {
		return err
	}
	if err := indexer.Add(pod("shop", "web-1", "web", "uid-5", v1.PodPending)); err != nil {
		return err
	}
	again, _ := indexer.ByIndex("by-name", "shop/web-1")
	fmt.Fprintln(out, "by-name shop/web-1:", describe(again))

	fmt.Fprintln(out, "\nadd a by-phase index to the filled store")
	if err := indexer.AddIndexers(cache.Indexers{"by-phase": byPhase}); err != nil {
		return err
	}
	running, _ := indexer.ByIndex("by-phase", string(v1.PodRunning))
	fmt.Fprintln(out, "by-phase Running:", describe(running))

	// As in client-go, a write whose index function fails panics: an
	// index function must accept every object the store may hold.
	fmt.Fprintln(out, "\nupdate shop/api-1 without its app label: the by-app index function fails")
	bad := pod("shop", "api-1", "api", "uid-3", v1.PodRunning)
	delete(bad.Labels, "app")
	fmt.Fprintln(out, "Update panicked:", updatePanic(indexer, bad))
	return nil
}

// updatePanic runs indexer.Update(obj) and returns what it panicked with.
func updatePanic(indexer cache.Indexer, obj interface{}) (p interface{}) {
	defer func() { p = recover() }()
	_ = indexer.Update(obj)
	return nil
}

func sorted(s []string) []string {
	slices.Sort(s)
	return s
}

// describe lists objects as namespace/name(uid, phase), sorted.
func describe(objs []interface{}) []string {
	out := make([]string, 0, len(objs))
	for _, obj := range objs {
		p := obj.(*v1.Pod)
		out = append(out, fmt.Sprintf("%s/%s(%s,%s)", p.Namespace, p.Name, p.UID, p.Status.Phase))
	}
	return sorted(out)
}
