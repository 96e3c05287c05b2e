package simcluster

import (
	// Under -race on Go 1.26 the tests run on one processor: its race
	// runtime crashes on synctest bubbles otherwise (golang/go#78156).
	_ "github.com/kcache/cache/internal/racesafe"

	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// The server's behaviour (resource versions, pages, continue tokens, 410s,
// streaming lists, selectors) is tested in the testing package; these
// tests cover what a Cluster sets up and adds.

// newTestCluster returns a cluster holding pods p1..pn in namespace ns,
// app=web for odd numbers and app=api for even ones.
func newTestCluster(t *testing.T, n int, opts Options) *Cluster {
	t.Helper()
	c := New(opts)
	t.Cleanup(c.Close)
	for i := 1; i <= n; i++ {
		app := "web"
		if i%2 == 0 {
			app = "api"
		}
		if _, err := c.Create(NewPod("ns", fmt.Sprintf("p%d", i), app)); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// names lists the names of a list's pods, then its continue state.
func names(t *testing.T, c *Cluster, opts metav1.ListOptions) []string {
	t.Helper()
	obj, err := c.List(context.Background(), opts)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	list := obj.(*v1.PodList)
	var out []string
	for _, p := range list.Items {
		out = append(out, p.Name)
	}
	if list.Continue != "" {
		out = append(out, "...")
	}
	return out
}

func TestCluster_ListsPagesAndSelectsPods(t *testing.T) {
	c := newTestCluster(t, 4, Options{})
	running, _ := c.Get("ns", "p3")
	running.Spec.NodeName = "node-1"
	if _, err := c.Update(WithPhase(running, v1.PodRunning)); err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		opts metav1.ListOptions
		want []string
	}{
		"everything":        {want: []string{"p1", "p2", "p3", "p4"}},
		"a page":            {opts: metav1.ListOptions{Limit: 3}, want: []string{"p1", "p2", "p3", "..."}},
		"by label":          {opts: metav1.ListOptions{LabelSelector: AppLabel + "=api"}, want: []string{"p2", "p4"}},
		"by phase":          {opts: metav1.ListOptions{FieldSelector: "status.phase=Running"}, want: []string{"p3"}},
		"by node":           {opts: metav1.ListOptions{FieldSelector: "spec.nodeName=node-1"}, want: []string{"p3"}},
		"by name and label": {opts: metav1.ListOptions{LabelSelector: AppLabel + "=web", FieldSelector: "metadata.name!=p1"}, want: []string{"p3"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, names(t, c, tc.opts)); diff != "" {
				t.Errorf("list (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCluster_StreamingListsOnlyWhenEnabled(t *testing.T) {
	for _, enabled := range []bool{false, true} {
		t.Run(fmt.Sprint("enabled=", enabled), func(t *testing.T) {
			c := newTestCluster(t, 1, Options{StreamingLists: enabled})
			if got := c.IsWatchListSemanticsUnSupported(); got == enabled {
				t.Errorf("IsWatchListSemanticsUnSupported = %v", got)
			}
			w, err := c.Watch(context.Background(), metav1.ListOptions{SendInitialEvents: ptr.To(true), AllowWatchBookmarks: true})
			if !enabled {
				if !apierrors.IsBadRequest(err) {
					t.Errorf("streaming list: error = %v, want 400", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("streaming list: %v", err)
			}
			defer w.Stop()
			added, end := <-w.ResultChan(), <-w.ResultChan()
			if added.Object.(*v1.Pod).Name != "p1" || end.Object.(*v1.Pod).Annotations[metav1.InitialEventsAnnotationKey] != "true" {
				t.Errorf("streaming list: %v then %v", added, end)
			}
		})
	}
}

func TestCluster_WritesReportAPIErrors(t *testing.T) {
	c := newTestCluster(t, 1, Options{})
	stale, _ := c.Get("ns", "p1")
	if _, err := c.Update(WithPhase(stale, v1.PodRunning)); err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		do   func() error
		want func(error) bool
	}{
		"create existing": {do: func() error { _, err := c.Create(NewPod("ns", "p1", "web")); return err }, want: apierrors.IsAlreadyExists},
		"update missing":  {do: func() error { _, err := c.Update(NewPod("ns", "nope", "web")); return err }, want: apierrors.IsNotFound},
		"update stale":    {do: func() error { _, err := c.Update(stale); return err }, want: apierrors.IsConflict},
		"delete missing":  {do: func() error { return c.Delete("ns", "nope") }, want: apierrors.IsNotFound},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if err := tc.do(); !tc.want(err) {
				t.Errorf("got %v", err)
			}
		})
	}
}

func TestCluster_MisbehavesAndCounts(t *testing.T) {
	c := newTestCluster(t, 2, Options{})
	w, err := c.Watch(context.Background(), watchFromNow(c))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if n := c.DropWatches(); n != 1 {
		t.Errorf("DropWatches = %d, want 1", n)
	}
	w2, err := c.Watch(context.Background(), watchFromNow(c))
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Stop()
	if err := c.Expire(func(tx Tx) error { return tx.Delete("ns", "p1") }); err != nil {
		t.Fatal(err)
	}
	if ev := <-w2.ResultChan(); !apierrors.IsResourceExpired(apierrors.FromObject(ev.Object)) {
		t.Errorf("watch open during Expire got %v, want a 410", ev)
	}
	if _, err := c.Watch(context.Background(), metav1.ListOptions{ResourceVersion: "2"}); !apierrors.IsResourceExpired(err) {
		t.Errorf("watch from before Expire: error = %v, want 410", err)
	}
	if diff := cmp.Diff([]string{"p2"}, names(t, c, metav1.ListOptions{})); diff != "" {
		t.Errorf("list after Expire (-want +got):\n%s", diff)
	}
	want := Stats{Lists: 1, ListPages: 1, Watches: 3, WatchesDropped: 2, Expirations: 1, GoneErrors: 2}
	if diff := cmp.Diff(want, c.Stats()); diff != "" {
		t.Errorf("Stats (-want +got):\n%s", diff)
	}
}

func TestCluster_ListLatency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newTestCluster(t, 3, Options{ListLatency: time.Second})
		start := time.Now()
		names(t, c, metav1.ListOptions{Limit: 2})
		if took := time.Since(start); took != time.Second {
			t.Errorf("a page took %v, want 1s", took)
		}
	})
}
