package launcher

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"
)

// Status is the answer of GET /status.
type Status struct {
	Server    string         `json:"server"`
	APIServer apiserverState `json:"apiserver"`
	// EtcdRevision is etcd's current revision (the newest resourceVersion).
	EtcdRevision int64 `json:"etcdRevision"`
}

// CompactResult is the answer of POST /compact.
type CompactResult struct {
	// Revision is the compaction point: reads and watches at any older
	// resourceVersion now fail with 410 Gone once they reach etcd.
	Revision int64 `json:"revision"`
}

// RestartResult is the answer of POST /restart-apiserver.
type RestartResult struct {
	Restarts int    `json:"restarts"`
	PID      int    `json:"pid"`
	Took     string `json:"took"`
}

// controller is what the control API drives; the launcher implements it.
type controller interface {
	status(ctx context.Context) (Status, error)
	restartAPIServer(ctx context.Context) (RestartResult, error)
	stopAPIServer(ctx context.Context) error
	startAPIServer(ctx context.Context) error
	compact(ctx context.Context, revision int64) (CompactResult, error)
}

// controlServer serves the launcher's control API over plain HTTP on a
// loopback address. It has no authentication: anything that can reach the
// loopback interface can restart the API server, which is the point.
type controlServer struct {
	listener net.Listener
	server   *http.Server
	done     chan struct{}
}

// checkLoopback refuses control addresses that would expose the API beyond
// this machine.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("control address %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("control address %q: host must be a loopback address such as 127.0.0.1", addr)
	}
	return nil
}

// startControlServer listens on addr and serves c in the background.
func startControlServer(addr string, c controller, log *slog.Logger) (*controlServer, error) {
	if err := checkLoopback(addr); err != nil {
		return nil, err
	}
	listener, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen for the control API: %w", err)
	}
	s := &controlServer{
		listener: listener,
		server: &http.Server{
			Handler:           controlHandler(c, log),
			ReadHeaderTimeout: 10 * time.Second,
		},
		done: make(chan struct{}),
	}
	go func() {
		defer close(s.done)
		if err := s.server.Serve(listener); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("control API stopped serving", "err", err)
		}
	}()
	return s, nil
}

// url is the base URL of the control API.
func (s *controlServer) url() string { return "http://" + s.listener.Addr().String() }

// stop closes the listener and waits up to timeout for running requests.
func (s *controlServer) stop(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	err := s.server.Shutdown(ctx)
	if err != nil {
		s.server.Close()
	}
	<-s.done
	if err != nil {
		return fmt.Errorf("stop control API: %w", err)
	}
	return nil
}

// controlHandler routes the control API. Every answer is JSON; failures are
// {"error": "..."} with a 4xx or 5xx status.
func controlHandler(c controller, log *slog.Logger) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, r *http.Request) {
		st, err := c.status(r.Context())
		reply(w, log, st, err)
	})
	mux.HandleFunc("POST /restart-apiserver", func(w http.ResponseWriter, r *http.Request) {
		res, err := c.restartAPIServer(r.Context())
		reply(w, log, res, err)
	})
	mux.HandleFunc("POST /stop-apiserver", func(w http.ResponseWriter, r *http.Request) {
		reply(w, log, struct{}{}, c.stopAPIServer(r.Context()))
	})
	mux.HandleFunc("POST /start-apiserver", func(w http.ResponseWriter, r *http.Request) {
		reply(w, log, struct{}{}, c.startAPIServer(r.Context()))
	})
	mux.HandleFunc("POST /compact", func(w http.ResponseWriter, r *http.Request) {
		revision, err := revisionParam(r)
		if err != nil {
			reply(w, log, nil, err)
			return
		}
		res, err := c.compact(r.Context(), revision)
		reply(w, log, res, err)
	})
	return mux
}

// errBadRequest marks errors caused by the request rather than the launcher.
var errBadRequest = errors.New("bad request")

// revisionParam reads the optional ?revision=N of POST /compact; 0 means
// "the current revision".
func revisionParam(r *http.Request) (int64, error) {
	raw := r.URL.Query().Get("revision")
	if raw == "" {
		return 0, nil
	}
	revision, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || revision <= 0 {
		return 0, fmt.Errorf("%w: revision %q is not a positive integer", errBadRequest, raw)
	}
	return revision, nil
}

func reply(w http.ResponseWriter, log *slog.Logger, body any, err error) {
	status := http.StatusOK
	if err != nil {
		status = http.StatusInternalServerError
		if errors.Is(err, errBadRequest) || errors.Is(err, errCompactRevision) {
			status = http.StatusBadRequest
		}
		log.Error("control request failed", "err", err)
		body = map[string]string{"error": err.Error()}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if encErr := json.NewEncoder(w).Encode(body); encErr != nil {
		log.Error("write control answer", "err", encErr)
	}
}
