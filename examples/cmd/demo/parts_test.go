package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	cache "github.com/kcache/cache"
	"github.com/kcache/cache/examples/internal/simcluster"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestThousands(t *testing.T) {
	for in, want := range map[int]string{0: "0", 7: "7", 999: "999", 1000: "1,000", 12345: "12,345", 1234567: "1,234,567", -4200: "-4,200"} {
		if got := thousands(in); got != want {
			t.Errorf("thousands(%d) = %q, want %q", in, got, want)
		}
	}
}

func TestProgressBar(t *testing.T) {
	tests := map[string]struct {
		done, total int
		want        string
	}{
		"empty":   {0, 10, "[----------]"},
		"half":    {5, 10, "[#####-----]"},
		"full":    {10, 10, "[##########]"},
		"over":    {12, 10, "[##########]"},
		"unknown": {3, -1, "[??????????]"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := progressBar(tc.done, tc.total, 10); got != tc.want {
				t.Errorf("progressBar(%d, %d) = %q, want %q", tc.done, tc.total, got, tc.want)
			}
		})
	}
}

func pod(ns, name string, phase v1.PodPhase, rv string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: rv, Labels: map[string]string{"app": strings.Split(name, "-")[0]}},
		Status:     v1.PodStatus{Phase: phase},
	}
}

func TestEventPrinter_PrintsChangesWithinTheRate(t *testing.T) {
	var out strings.Builder
	p := newEventPrinter(&console{w: &out}, 2)
	now := time.Unix(1000, 0)
	p.now = func() time.Time { return now }

	p.OnAdd(pod("ns", "web-1", v1.PodPending, "1"), true) // initial list: not printed
	p.OnAdd(pod("ns", "web-2", v1.PodPending, "2"), false)
	p.OnUpdate(pod("ns", "web-2", v1.PodPending, "2"), pod("ns", "web-2", v1.PodPending, "2")) // unchanged
	p.OnUpdate(pod("ns", "web-2", v1.PodPending, "2"), pod("ns", "web-2", v1.PodRunning, "3"))
	p.OnDelete(pod("ns", "web-2", v1.PodRunning, "4")) // over the rate
	if got := p.takeHidden(); got != 1 {
		t.Errorf("takeHidden() = %d, want 1", got)
	}
	now = now.Add(time.Second)
	p.OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/web-3", Obj: pod("ns", "web-3", v1.PodSucceeded, "5")})
	p.OnDelete("not a pod")

	want := "" +
		"ADDED     ns/web-2                 Pending\n" +
		"MODIFIED  ns/web-2                 Running    (was Pending)\n" +
		"DELETED   ns/web-3                 Succeeded  (deleted while the watch was down; seen by relisting)\n"
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
	if got := p.takeHidden(); got != 0 {
		t.Errorf("takeHidden() after taking = %d, want 0", got)
	}
}

func TestPodStats_CountsKindsAndPhases(t *testing.T) {
	s := newPodStats(prometheus.NewRegistry(), 0)
	s.OnAdd(pod("ns", "web-1", v1.PodPending, "1"), true)
	s.OnAdd(pod("ns", "web-2", v1.PodRunning, "2"), false)
	s.OnUpdate(pod("ns", "web-1", v1.PodPending, "1"), pod("ns", "web-1", v1.PodRunning, "3"))
	s.OnUpdate(pod("ns", "web-2", v1.PodRunning, "2"), pod("ns", "web-2", v1.PodRunning, "2"))
	s.OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/web-2", Obj: pod("ns", "web-2", v1.PodRunning, "2")})

	got := map[string]float64{
		"added": testutil.ToFloat64(s.added), "modified": testutil.ToFloat64(s.modified), "unchanged": testutil.ToFloat64(s.unchanged), "deleted": testutil.ToFloat64(s.deleted),
		"total": float64(s.total.Load()), "Running": float64(s.phaseCount(v1.PodRunning)), "Pending": float64(s.phaseCount(v1.PodPending)),
	}
	want := map[string]float64{"added": 2, "modified": 1, "unchanged": 1, "deleted": 1, "total": 5, "Running": 1, "Pending": 0}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
}

func TestSyncView_LinesWhenNotATerminal(t *testing.T) {
	tests := map[string]struct {
		reports []listProgress
		want    []string
	}{
		"pages of a known total, one line per tenth": {
			reports: []listProgress{
				{initial: true, pages: 1, items: 500, total: 2000},
				{initial: true, pages: 2, items: 1000, total: 2000},
				{initial: true, pages: 3, items: 1500, total: 2000},
				{initial: true, pages: 4, items: 2000, total: 2000, done: true, elapsed: 1500 * time.Millisecond},
			},
			want: []string{
				"SYNC      listing pods [#######-----------------------]    500/2,000  page 1",
				"SYNC      listing pods [###############---------------]  1,000/2,000  page 2",
				"SYNC      listing pods [######################--------]  1,500/2,000  page 3",
				"SYNC      listing pods [##############################]  2,000/2,000  page 4, done in 1.50s",
			},
		},
		"small pages within a tenth are skipped": {
			reports: []listProgress{
				{initial: true, pages: 1, items: 10, total: 100},
				{initial: true, pages: 2, items: 15, total: 100},
				{initial: true, pages: 3, items: 20, total: 100},
				{initial: true, pages: 4, items: 100, total: 100, done: true},
			},
			want: []string{
				"SYNC      listing pods [###---------------------------]     10/100  page 1",
				"SYNC      listing pods [######------------------------]     20/100  page 3",
				"SYNC      listing pods [##############################]    100/100  page 4, done in 0.00s",
			},
		},
		"streamed, total unknown": {
			reports: []listProgress{
				{initial: true, streamed: true, items: 250, total: -1},
				{initial: true, streamed: true, items: 300, total: 300, done: true},
			},
			want: []string{
				"SYNC      streaming pods [??????????????????????????????]    250/?  watch stream",
				"SYNC      streaming pods [##############################]    300/300  watch stream, done in 0.00s",
			},
		},
		"relists are one line when done": {
			reports: []listProgress{
				{pages: 1, items: 500, total: 900},
				{pages: 2, items: 900, total: 900, done: true, elapsed: 250 * time.Millisecond},
			},
			want: []string{"RELIST    listed 900 pods again in 0.25s (2 pages)"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var out strings.Builder
			v := &syncView{con: &console{w: &out}}
			for _, p := range tc.reports {
				v.report(p)
			}
			got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("lines (-want +got):\n%s", diff)
			}
		})
	}
}

func TestConsole_TerminalRedrawsTheBar(t *testing.T) {
	var out strings.Builder
	c := &console{w: &out, tty: true}
	c.Bar("one", false)
	c.Bar("two", false)
	c.Linef("STATUS", "x")
	c.Bar("three", true)
	want := "\r\033[KSYNC      one" +
		"\r\033[KSYNC      two" +
		"\r\033[KSTATUS    x\nSYNC      two" +
		"\r\033[KSYNC      three\n"
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
}

func TestListObserver_ReportsPagesStreamsAndRelists(t *testing.T) {
	c := simcluster.New(simcluster.Options{StreamingLists: true})
	defer c.Close()
	if err := simcluster.Populate(c, simcluster.NewGenerator(1).InitialPods(5)); err != nil {
		t.Fatal(err)
	}
	var got []listProgress
	o := &listObserver{report: func(p listProgress) {
		p.elapsed = 0
		got = append(got, p)
	}}
	lw := o.wrap(c.ListWatch())
	ctx := context.Background()
	list := func(opts metav1.ListOptions) {
		for {
			obj, err := lw.ListWithContext(ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			next := obj.(*v1.PodList).Continue
			if next == "" {
				return
			}
			opts.Continue = next
		}
	}
	list(metav1.ListOptions{Limit: 2})
	list(metav1.ListOptions{})
	w, err := lw.WatchWithContext(ctx, metav1.ListOptions{SendInitialEvents: ptr.To(true), AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	for range 6 { // 5 ADDED and the bookmark
		<-w.ResultChan()
	}
	w.Stop()

	want := []listProgress{
		{initial: true, pages: 1, items: 2, total: 5},
		{initial: true, pages: 2, items: 4, total: 5},
		{initial: true, pages: 3, items: 5, total: 5, done: true},
		{pages: 1, items: 5, total: 5, done: true},
		{streamed: true, items: 5, total: 5, done: true},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(listProgress{})); diff != "" {
		t.Errorf("reports (-want +got):\n%s", diff)
	}
	if got := o.relists(); got != 2 {
		t.Errorf("relists() = %d, want 2", got)
	}
}

func TestMux_AnswersFromTheInformer(t *testing.T) {
	c := simcluster.New(simcluster.Options{})
	defer c.Close()
	for _, p := range []*v1.Pod{
		simcluster.NewPod("shop", "web-2", "web"),
		simcluster.NewPod("default", "web-1", "web"),
		simcluster.WithPhase(simcluster.NewPod("default", "api-1", "api"), v1.PodRunning),
	} {
		if _, err := c.Create(p); err != nil {
			t.Fatal(err)
		}
	}
	inf := cache.NewSharedIndexInformer(c.ListerWatcher(), &v1.Pod{}, 0, cache.Indexers{appIndex: podsByApp})
	srv := httptest.NewServer(newMux(inf, prometheus.NewRegistry()))
	defer srv.Close()
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(body)
	}

	if code, _ := get("/healthz"); code != http.StatusServiceUnavailable {
		t.Errorf("/healthz before the informer ran = %d, want 503", code)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	defer func() { cancel(); <-done }()
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("not synced")
	}

	tests := map[string]struct {
		path     string
		wantCode int
		want     any
	}{
		"pods of an app, sorted": {"/pods?app=web", 200, []podSummary{
			{Namespace: "default", Name: "web-1", Phase: "Pending"},
			{Namespace: "shop", Name: "web-2", Phase: "Pending"},
		}},
		"pods of an unknown app": {"/pods?app=nope", 200, []podSummary{}},
		"apps":                   {"/apps", 200, map[string]int{"api": 1, "web": 2}},
		"healthz":                {"/healthz", 200, nil},
		"metrics":                {"/metrics", 200, nil},
		"pods without app":       {"/pods", 400, nil},
		"unknown path":           {"/nope", 404, nil},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			code, body := get(tc.path)
			if code != tc.wantCode {
				t.Fatalf("GET %s = %d %s, want %d", tc.path, code, body, tc.wantCode)
			}
			switch want := tc.want.(type) {
			case []podSummary:
				var got []podSummary
				if err := json.Unmarshal([]byte(body), &got); err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("GET %s (-want +got):\n%s", tc.path, diff)
				}
			case map[string]int:
				var got map[string]int
				if err := json.Unmarshal([]byte(body), &got); err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("GET %s (-want +got):\n%s", tc.path, diff)
				}
			}
		})
	}
}
