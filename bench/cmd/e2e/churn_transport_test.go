package main

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/kcache/cache/bench/internal/harness"
)

// fakeChurnEnv, set in the environment of this test binary re-executed as
// a churn child, makes TestMain run the child with fakeChurnLibrary.
const fakeChurnEnv = "E2E_TEST_FAKE_CHURN_CHILD"

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == childFlag && os.Getenv(fakeChurnEnv) == "1" {
		libraries = append(libraries, fakeChurnLibrary)
		os.Exit(childMain(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// sentChurnResult is what the fake churn child measures: every field set,
// none to a value JSON could round off.
var sentChurnResult = harness.ChurnResult{
	Lib: "fake-churn", Pods: 3, Events: 42, Seconds: 1.5, CPUSeconds: 0.25,
	BeforeHeap: 1e6, AfterHeap: 2e6, BeforeLive: 3e5, AfterLive: 4e5, PeakHeap: 5e6, PeakLive: 6e5,
	GCSeconds: 0.0625, GCCycles: 7, AllocBytes: 123456789,
	GCCycleSeconds: 0.003125, GCLive: 8.5e6, GOGC: 75,
}

// fakeChurnLibrary's churn child speaks the protocol through cfg's Begin
// and End and returns sentChurnResult with End's count as its events.
func fakeChurnLibrary() harness.Library {
	return harness.Library{Name: "fake-churn", E2EChurn: func(ctx context.Context, cfg harness.ChurnConfig) (harness.ChurnResult, error) {
		res := sentChurnResult
		if err := cfg.Begin(ctx); err != nil {
			return res, err
		}
		n, err := cfg.End(ctx)
		res.Events = n
		return res, err
	}}
}

// TestChurnResultTransport runs this test binary as a churn child of a
// fake library through the parent's own startChurnChild, begin and end:
// every field the child measured reaches the parent.
func TestChurnResultTransport(t *testing.T) {
	defer goleak.VerifyNone(t)
	v := reflect.ValueOf(sentChurnResult)
	for k := range v.NumField() {
		if v.Field(k).IsZero() {
			t.Fatalf("sentChurnResult.%s is zero: a field lost on the way would go unnoticed", v.Type().Field(k).Name)
		}
	}
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(fakeChurnEnv, "1")
	opts := options{kubeconfig: writeKubeconfig(t), timeout: time.Minute, variants: []variant{{Lib: "fake-churn"}}}
	var stderr strings.Builder
	c, err := startChurnChild(context.Background(), opts, opts.variants[0], bin, sentChurnResult.Pods, &stderr)
	if err != nil {
		t.Fatalf("startChurnChild: %v; child's stderr:\n%s", err, stderr.String())
	}
	defer c.stop()
	if err := c.begin(); err != nil {
		t.Fatal(err)
	}
	got, err := c.end(sentChurnResult.Events)
	if err != nil {
		t.Fatalf("end: %v; child's stderr:\n%s", err, stderr.String())
	}
	if got != sentChurnResult {
		t.Errorf("parent got\n%+v\nchild sent\n%+v", got, sentChurnResult)
	}
}

// writeKubeconfig writes a kubeconfig naming a server nobody dials: the
// fake child builds its client from it and never uses it.
func writeKubeconfig(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	const cfg = `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
