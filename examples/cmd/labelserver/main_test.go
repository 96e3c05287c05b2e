package main

import (
	"context"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestRun(t *testing.T) {
	var out strings.Builder
	if err := run(context.Background(), &out, "127.0.0.1:0", false); err != nil {
		t.Fatalf("%v; output so far:\n%s", err, out.String())
	}
	got := regexp.MustCompile(`127\.0\.0\.1:\d+`).ReplaceAllString(out.String(), "127.0.0.1:PORT")
	want := `serving http://127.0.0.1:PORT/pods?selector=...
app=web                            200 {"selector":"app=web","indexed":true,"pods":["shop/web-1","shop/web-2","staging/web-1"]}
app=web,tier=frontend,env=prod     200 {"selector":"app=web,env=prod,tier=frontend","indexed":true,"pods":["shop/web-1","shop/web-2"]}
env in (staging),tier=backend      200 {"selector":"env in (staging),tier=backend","indexed":true,"pods":["staging/api-1"]}
tier=frontend,env!=prod            200 {"selector":"env!=prod,tier=frontend","indexed":true,"pods":["staging/web-1"]}
app!=web                           200 {"selector":"app!=web","indexed":false,"pods":["shop/api-1","shop/db-1","staging/api-1","tools/debug"]}
tier                               200 {"selector":"tier","indexed":false,"pods":["shop/api-1","shop/db-1","shop/web-1","shop/web-2","staging/api-1","staging/web-1"]}
app=nope                           200 {"selector":"app=nope","indexed":true,"pods":[]}
app=web,,                          400 {"error":"found ',', expected: identifier after ','"}
`
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
}

// signalWriter collects output and closes ready once it contains marker.
type signalWriter struct {
	mu     sync.Mutex
	b      strings.Builder
	marker string
	ready  chan struct{}
	once   sync.Once
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.b.Write(p)
	if strings.Contains(w.b.String(), w.marker) {
		w.once.Do(func() { close(w.ready) })
	}
	return n, err
}

func TestRun_ServeUntilCanceled(t *testing.T) {
	w := &signalWriter{marker: "serving until Ctrl-C", ready: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, w, "127.0.0.1:0", true) }()
	select {
	case <-w.ready:
	case err := <-done:
		t.Fatalf("run returned before serving: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("run did not start serving")
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("run after cancel = %v, want nil", err)
	}
}
