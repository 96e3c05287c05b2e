package launcher

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// testOptions runs the fake API server (this test binary) with the run
// directory under a fresh TMPDIR, which it returns for leak checks.
func testOptions(t *testing.T) (Options, string) {
	t.Helper()
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	return Options{
		KubeconfigOut: filepath.Join(out, "kubeconfig"),
		LogFile:       filepath.Join(out, "kas.log"),
		Executable:    exe,
		EtcdTimeout:   time.Minute,
		ReadyTimeout:  30 * time.Second,
		StopTimeout:   10 * time.Second,
	}, tmp
}

// expectEmptyDir fails when dir has entries: the launcher left files behind.
func expectEmptyDir(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if diff := cmp.Diff([]string(nil), names); diff != "" {
		t.Errorf("left behind in %s (-want +got):\n%s", dir, diff)
	}
}

// fakePID asks the API server behind kubeconfig which process answers.
func fakePID(t *testing.T, kubeconfig string) int {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatalf("load kubeconfig: %v", err)
	}
	transport, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: transport, Timeout: 10 * time.Second}).Get(cfg.Host + "/pid")
	if err != nil {
		t.Fatalf("GET /pid through the kubeconfig: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	pid, err := strconv.Atoi(string(body))
	if err != nil {
		t.Fatalf("GET /pid: %s %q", resp.Status, body)
	}
	return pid
}

// control sends a control API request and decodes the JSON answer into out
// (when not nil); it returns the HTTP status.
func control(t *testing.T, method, url string, out any) int {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatalf("%s %s: decode: %v", method, url, err)
		}
	}
	return resp.StatusCode
}

func TestLauncherLifecycle(t *testing.T) {
	opts, tmp := testOptions(t)
	l, err := Start(context.Background(), opts)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { l.Stop() })

	firstPID := fakePID(t, l.Kubeconfig())
	var restart RestartResult
	if code := control(t, http.MethodPost, l.ControlURL()+"/restart-apiserver", &restart); code != http.StatusOK {
		t.Fatalf("restart: HTTP %d", code)
	}
	secondPID := fakePID(t, l.Kubeconfig()) // same kubeconfig, same port
	if secondPID == firstPID || restart.PID != secondPID || restart.Restarts != 1 {
		t.Errorf("restart answered %+v; pids before %d, after %d: want a new process counted once", restart, firstPID, secondPID)
	}

	if code := control(t, http.MethodPost, l.ControlURL()+"/stop-apiserver", nil); code != http.StatusOK {
		t.Fatalf("stop-apiserver: HTTP %d", code)
	}
	var st Status
	control(t, http.MethodGet, l.ControlURL()+"/status", &st)
	if st.APIServer.Running {
		t.Errorf("status after stop-apiserver: %+v, want not running", st.APIServer)
	}
	if code := control(t, http.MethodPost, l.ControlURL()+"/start-apiserver", nil); code != http.StatusOK {
		t.Fatalf("start-apiserver: HTTP %d", code)
	}
	control(t, http.MethodGet, l.ControlURL()+"/status", &st)
	if diff := cmp.Diff(apiserverState{Running: true, PID: fakePID(t, l.Kubeconfig()), Restarts: 1}, st.APIServer); diff != "" {
		t.Errorf("status after start-apiserver (-want +got):\n%s", diff)
	}
	if st.Server != l.Server() || st.EtcdRevision <= 0 {
		t.Errorf("status = %+v, want server %s and a positive etcd revision", st, l.Server())
	}

	var compacted CompactResult
	if code := control(t, http.MethodPost, l.ControlURL()+"/compact", &compacted); code != http.StatusOK || compacted.Revision <= 0 {
		t.Fatalf("compact: HTTP %d, %+v", code, compacted)
	}
	again := l.ControlURL() + "/compact?revision=" + strconv.FormatInt(compacted.Revision, 10)
	if code := control(t, http.MethodPost, again, nil); code != http.StatusBadRequest {
		t.Errorf("compacting revision %d twice: HTTP %d, want %d", compacted.Revision, code, http.StatusBadRequest)
	}

	kubeconfig := l.Kubeconfig()
	if err := l.Stop(); err != nil {
		t.Errorf("Stop: %v", err)
	}
	if _, err := os.Stat(kubeconfig); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("kubeconfig after Stop: stat error %v, want not-exist", err)
	}
	expectEmptyDir(t, tmp)
}

func TestLauncherStartFailures(t *testing.T) {
	tests := []struct {
		name         string
		mode         string
		readyTimeout time.Duration
		wantStep     string
		wantText     []string
	}{
		{
			name:         "API server exits",
			mode:         fakeCrash,
			readyTimeout: time.Minute, // the exit must be noticed long before
			wantStep:     "start kube-apiserver",
			wantText:     []string{"exited", "exit status 7"},
		},
		{
			name:         "API server never ready",
			mode:         fakeUnready,
			readyTimeout: 5 * time.Second,
			wantStep:     "start kube-apiserver",
			wantText:     []string{"timed out after 5s", "poststarthook/fake-hook failed"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts, tmp := testOptions(t)
			opts.ReadyTimeout = tc.readyTimeout
			t.Setenv(fakeModeEnv, tc.mode)
			l, err := Start(context.Background(), opts)
			if err == nil {
				l.Stop()
				t.Fatal("Start succeeded, want an error")
			}
			var stepErr *StepError
			if !errors.As(err, &stepErr) || stepErr.Step != tc.wantStep {
				t.Fatalf("Start error %v, want a StepError of step %q", err, tc.wantStep)
			}
			for _, text := range tc.wantText {
				if !strings.Contains(err.Error(), text) {
					t.Errorf("Start error %q lacks %q", err, text)
				}
			}
			expectEmptyDir(t, tmp)
		})
	}
}

func TestLauncherKillsStubbornAPIServer(t *testing.T) {
	opts, tmp := testOptions(t)
	opts.StopTimeout = time.Second
	t.Setenv(fakeModeEnv, fakeStubborn)
	l, err := Start(context.Background(), opts)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	err = l.Stop()
	if err == nil || !strings.Contains(err.Error(), "was killed") {
		t.Errorf("Stop error %v, want one saying the API server was killed", err)
	}
	expectEmptyDir(t, tmp)
}

func TestStartStopsWhenContextEnds(t *testing.T) {
	opts, tmp := testOptions(t)
	t.Setenv(fakeModeEnv, fakeUnready)
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("test interrupt"))
	_, err := Start(ctx, opts)
	if err == nil || !strings.Contains(err.Error(), "test interrupt") {
		t.Errorf("Start error %v, want the context's cause", err)
	}
	expectEmptyDir(t, tmp)
}
