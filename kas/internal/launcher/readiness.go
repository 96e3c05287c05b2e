package launcher

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// readinessProbe asks a running API server whether it can take test
// traffic: /readyz answers ok and the "default" namespace exists (the API
// server creates it shortly after starting; tests put their objects there).
type readinessProbe struct {
	server string
	token  string
	client *http.Client
}

// probeTimeout bounds one probe request; a starting server may be slow.
const probeTimeout = 3 * time.Second

func newReadinessProbe(server string, caPEM []byte, token string) (*readinessProbe, error) {
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("build readiness probe: CA certificate is not valid PEM")
	}
	transport := &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
		DisableKeepAlives: true, // a restarted server must not see stale connections
	}
	return &readinessProbe{
		server: server,
		token:  token,
		client: &http.Client{Transport: transport, Timeout: probeTimeout},
	}, nil
}

// check returns nil when the server is ready, otherwise what is missing.
func (p *readinessProbe) check(ctx context.Context) error {
	if err := p.expectOK(ctx, "/readyz?verbose"); err != nil {
		return err
	}
	return p.expectOK(ctx, "/api/v1/namespaces/default")
}

func (p *readinessProbe) expectOK(ctx context.Context, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.server+path, nil)
	if err != nil {
		return fmt.Errorf("GET %s: %w", path, err)
	}
	req.Header.Set("Authorization", "Bearer "+p.token)
	resp, err := p.client.Do(req)
	if err != nil {
		return fmt.Errorf("GET %s: %w", path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s%s", path, resp.Status, failingChecks(body))
	}
	return nil
}

// failingChecks picks the "[-]name failed" lines out of a verbose /readyz
// answer, so a timeout message says which check held the server back.
func failingChecks(body []byte) string {
	var failed []string
	for line := range strings.Lines(string(body)) {
		if name, ok := strings.CutPrefix(strings.TrimSpace(line), "[-]"); ok {
			failed = append(failed, name)
		}
	}
	if len(failed) == 0 {
		return ""
	}
	return " (" + strings.Join(failed, "; ") + ")"
}

// waitUntil polls check every interval until it succeeds, ctx ends or gone
// is closed (the server exited; goneErr then says how). On timeout the error
// carries the last check result, usually the most useful hint.
func (p *readinessProbe) waitUntil(ctx context.Context, interval time.Duration, gone <-chan struct{}, goneErr func() error) error {
	// A probe must not outlive the server: with the socket kept open by the
	// launcher, a probe of a dead server would otherwise wait for its timeout.
	probeCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-gone:
			cancel()
		case <-probeCtx.Done():
		}
	}()

	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	last := errors.New("no probe answered yet")
	for {
		err := p.check(probeCtx)
		if err == nil {
			return nil
		}
		select {
		case <-gone: // takes precedence over a timeout that happened meanwhile
			return goneErr()
		default:
		}
		if ctx.Err() == nil { // a probe cut short by the deadline says nothing
			last = err
		}
		select {
		case <-gone:
			return goneErr()
		case <-ctx.Done():
			return fmt.Errorf("%w; last check: %w", context.Cause(ctx), last)
		case <-ticker.C:
		}
	}
}
