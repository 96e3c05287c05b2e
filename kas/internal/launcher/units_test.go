package launcher

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/cert"
)

func TestCheckLoopback(t *testing.T) {
	tests := []struct {
		addr    string
		wantErr bool
	}{
		{addr: "127.0.0.1:0"},
		{addr: "127.0.0.1:8080"},
		{addr: "[::1]:0"},
		{addr: "localhost:0"},
		{addr: "0.0.0.0:0", wantErr: true},
		{addr: ":0", wantErr: true},
		{addr: "10.1.2.3:80", wantErr: true},
		{addr: "example.com:80", wantErr: true},
		{addr: "127.0.0.1", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.addr, func(t *testing.T) {
			err := checkLoopback(tc.addr)
			if (err != nil) != tc.wantErr {
				t.Errorf("checkLoopback(%q) = %v, want error: %v", tc.addr, err, tc.wantErr)
			}
		})
	}
}

func TestParseFlags(t *testing.T) {
	defaults := Options{
		KubeconfigOut: "kc",
		ControlAddr:   "127.0.0.1:0",
		EtcdTimeout:   time.Minute,
		ReadyTimeout:  3 * time.Minute,
		StopTimeout:   30 * time.Second,
	}
	with := func(change func(*Options)) Options {
		o := defaults
		change(&o)
		return o
	}
	tests := []struct {
		name    string
		args    []string
		want    Options
		wantErr string
	}{
		{name: "minimal", args: []string{"--kubeconfig-out", "kc"}, want: defaults},
		{
			name: "all flags",
			args: []string{"--kubeconfig-out=kc", "--control-addr=127.0.0.1:9999", "--data-dir=d", "--log-file=l",
				"--etcd-timeout=5s", "--ready-timeout=6s", "--stop-timeout=7s", "--etcd-quota-bytes=8589934592"},
			want: with(func(o *Options) {
				o.ControlAddr, o.DataDir, o.LogFile = "127.0.0.1:9999", "d", "l"
				o.EtcdQuotaBytes = 8 << 30
				o.EtcdTimeout, o.ReadyTimeout, o.StopTimeout = 5*time.Second, 6*time.Second, 7*time.Second
			}),
		},
		{
			name: "kube-apiserver flags after --",
			args: []string{"--kubeconfig-out", "kc", "--", "--v=4", "--watch-cache=false"},
			want: with(func(o *Options) { o.APIServerFlags = []string{"--v=4", "--watch-cache=false"} }),
		},
		{name: "negative quota", args: []string{"--kubeconfig-out", "kc", "--etcd-quota-bytes=-1"}, wantErr: "must not be negative"},
		{name: "missing kubeconfig", args: nil, wantErr: "--kubeconfig-out is required"},
		{name: "stray argument", args: []string{"--kubeconfig-out", "kc", "extra"}, wantErr: `unexpected argument "extra"`},
		{name: "unknown flag", args: []string{"--kubeconfig-out", "kc", "--nope"}, wantErr: "flag provided but not defined"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseFlags(tc.args, io.Discard)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseFlags error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseFlags: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseFlags (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCredentials(t *testing.T) {
	l := layout{root: t.TempDir()}
	creds, err := makeCredentials(l)
	if err != nil {
		t.Fatalf("makeCredentials: %v", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(creds.caPEM) {
		t.Fatal("CA PEM does not parse")
	}
	serving := firstCert(t, l.servingCert())
	tests := []struct {
		host    string
		wantErr bool
	}{
		{host: "127.0.0.1"},
		{host: "::1"},
		{host: "localhost"},
		{host: "10.0.0.1", wantErr: true},
		{host: "example.com", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.host, func(t *testing.T) {
			_, err := serving.Verify(x509.VerifyOptions{
				DNSName:   tc.host,
				Roots:     roots,
				KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
			})
			if (err != nil) != tc.wantErr {
				t.Errorf("verify serving certificate for %s: %v, want error: %v", tc.host, err, tc.wantErr)
			}
		})
	}
	t.Run("token file", func(t *testing.T) {
		data, err := os.ReadFile(l.tokenFile())
		if err != nil {
			t.Fatal(err)
		}
		want := creds.token + `,kas-admin,kas-admin,"system:masters"` + "\n"
		if diff := cmp.Diff(want, string(data)); diff != "" {
			t.Errorf("token file (-want +got):\n%s", diff)
		}
	})
	t.Run("files are private", func(t *testing.T) {
		for _, path := range []string{l.servingKey(), l.serviceAccountKey(), l.tokenFile()} {
			info, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if mode := info.Mode().Perm(); mode != 0o600 {
				t.Errorf("%s has mode %v, want 0600", path, mode)
			}
		}
	})
}

func firstCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	certs, err := cert.CertsFromFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return certs[0]
}

func TestKubeconfigBytes(t *testing.T) {
	data, err := kubeconfigBytes("https://127.0.0.1:6443", []byte("CA"), "tok")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		t.Fatalf("kubeconfig does not load: %v", err)
	}
	got := []string{cfg.Host, string(cfg.TLSClientConfig.CAData), cfg.BearerToken}
	if diff := cmp.Diff([]string{"https://127.0.0.1:6443", "CA", "tok"}, got); diff != "" {
		t.Errorf("kubeconfig host, CA, token (-want +got):\n%s", diff)
	}
	raw, err := clientcmd.Load(data)
	if err != nil {
		t.Fatal(err)
	}
	if ns := raw.Contexts[raw.CurrentContext].Namespace; ns != "default" {
		t.Errorf("context namespace = %q, want default", ns)
	}
}

func TestFailingChecks(t *testing.T) {
	tests := []struct {
		name string
		body string
		want string
	}{
		{name: "none failing", body: "[+]ping ok\nreadyz check passed", want: ""},
		{name: "empty", body: "", want: ""},
		{
			name: "two failing",
			body: "[+]ping ok\n[-]etcd failed: reason withheld\n[-]poststarthook/x failed: reason withheld\nreadyz check failed\n",
			want: " (etcd failed: reason withheld; poststarthook/x failed: reason withheld)",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, failingChecks([]byte(tc.body))); diff != "" {
				t.Errorf("failingChecks (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReadinessProbe(t *testing.T) {
	tests := []struct {
		name      string
		readyz    int
		namespace int
		token     string
		wantErr   string
	}{
		{name: "ready", readyz: 200, namespace: 200, token: "good"},
		{name: "readyz failing", readyz: 500, namespace: 200, token: "good", wantErr: "500 Internal Server Error (etcd failed)"},
		{name: "namespace missing", readyz: 200, namespace: 404, token: "good", wantErr: "/api/v1/namespaces/default: 404"},
		{name: "wrong token", readyz: 200, namespace: 200, token: "bad", wantErr: "401"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch {
				case r.Header.Get("Authorization") != "Bearer good":
					w.WriteHeader(http.StatusUnauthorized)
				case r.URL.Path == "/readyz":
					w.WriteHeader(tc.readyz)
					fmt.Fprint(w, "[+]ping ok\n[-]etcd failed\n")
				case r.URL.Path == "/api/v1/namespaces/default":
					w.WriteHeader(tc.namespace)
				default:
					w.WriteHeader(http.StatusTeapot)
				}
			}))
			defer srv.Close()
			caPEM, err := cert.EncodeCertificates(srv.Certificate())
			if err != nil {
				t.Fatal(err)
			}
			probe, err := newReadinessProbe(srv.URL, caPEM, tc.token)
			if err != nil {
				t.Fatal(err)
			}
			err = probe.check(context.Background())
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("check: %v, want ready", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("check: %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestReadinessWaitStopsWhenServerExits(t *testing.T) {
	chain, _, err := cert.GenerateSelfSignedCertKey("127.0.0.1", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	probe, err := newReadinessProbe("https://127.0.0.1:1", chain, "tok")
	if err != nil {
		t.Fatal(err)
	}
	gone := make(chan struct{})
	close(gone)
	exitErr := errors.New("process exited: exit status 3")
	err = probe.waitUntil(context.Background(), time.Hour, gone, func() error { return exitErr })
	if !errors.Is(err, exitErr) {
		t.Errorf("waitUntil = %v, want %v", err, exitErr)
	}
}

func TestRunStep(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	boom := errors.New("boom")
	tests := []struct {
		name     string
		timeout  time.Duration
		fn       func(context.Context) error
		wantText string // empty: success
	}{
		{name: "success", fn: func(context.Context) error { return nil }},
		{name: "failure", fn: func(context.Context) error { return boom }, wantText: `step "s" failed after`},
		{
			name:     "timeout",
			timeout:  10 * time.Millisecond,
			fn:       func(ctx context.Context) error { <-ctx.Done(); return context.Cause(ctx) },
			wantText: "timed out after 10ms",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := runStep(context.Background(), log, "s", tc.timeout, tc.fn)
			if tc.wantText == "" {
				if err != nil {
					t.Errorf("runStep: %v", err)
				}
				return
			}
			var stepErr *StepError
			if !errors.As(err, &stepErr) || stepErr.Step != "s" || !strings.Contains(err.Error(), tc.wantText) {
				t.Errorf("runStep = %v, want a StepError for step s containing %q", err, tc.wantText)
			}
		})
	}
}

func TestAPIServerFlagsLetUserWin(t *testing.T) {
	flags := apiserverFlags(layout{root: "/r"}, "unix:///r/etcd.sock", 6443, []string{"--v=9"})
	if flags[len(flags)-1] != "--v=9" {
		t.Errorf("user flag is not last: %v", flags)
	}
	for _, want := range []string{"--secure-port=6443", "--etcd-servers=unix:///r/etcd.sock", "--disable-admission-plugins=ServiceAccount"} {
		if !slices.Contains(flags, want) {
			t.Errorf("flags lack %s: %v", want, flags)
		}
	}
}

func TestAPIServerFlagsServiceAccountAdmission(t *testing.T) {
	const disable = "--disable-admission-plugins=ServiceAccount"
	for _, tc := range []struct {
		name        string
		extra       []string
		wantDisable bool
	}{
		{"no extra flags", nil, true},
		{"other plugins enabled", []string{"--enable-admission-plugins=NamespaceLifecycle"}, true},
		{"a plugin whose name contains it", []string{"--enable-admission-plugins=ServiceAccountTokens"}, true},
		{"enabled in a list", []string{"--enable-admission-plugins=NamespaceLifecycle,ServiceAccount"}, false},
		{"enabled as a separate value", []string{"--enable-admission-plugins", "ServiceAccount"}, false},
		{"enabled in a second flag", []string{"--enable-admission-plugins=LimitRanger", "--enable-admission-plugins=ServiceAccount"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			flags := apiserverFlags(layout{root: "/r"}, "unix:///r/etcd.sock", 6443, tc.extra)
			if got := slices.Contains(flags, disable); got != tc.wantDisable {
				t.Errorf("flags contain %s = %v, want %v: %v", disable, got, tc.wantDisable, flags)
			}
			if !slices.Equal(flags[len(flags)-len(tc.extra):], tc.extra) {
				t.Errorf("extra flags are not last: %v", flags)
			}
		})
	}
}
