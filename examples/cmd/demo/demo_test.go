package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kcache/cache/examples/internal/simcluster"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// These tests build the demo binary and run it as a user would, talking
// to its HTTP server and reading its output.

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// demoBinary builds the demo once per test process, with the race
// detector when the tests have it.
func demoBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "kcache-demo-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "demo")
		args := []string{"build", "-o", binPath}
		if raceEnabled {
			args = append(args, "-race")
		}
		// go test puts the go command it runs with first on the tests' PATH.
		out, err := exec.Command("go", append(args, ".")...).CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// demoProcess is a running demo.
type demoProcess struct {
	t    *testing.T
	cmd  *exec.Cmd
	addr string

	// mu guards lines.
	mu     sync.Mutex
	lines  []string
	stderr strings.Builder
	// exited is closed when the process has exited and its output was
	// read; err is cmd.Wait's result.
	exited chan struct{}
	err    error
}

var addrLine = regexp.MustCompile(`^HTTP\s+serving http://(\S+)`)

// startDemo runs the demo with args and waits until it printed its
// address.
func startDemo(t *testing.T, args ...string) *demoProcess {
	t.Helper()
	cmd := exec.Command(demoBinary(t), args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	d := &demoProcess{t: t, cmd: cmd, exited: make(chan struct{})}
	cmd.Stderr = &lockedWriter{mu: &d.mu, w: &d.stderr}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	go func() {
		defer close(d.exited)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			if m := addrLine.FindStringSubmatch(line); m != nil {
				addr <- m[1]
			}
			d.mu.Lock()
			d.lines = append(d.lines, line)
			d.mu.Unlock()
		}
		d.err = cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-d.exited
		if t.Failed() {
			t.Logf("demo output:\n%s\nstderr:\n%s", strings.Join(d.output(), "\n"), d.stderrText())
		}
	})
	select {
	case d.addr = <-addr:
	case <-d.exited:
		t.Fatalf("demo exited before printing its address: %v", d.err)
	case <-time.After(2 * time.Minute):
		t.Fatal("demo did not print its address within 2 minutes")
	}
	return d
}

func (d *demoProcess) output() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.lines)
}

func (d *demoProcess) stderrText() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stderr.String()
}

// wait waits for the demo to exit and fails unless it exited with 0.
func (d *demoProcess) wait(timeout time.Duration) {
	d.t.Helper()
	select {
	case <-d.exited:
	case <-time.After(timeout):
		d.t.Fatalf("demo still running after %s", timeout)
	}
	if d.err != nil {
		d.t.Fatalf("demo exited with %v, want exit code 0", d.err)
	}
}

// get fetches path from the demo and returns the status and body.
func (d *demoProcess) get(path string) (int, []byte) {
	d.t.Helper()
	resp, err := http.Get("http://" + d.addr + path)
	if err != nil {
		d.t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		d.t.Fatalf("GET %s: reading the body: %v", path, err)
	}
	return resp.StatusCode, body
}

// waitForLines polls the demo's output until done says it holds what the
// test waits for; it fails the test if the demo exits first or timeout
// passes.
func (d *demoProcess) waitForLines(timeout time.Duration, done func([]string) bool) {
	d.t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !done(d.output()) {
		select {
		case <-d.exited:
			d.t.Fatalf("demo exited before its output showed what the test waits for: %v", d.err)
		case <-tick.C:
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("the demo's output lacked what the test waits for after %s", timeout)
		}
	}
}

// waitHealthy polls /healthz until it answers 200.
func (d *demoProcess) waitHealthy(timeout time.Duration) {
	d.t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		code, body := d.get("/healthz")
		switch {
		case code == http.StatusOK:
			return
		case code != http.StatusServiceUnavailable:
			d.t.Fatalf("/healthz = %d %q, want 200 or 503", code, body)
		case time.Now().After(deadline):
			d.t.Fatalf("/healthz still 503 after %s", timeout)
		}
		<-tick.C
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

var eventLine = regexp.MustCompile(`(?m)^(ADDED|MODIFIED|DELETED)\s+(default|shop|jobs)/[a-z]+-\d{5}\s+(Pending|Running|Succeeded|Failed)\b`)

// TestDemo_RunsAgainstAChurningCluster runs the demo against a busy
// simulated cluster that drops watches and compacts its history, until its
// output shows every kind of line (events, status, a dropped watch, a 410,
// a relist), then stops it with SIGTERM and checks its HTTP endpoints, its
// output and its exit code. It waits for what it checks, never for a fixed
// time, so a slow machine only makes it take longer.
func TestDemo_RunsAgainstAChurningCluster(t *testing.T) {
	t.Parallel()
	d := startDemo(t, "--addr=127.0.0.1:0", "--pods=2000", "--rate=100",
		"--list-latency=20ms", "--drop-every=1s", "--expire-every=2s", "--status-every=1s", "--print-rate=10")
	d.waitHealthy(2 * time.Minute)

	code, body := d.get("/pods?app=web")
	if code != http.StatusOK {
		t.Fatalf("/pods?app=web = %d %s", code, body)
	}
	var pods []podSummary
	if err := json.Unmarshal(body, &pods); err != nil {
		t.Fatalf("/pods?app=web: %v in %s", err, body)
	}
	if len(pods) == 0 {
		_, apps := d.get("/apps")
		t.Errorf("/pods?app=web returned no pods after /healthz said synced: %s (now /apps says %s)", body, apps)
	}
	for _, p := range pods {
		if !strings.HasPrefix(p.Name, "web-") || !slices.Contains([]string{"Pending", "Running", "Succeeded", "Failed"}, p.Phase) {
			t.Errorf("/pods?app=web returned %+v", p)
		}
	}
	if !slices.IsSortedFunc(pods, func(a, b podSummary) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	}) {
		t.Error("/pods?app=web is not sorted by namespace and name")
	}

	code, body = d.get("/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics = %d", code)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	for name, typ := range map[string]dto.MetricType{
		"kcache_demo_pods_cached":            dto.MetricType_GAUGE,
		"kcache_demo_synced":                 dto.MetricType_GAUGE,
		"kcache_demo_events_total":           dto.MetricType_COUNTER,
		"kcache_demo_pods":                   dto.MetricType_GAUGE,
		"kcache_informer_listener_backlog":   dto.MetricType_GAUGE,
		"kcache_informer_queued_items":       dto.MetricType_GAUGE,
		"kcache_informer_processing_seconds": dto.MetricType_HISTOGRAM,
		"reflector_lists_total":              dto.MetricType_COUNTER,
		"kcache_demo_sim_list_pages_total":   dto.MetricType_COUNTER,
	} {
		if fam, ok := fams[name]; !ok {
			t.Errorf("/metrics lacks %s", name)
		} else if fam.GetType() != typ {
			t.Errorf("/metrics: %s is a %v, want %v", name, fam.GetType(), typ)
		}
	}
	if got := samples(fams["kcache_demo_synced"]); len(got) != 1 || got[0].Value != 1 {
		t.Errorf("/metrics: kcache_demo_synced = %+v, want 1", got)
	}
	var handlers []string
	for _, s := range samples(fams["kcache_informer_listener_backlog"]) {
		if s.Labels["informer"] == "kcache-demo" && s.Labels["resource"] == "pods" {
			handlers = append(handlers, s.Labels["handler"])
		}
	}
	slices.Sort(handlers)
	if diff := cmp.Diff([]string{"main.eventPrinter", "main.podStats"}, handlers); diff != "" {
		t.Errorf("/metrics: handlers with a backlog gauge (-want +got):\n%s", diff)
	}

	atLeast := map[string]int{"event": 10, "status": 2, "drop": 1, "expire": 1, "relist": 1}
	d.waitForLines(2*time.Minute, func(out []string) bool {
		counts := churnLineCounts(out)
		for kind, n := range atLeast {
			if counts[kind] < n {
				return false
			}
		}
		return true
	})
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	d.wait(time.Minute)
	counts := churnLineCounts(d.output())
	want := map[string]int{"bar": 4, "bar done": 1, "synced": 1, "stopping": 1, "stopped": 1}
	for kind, n := range want {
		if counts[kind] != n {
			t.Errorf("%d %q lines, want %d", counts[kind], kind, n)
		}
	}
	for kind, n := range atLeast {
		if counts[kind] < n {
			t.Errorf("%d %q lines, want at least %d", counts[kind], kind, n)
		}
	}
}

// churnLineCounts counts the demo's output lines by kind.
func churnLineCounts(out []string) map[string]int {
	counts := map[string]int{}
	for _, line := range out {
		switch tag := strings.Fields(line + " x")[0]; {
		case eventLine.MatchString(line):
			counts["event"]++
		case tag == "SYNC" && strings.Contains(line, "listing pods [#") && strings.Contains(line, "/2,000"):
			counts["bar"]++
			if strings.Contains(line, "2,000/2,000  page 4, done in") {
				counts["bar done"]++
			}
		case tag == "SYNCED" && strings.Contains(line, "cache holds"):
			counts["synced"]++
		case tag == "STATUS" && strings.Contains(line, "events/s") && strings.Contains(line, "backlog eventPrinter="):
			counts["status"]++
		case tag == "SIM" && strings.Contains(line, "dropped"):
			counts["drop"]++
		case tag == "SIM" && strings.Contains(line, "410 Gone"):
			counts["expire"]++
		case tag == "RELIST":
			counts["relist"]++
		case tag == "STOP" && strings.Contains(line, "stopping: signal received"):
			counts["stopping"]++
		case tag == "STOP" && strings.Contains(line, "stopped cleanly"):
			counts["stopped"]++
		}
	}
	return counts
}

// TestDemo_StopsWhenItsDurationElapses checks that --duration ends the
// demo by itself, cleanly, saying why.
func TestDemo_StopsWhenItsDurationElapses(t *testing.T) {
	t.Parallel()
	d := startDemo(t, "--duration=1s", "--addr=127.0.0.1:0", "--pods=10", "--rate=0",
		"--drop-every=0", "--expire-every=0")
	d.wait(2 * time.Minute)
	out := strings.Join(d.output(), "\n")
	for _, want := range []string{"stopping: --duration 1s elapsed", "stopped cleanly"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

// TestDemo_AnswersFromTheIndex runs the demo against a cluster that does
// not change, so that every answer can be checked exactly against the
// Pods the same seed generates, then stops it with SIGTERM.
func TestDemo_AnswersFromTheIndex(t *testing.T) {
	t.Parallel()
	const pods, seed = 1500, 42
	// Three pages of half a second each: /healthz is 503 for 1.5s.
	d := startDemo(t, fmt.Sprintf("--pods=%d", pods), fmt.Sprintf("--seed=%d", seed), "--rate=0",
		"--drop-every=0", "--expire-every=0", "--list-latency=500ms")
	if code, body := d.get("/healthz"); code != http.StatusServiceUnavailable {
		t.Errorf("/healthz before the sync = %d %q, want 503", code, body)
	}
	d.waitHealthy(time.Minute)

	want := map[string][]podSummary{}
	for _, p := range simcluster.NewGenerator(seed).InitialPods(pods) {
		app := p.Labels[simcluster.AppLabel]
		want[app] = append(want[app], podSummary{Namespace: p.Namespace, Name: p.Name, Phase: string(p.Status.Phase)})
	}
	wantCounts := map[string]int{}
	for app, list := range want {
		slices.SortFunc(list, func(a, b podSummary) int {
			return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
		})
		wantCounts[app] = len(list)
	}
	for _, app := range simcluster.Apps {
		t.Run(app, func(t *testing.T) {
			code, body := d.get("/pods?app=" + app)
			var got []podSummary
			if err := json.Unmarshal(body, &got); code != http.StatusOK || err != nil {
				t.Fatalf("/pods?app=%s = %d %s (%v)", app, code, body, err)
			}
			if diff := cmp.Diff(want[app], got); diff != "" {
				t.Errorf("/pods?app=%s (-want +got):\n%s", app, diff)
			}
		})
	}
	if code, body := d.get("/pods?app=nope"); code != http.StatusOK || strings.TrimSpace(string(body)) != "[]" {
		t.Errorf("/pods?app=nope = %d %s, want 200 []", code, body)
	}
	if code, _ := d.get("/pods"); code != http.StatusBadRequest {
		t.Errorf("/pods without app = %d, want 400", code)
	}
	var counts map[string]int
	if _, body := d.get("/apps"); json.Unmarshal(body, &counts) != nil || !cmp.Equal(wantCounts, counts) {
		t.Errorf("/apps = %s, want %v", body, wantCounts)
	}

	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	d.wait(30 * time.Second)
	out := strings.Join(d.output(), "\n")
	for _, want := range []string{"stopping: signal received", "stopped cleanly"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if eventLine.MatchString(out) {
		t.Error("a cluster that does not change produced event lines")
	}
}

func TestDemo_BadFlagsExitWithUsage(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(demoBinary(t), "--pods=-1")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 {
		t.Errorf("--pods=-1: %v, want exit code 2\n%s", err, out)
	}
}
