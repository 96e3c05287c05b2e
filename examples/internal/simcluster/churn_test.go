package simcluster

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	cache "github.com/kcache/cache"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

func podSummary(pods []*v1.Pod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.Namespace + "/" + p.Name + " " + p.Labels[AppLabel] + " " + string(p.Status.Phase)
	}
	return out
}

func TestGenerator_SameSeedSamePods(t *testing.T) {
	a := podSummary(NewGenerator(7).InitialPods(50))
	b := podSummary(NewGenerator(7).InitialPods(50))
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("same seed, different pods (-first +second):\n%s", diff)
	}
	if c := podSummary(NewGenerator(8).InitialPods(50)); cmp.Equal(a, c) {
		t.Error("seeds 7 and 8 gave the same pods")
	}
	for _, p := range NewGenerator(7).InitialPods(50) {
		if !strings.HasPrefix(p.Name, p.Labels[AppLabel]+"-") {
			t.Errorf("pod %s is not named after its app %q", p.Name, p.Labels[AppLabel])
		}
	}
}

func TestChurn_KeepsPopulationNearTargetAndPhasesInOrder(t *testing.T) {
	const target = 40
	c := New(Options{})
	defer c.Close()
	gen := NewGenerator(3)
	if err := Populate(c, gen.InitialPods(target)); err != nil {
		t.Fatal(err)
	}
	w, err := c.Watch(context.Background(), watchFromNow(c))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	ch := NewChurn(c, gen, ChurnOptions{Target: target})
	const steps = 500
	// Read the events as they come: the server holds back a writer whose
	// watcher falls too far behind.
	events := make(chan []watch.Event, 1)
	go func() {
		var got []watch.Event
		for range steps {
			got = append(got, <-w.ResultChan())
		}
		events <- got
	}()
	for range steps {
		if err := ch.Step(); err != nil {
			t.Fatal(err)
		}
		if n := c.Len(); n < target*80/100 || n > target {
			t.Fatalf("population %d strayed from target %d", n, target)
		}
	}
	order := map[v1.PodPhase]int{v1.PodPending: 0, v1.PodRunning: 1, v1.PodSucceeded: 2, v1.PodFailed: 2}
	last := map[string]v1.PodPhase{}
	counts := map[string]int{}
	for _, ev := range <-events {
		p := ev.Object.(*v1.Pod)
		counts[string(ev.Type)]++
		if prev, ok := last[p.Name]; ok && order[p.Status.Phase] < order[prev] {
			t.Errorf("pod %s went from %s back to %s", p.Name, prev, p.Status.Phase)
		}
		last[p.Name] = p.Status.Phase
	}
	for _, typ := range []string{"ADDED", "MODIFIED", "DELETED"} {
		if counts[typ] == 0 {
			t.Errorf("no %s event in %d steps: %v", typ, steps, counts)
		}
	}
}

func watchFromNow(c *Cluster) metav1.ListOptions {
	return metav1.ListOptions{ResourceVersion: c.ResourceVersion()}
}

var cmpSorted = cmpopts.SortSlices(func(a, b string) bool { return a < b })

func TestChurn_RunMisbehavesOnSchedule(t *testing.T) {
	c := New(Options{})
	defer c.Close()
	told := make(chan string, 10)
	ch := NewChurn(c, NewGenerator(1), ChurnOptions{
		Rate: 500, Target: 10,
		DropEvery: 5 * time.Millisecond, ExpireEvery: 7 * time.Millisecond,
		OnMisbehave: func(what string) {
			select {
			case told <- what:
			default:
			}
		},
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// Keep a watch open, so that there is always one to drop: reopen it
	// whenever the Churn ends it.
	watching := make(chan struct{})
	go func() {
		defer close(watching)
		for ctx.Err() == nil {
			w, err := c.Watch(ctx, watchFromNow(c))
			if err != nil {
				return
			}
			for range w.ResultChan() {
			}
			w.Stop()
		}
	}()
	done := make(chan error, 1)
	go func() { done <- ch.Run(ctx) }()

	seen := map[string]bool{}
	timeout := time.After(30 * time.Second)
	for !seen["dropped"] || !seen["compacted"] {
		select {
		case what := <-told:
			seen[strings.Fields(what)[0]] = true
		case <-timeout:
			t.Fatalf("after 30s the Churn only reported %v", seen)
		}
	}
	cancel()
	if err := <-done; err != context.Canceled {
		t.Errorf("Run returned %v, want context.Canceled", err)
	}
	c.Close() // ends the open watch
	<-watching
	if s := c.Stats(); s.Expirations == 0 || s.WatchesDropped == 0 {
		t.Errorf("Stats() = %+v, want expirations and dropped watches", s)
	}
}

// signallingStore is a cache Store that reports each Replace.
type signallingStore struct {
	cache.Store
	replaced chan struct{}
}

func (s signallingStore) Replace(list []interface{}, rv string) error {
	err := s.Store.Replace(list, rv)
	s.replaced <- struct{}{}
	return err
}

func TestCluster_ReflectorRelistsAfterExpire(t *testing.T) {
	for name, streaming := range map[string]bool{"paginated lists": false, "streaming lists": true} {
		t.Run(name, func(t *testing.T) {
			c := newTestCluster(t, 5, Options{StreamingLists: streaming})
			store := signallingStore{cache.NewStore(cache.MetaNamespaceKeyFunc), make(chan struct{}, 4)}
			r := cache.NewReflectorWithOptions(c.ListerWatcher(), &v1.Pod{}, store, cache.ReflectorOptions{Name: "simcluster-test"})
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); r.RunWithContext(ctx) }()
			defer func() { cancel(); <-done }()

			<-store.replaced
			if err := c.Expire(func(tx Tx) error { return tx.Delete("ns", "p1") }); err != nil {
				t.Fatal(err)
			}
			<-store.replaced
			want := []string{"ns/p2", "ns/p3", "ns/p4", "ns/p5"}
			got := store.ListKeys()
			if diff := cmp.Diff(want, got, cmpSorted); diff != "" {
				t.Errorf("keys after the relist (-want +got):\n%s", diff)
			}
		})
	}
}
