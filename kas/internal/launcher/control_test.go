package launcher

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fakeController records the calls of the control API and answers with err.
type fakeController struct {
	calls []string
	err   error
}

func (f *fakeController) status(context.Context) (Status, error) {
	f.calls = append(f.calls, "status")
	return Status{Server: "https://127.0.0.1:1", EtcdRevision: 42}, f.err
}

func (f *fakeController) restartAPIServer(context.Context) (RestartResult, error) {
	f.calls = append(f.calls, "restart")
	return RestartResult{Restarts: 1, PID: 9, Took: "1s"}, f.err
}

func (f *fakeController) stopAPIServer(context.Context) error {
	f.calls = append(f.calls, "stop")
	return f.err
}

func (f *fakeController) startAPIServer(context.Context) error {
	f.calls = append(f.calls, "start")
	return f.err
}

func (f *fakeController) compact(_ context.Context, revision int64) (CompactResult, error) {
	f.calls = append(f.calls, fmt.Sprintf("compact %d", revision))
	return CompactResult{Revision: revision}, f.err
}

func TestControlHandler(t *testing.T) {
	tests := []struct {
		name       string
		method     string
		target     string
		err        error
		wantStatus int
		wantCalls  []string
		wantBody   string
	}{
		{name: "status", method: "GET", target: "/status", wantStatus: 200, wantCalls: []string{"status"},
			wantBody: `{"server":"https://127.0.0.1:1","apiserver":{"running":false,"restarts":0},"etcdRevision":42}`},
		{name: "restart", method: "POST", target: "/restart-apiserver", wantStatus: 200, wantCalls: []string{"restart"},
			wantBody: `{"restarts":1,"pid":9,"took":"1s"}`},
		{name: "restart fails", method: "POST", target: "/restart-apiserver", err: errors.New("no luck"),
			wantStatus: 500, wantCalls: []string{"restart"}, wantBody: `{"error":"no luck"}`},
		{name: "stop", method: "POST", target: "/stop-apiserver", wantStatus: 200, wantCalls: []string{"stop"}, wantBody: `{}`},
		{name: "start", method: "POST", target: "/start-apiserver", wantStatus: 200, wantCalls: []string{"start"}, wantBody: `{}`},
		{name: "compact now", method: "POST", target: "/compact", wantStatus: 200, wantCalls: []string{"compact 0"},
			wantBody: `{"revision":0}`},
		{name: "compact at revision", method: "POST", target: "/compact?revision=17", wantStatus: 200,
			wantCalls: []string{"compact 17"}, wantBody: `{"revision":17}`},
		{name: "compact at a bad revision", method: "POST", target: "/compact?revision=x", wantStatus: 400,
			wantBody: `{"error":"bad request: revision \"x\" is not a positive integer"}`},
		{name: "compact refused by etcd", method: "POST", target: "/compact?revision=3", err: errCompactRevision,
			wantStatus: 400, wantCalls: []string{"compact 3"}, wantBody: `{"error":"bad compaction revision"}`},
		{name: "GET on an action", method: "GET", target: "/compact", wantStatus: 405},
		{name: "unknown path", method: "POST", target: "/nope", wantStatus: 404},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fake := &fakeController{err: tc.err}
			handler := controlHandler(fake, slog.New(slog.NewTextHandler(io.Discard, nil)))
			rec := httptest.NewRecorder()
			handler.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.target, nil))
			if rec.Code != tc.wantStatus {
				t.Errorf("HTTP status %d, want %d (body %q)", rec.Code, tc.wantStatus, rec.Body)
			}
			if diff := cmp.Diff(tc.wantCalls, fake.calls); diff != "" {
				t.Errorf("controller calls (-want +got):\n%s", diff)
			}
			if tc.wantBody != "" {
				if diff := cmp.Diff(tc.wantBody, strings.TrimSpace(rec.Body.String())); diff != "" {
					t.Errorf("body (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestControlServerRefusesNonLoopback(t *testing.T) {
	_, err := startControlServer("0.0.0.0:0", &fakeController{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Errorf("startControlServer(0.0.0.0:0) = %v, want a loopback error", err)
	}
}
