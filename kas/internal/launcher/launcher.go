// Package launcher runs a real kube-apiserver backed by an embedded etcd on
// the loopback interface, for integration tests.
//
// etcd runs inside the launcher process; the API server runs in a child
// process (the launcher's own binary in API server mode, see package
// apiserver) that serves on a socket the launcher keeps open. The launcher
// can therefore restart the API server on the same etcd, port and
// credentials, and compact etcd, on request of its control API.
package launcher

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Options configure one launcher run.
type Options struct {
	// KubeconfigOut is where the kubeconfig is written (required). The launcher
	// removes the file when it stops.
	KubeconfigOut string
	// ControlAddr is the loopback host:port of the control API; port 0 picks
	// a free port.
	ControlAddr string
	// DataDir, when set, is the etcd data directory to use and keep. When
	// empty a temporary directory is used and removed on Stop.
	DataDir string
	// LogFile receives the logs of the launcher, etcd and the API server;
	// empty means standard error.
	LogFile string
	// Executable is the binary to run in API server mode; empty means the
	// current process's binary, which must then run the API server when its
	// first argument is handoff.ChildCommand.
	Executable string
	// EtcdQuotaBytes is etcd's backend quota (the most its database may
	// hold before it refuses writes); 0 keeps etcd's default.
	EtcdQuotaBytes int64
	// EtcdTimeout bounds the start of etcd.
	EtcdTimeout time.Duration
	// ReadyTimeout bounds each start of the API server, up to ready.
	ReadyTimeout time.Duration
	// StopTimeout bounds the graceful stop of the API server and of etcd; an
	// API server still running after it is killed.
	StopTimeout time.Duration
	// APIServerFlags are appended to the launcher's kube-apiserver flags.
	APIServerFlags []string
}

// Launcher is a running etcd plus kube-apiserver. Its methods are safe for
// concurrent use.
type Launcher struct {
	opts    Options
	log     *slog.Logger
	logFile *os.File // nil when logging to standard error
	began   time.Time
	tookUp  time.Duration

	layout     layout
	creds      credentials
	socket     *os.File // the API server's listening socket
	port       int      // its port
	server     string   // https://127.0.0.1:port
	kubeconfig string   // absolute path, set once written
	etcd       *etcdServer
	apiserver  *apiserverSlot
	control    *controlServer

	stopOnce sync.Once
	stopErr  error
}

// Start brings etcd and the API server up, writes the kubeconfig and starts
// the control API. On failure everything started so far is torn down and the
// error is a *StepError naming the failed step.
func Start(ctx context.Context, opts Options) (*Launcher, error) {
	if err := opts.complete(); err != nil {
		return nil, err
	}
	l := &Launcher{opts: opts, began: time.Now()}
	if err := l.openLog(); err != nil {
		return nil, err
	}
	if err := l.start(ctx); err != nil {
		l.log.Error("startup failed", "err", err)
		if stopErr := l.Stop(); stopErr != nil {
			err = fmt.Errorf("%w (and cleaning up: %w)", err, stopErr)
		}
		return nil, err
	}
	l.tookUp = time.Since(l.began)
	return l, nil
}

// complete fills in defaults and rejects unusable options.
func (o *Options) complete() error {
	if o.KubeconfigOut == "" {
		return errors.New("options: KubeconfigOut is required")
	}
	if o.ControlAddr == "" {
		o.ControlAddr = "127.0.0.1:0"
	}
	if err := checkLoopback(o.ControlAddr); err != nil {
		return fmt.Errorf("options: %w", err)
	}
	if o.Executable == "" {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("options: find own executable: %w", err)
		}
		o.Executable = exe
	}
	for _, d := range []*time.Duration{&o.EtcdTimeout, &o.ReadyTimeout, &o.StopTimeout} {
		if *d <= 0 {
			return errors.New("options: timeouts must be positive")
		}
	}
	return nil
}

func (l *Launcher) openLog() error {
	var out io.Writer = os.Stderr
	if l.opts.LogFile != "" {
		f, err := os.OpenFile(l.opts.LogFile, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("open log file: %w", err)
		}
		l.logFile, out = f, f
	}
	l.log = slog.New(slog.NewTextHandler(out, nil)).With("component", "kas")
	return nil
}

// logTarget is where logs go, in etcd's LogOutputs syntax and for messages.
func (l *Launcher) logTarget() string {
	if l.opts.LogFile == "" {
		return "stderr"
	}
	return l.opts.LogFile
}

func (l *Launcher) logOutput() *os.File {
	if l.logFile != nil {
		return l.logFile
	}
	return os.Stderr
}

func (l *Launcher) start(ctx context.Context) error {
	steps := []struct {
		name    string
		timeout time.Duration
		fn      func(context.Context) error
	}{
		{"prepare run directory", 0, l.stepPrepare},
		{"start etcd", l.opts.EtcdTimeout, l.stepEtcd},
		{"start kube-apiserver", l.opts.ReadyTimeout, l.stepAPIServer},
		{"write kubeconfig", 0, l.stepKubeconfig},
		{"start control API", 0, l.stepControl},
	}
	for _, s := range steps {
		if err := runStep(ctx, l.log, s.name, s.timeout, s.fn); err != nil {
			return err
		}
	}
	return nil
}

// stepPrepare creates the run directory, the credentials and the API
// server's listening socket.
func (l *Launcher) stepPrepare(context.Context) error {
	var err error
	if l.layout, err = newLayout(l.opts.DataDir); err != nil {
		return err
	}
	l.log.Info("run directory", "path", l.layout.root, "etcdData", l.layout.etcdData)
	if l.creds, err = makeCredentials(l.layout); err != nil {
		return err
	}
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("listen for the API server: %w", err)
	}
	defer listener.Close() // the file below holds its own descriptor
	l.socket, err = listener.(*net.TCPListener).File()
	if err != nil {
		return fmt.Errorf("take the API server's socket: %w", err)
	}
	l.port = listener.Addr().(*net.TCPAddr).Port
	l.server = "https://" + listener.Addr().String()
	return nil
}

func (l *Launcher) stepEtcd(ctx context.Context) error {
	var err error
	l.etcd, err = startEtcd(ctx, etcdConfig{
		dataDir:   l.layout.etcdData,
		socket:    l.layout.etcdSocket(),
		logOutput: l.logTarget(),
		quota:     l.opts.EtcdQuotaBytes,
	})
	return err
}

func (l *Launcher) stepAPIServer(ctx context.Context) error {
	probe, err := newReadinessProbe(l.server, l.creds.caPEM, l.creds.token)
	if err != nil {
		return err
	}
	l.apiserver = newAPIServerSlot(processSpec{
		executable: l.opts.Executable,
		flags:      apiserverFlags(l.layout, l.etcd.endpoint, l.port, l.opts.APIServerFlags),
		socket:     l.socket,
		output:     l.logOutput(),
		log:        l.log,
	}, probe)
	return l.apiserver.start(ctx, l.opts.StopTimeout)
}

func (l *Launcher) stepKubeconfig(context.Context) error {
	path, err := filepath.Abs(l.opts.KubeconfigOut)
	if err != nil {
		return fmt.Errorf("resolve kubeconfig path: %w", err)
	}
	data, err := kubeconfigBytes(l.server, l.creds.caPEM, l.creds.token)
	if err != nil {
		return err
	}
	if err := writeFileAtomic(path, data); err != nil {
		return err
	}
	l.kubeconfig = path
	return nil
}

func (l *Launcher) stepControl(context.Context) error {
	var err error
	l.control, err = startControlServer(l.opts.ControlAddr, l, l.log)
	return err
}

// Kubeconfig is the absolute path of the written kubeconfig.
func (l *Launcher) Kubeconfig() string { return l.kubeconfig }

// Server is the API server's URL, https://127.0.0.1:PORT. It does not change
// across API server restarts.
func (l *Launcher) Server() string { return l.server }

// ControlURL is the base URL of the control API, http://127.0.0.1:PORT.
func (l *Launcher) ControlURL() string { return l.control.url() }

// StartupTime is how long Start took, up to a ready API server.
func (l *Launcher) StartupTime() time.Duration { return l.tookUp }

// LogTarget names where the logs go: a file path or "stderr".
func (l *Launcher) LogTarget() string { return l.logTarget() }

// controlStopTimeout bounds the wait for control requests in flight at stop.
const controlStopTimeout = 5 * time.Second

// Stop shuts down, in order, the control API, the API server and etcd, then
// removes the kubeconfig and the run directory (a DataDir is kept). It is
// bounded by the configured timeouts and may be called more than once; later
// calls return the first call's result.
func (l *Launcher) Stop() error {
	l.stopOnce.Do(func() { l.stopErr = l.stop() })
	return l.stopErr
}

func (l *Launcher) stop() error {
	var errs []error
	if l.control != nil {
		errs = append(errs, l.control.stop(controlStopTimeout))
	}
	if l.apiserver != nil {
		errs = append(errs, l.apiserver.stop(l.opts.StopTimeout))
	}
	if l.etcd != nil {
		errs = append(errs, l.etcd.stop(l.opts.StopTimeout))
	}
	if l.kubeconfig != "" {
		if err := os.Remove(l.kubeconfig); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("remove kubeconfig: %w", err))
		}
	}
	if l.socket != nil {
		l.socket.Close()
	}
	if l.layout.root != "" {
		errs = append(errs, l.layout.remove())
	}
	err := errors.Join(errs...)
	if err != nil {
		l.log.Error("stopped with errors", "err", err)
	} else {
		l.log.Info("stopped")
	}
	if l.logFile != nil {
		l.logFile.Close()
	}
	return err
}

// Kill is the emergency exit for a second interrupt during Stop: it kills
// the API server and removes the run directory without waiting for anything.
func (l *Launcher) Kill() {
	if l.apiserver != nil {
		l.apiserver.kill()
	}
	if l.layout.root != "" {
		_ = l.layout.remove()
	}
}

// The methods below implement controller for the control API.

func (l *Launcher) status(ctx context.Context) (Status, error) {
	revision, err := l.etcd.revision(ctx)
	if err != nil {
		return Status{}, err
	}
	return Status{Server: l.server, APIServer: l.apiserver.state(), EtcdRevision: revision}, nil
}

func (l *Launcher) restartAPIServer(ctx context.Context) (RestartResult, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, l.opts.StopTimeout+l.opts.ReadyTimeout,
		errors.New("restart timed out"))
	defer cancel()
	began := time.Now()
	l.log.Info("restarting kube-apiserver on request")
	if err := l.apiserver.restart(ctx, l.opts.StopTimeout); err != nil {
		return RestartResult{}, fmt.Errorf("restart kube-apiserver: %w", err)
	}
	st := l.apiserver.state()
	return RestartResult{Restarts: st.Restarts, PID: st.PID, Took: time.Since(began).Round(time.Millisecond).String()}, nil
}

func (l *Launcher) stopAPIServer(context.Context) error {
	l.log.Info("stopping kube-apiserver on request")
	if err := l.apiserver.stop(l.opts.StopTimeout); err != nil {
		return fmt.Errorf("stop kube-apiserver: %w", err)
	}
	return nil
}

func (l *Launcher) startAPIServer(ctx context.Context) error {
	ctx, cancel := context.WithTimeoutCause(ctx, l.opts.ReadyTimeout, errors.New("start timed out"))
	defer cancel()
	l.log.Info("starting kube-apiserver on request")
	if err := l.apiserver.start(ctx, l.opts.StopTimeout); err != nil {
		return fmt.Errorf("start kube-apiserver: %w", err)
	}
	return nil
}

func (l *Launcher) compact(ctx context.Context, revision int64) (CompactResult, error) {
	done, err := l.etcd.compact(ctx, revision)
	if err != nil {
		return CompactResult{}, err
	}
	l.log.Info("etcd compacted on request", "revision", done)
	return CompactResult{Revision: done}, nil
}
