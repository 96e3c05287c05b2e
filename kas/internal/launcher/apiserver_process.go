package launcher

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/kcache/cache/kas/internal/handoff"
)

// apiserverProcess is one kube-apiserver child process.
type apiserverProcess struct {
	cmd *exec.Cmd
	// exited is closed once the process has been reaped; exitErr is valid
	// from then on.
	exited  chan struct{}
	exitErr error
	// stopping is set before the launcher signals the process, so that its
	// exit is not reported as a crash.
	stopping atomic.Bool
	started  time.Time
}

// processSpec is everything needed to start an API server child.
type processSpec struct {
	// executable is the launcher binary, re-run in API server mode.
	executable string
	flags      []string
	// socket is the listening socket every child serves on.
	socket *os.File
	// output receives the child's stdout and stderr.
	output *os.File
	log    *slog.Logger
}

// startAPIServerProcess starts a child; it does not wait for readiness.
func startAPIServerProcess(spec processSpec) (*apiserverProcess, error) {
	args := append([]string{handoff.ChildCommand}, spec.flags...)
	cmd := exec.Command(spec.executable, args...)
	cmd.Stdout = spec.output
	cmd.Stderr = spec.output
	cmd.ExtraFiles = []*os.File{spec.socket} // becomes handoff.ListenerFD
	cmd.SysProcAttr = childProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start kube-apiserver process: %w", err)
	}
	p := &apiserverProcess{cmd: cmd, exited: make(chan struct{}), started: time.Now()}
	go p.reap(spec.log)
	spec.log.Info("kube-apiserver process started", "pid", cmd.Process.Pid)
	return p, nil
}

func (p *apiserverProcess) reap(log *slog.Logger) {
	p.exitErr = p.cmd.Wait()
	close(p.exited)
	if p.stopping.Load() {
		log.Info("kube-apiserver process stopped", "pid", p.cmd.Process.Pid, "status", exitStatus(p.exitErr))
		return
	}
	log.Error("kube-apiserver process exited on its own", "pid", p.cmd.Process.Pid,
		"status", exitStatus(p.exitErr), "ranFor", time.Since(p.started).Round(time.Millisecond))
}

// pid is the child's process id.
func (p *apiserverProcess) pid() int { return p.cmd.Process.Pid }

// running reports whether the process has not exited yet.
func (p *apiserverProcess) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// exitError describes how the process ended; only valid after exited closed.
func (p *apiserverProcess) exitError() error {
	return fmt.Errorf("kube-apiserver process %d exited: %s", p.pid(), exitStatus(p.exitErr))
}

// stop asks the process to shut down (SIGTERM) and kills it if it has not
// exited within grace. It returns once the process is gone.
func (p *apiserverProcess) stop(grace time.Duration) error {
	p.stopping.Store(true)
	if !p.running() {
		return nil
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("signal kube-apiserver process %d: %w", p.pid(), err)
	}
	select {
	case <-p.exited:
		return nil
	case <-time.After(grace):
	}
	p.kill()
	select {
	case <-p.exited:
		return fmt.Errorf("kube-apiserver process %d ignored SIGTERM for %v and was killed", p.pid(), grace)
	case <-time.After(killWait):
		return fmt.Errorf("kube-apiserver process %d survived SIGKILL for %v", p.pid(), killWait)
	}
}

// kill ends the process at once, without waiting.
func (p *apiserverProcess) kill() {
	p.stopping.Store(true)
	_ = p.cmd.Process.Kill()
}

// killWait bounds the wait for the kernel to reap a killed process.
const killWait = 5 * time.Second

func exitStatus(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// apiserverSlot holds the current API server child and serialises the
// operations that replace it (start, stop, restart).
type apiserverSlot struct {
	spec  processSpec
	probe *readinessProbe

	// opMu serialises start and stop: at most one child exists at a time.
	opMu sync.Mutex

	// mu guards the fields below; it is held only briefly, never across a
	// start or stop, so status reads stay quick during a restart.
	mu       sync.Mutex
	current  *apiserverProcess
	restarts int
}

func newAPIServerSlot(spec processSpec, probe *readinessProbe) *apiserverSlot {
	return &apiserverSlot{spec: spec, probe: probe}
}

// readyPollInterval is how often a starting server is probed.
const readyPollInterval = 100 * time.Millisecond

// start starts a child unless one is running and waits until it is ready or
// ctx ends. A child that fails to become ready is stopped again.
func (s *apiserverSlot) start(ctx context.Context, grace time.Duration) error {
	s.opMu.Lock()
	defer s.opMu.Unlock()
	return s.startOpLocked(ctx, grace)
}

// startOpLocked does the work of start; the caller holds s.opMu.
func (s *apiserverSlot) startOpLocked(ctx context.Context, grace time.Duration) error {
	if p := s.snapshot(); p != nil && p.running() {
		return nil
	}
	p, err := startAPIServerProcess(s.spec)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.current = p
	s.mu.Unlock()
	err = s.probe.waitUntil(ctx, readyPollInterval, p.exited, p.exitError)
	if err != nil {
		if stopErr := p.stop(grace); stopErr != nil {
			s.spec.log.Error("stopping the unready kube-apiserver", "err", stopErr)
		}
		return fmt.Errorf("wait for kube-apiserver to be ready: %w", err)
	}
	s.spec.log.Info("kube-apiserver ready", "pid", p.pid(), "took", time.Since(p.started).Round(time.Millisecond))
	return nil
}

// stop stops the current child, if any.
func (s *apiserverSlot) stop(grace time.Duration) error {
	s.opMu.Lock()
	defer s.opMu.Unlock()
	return s.stopOpLocked(grace)
}

// stopOpLocked does the work of stop; the caller holds s.opMu.
func (s *apiserverSlot) stopOpLocked(grace time.Duration) error {
	p := s.snapshot()
	if p == nil {
		return nil
	}
	return p.stop(grace)
}

// restart stops the current child and starts a new one on the same socket.
// Between the two, connection attempts wait in the socket's backlog instead of
// being refused; open connections, watches included, are cut.
func (s *apiserverSlot) restart(ctx context.Context, grace time.Duration) error {
	s.opMu.Lock()
	defer s.opMu.Unlock()
	if err := s.stopOpLocked(grace); err != nil {
		if p := s.snapshot(); p != nil && p.running() {
			return err
		}
		// The old child is gone (killed after the grace period): a restart
		// still owes the caller a running server.
		s.spec.log.Error("kube-apiserver did not stop cleanly; starting a new one anyway", "err", err)
	}
	if err := s.startOpLocked(ctx, grace); err != nil {
		return err
	}
	s.mu.Lock()
	s.restarts++
	s.mu.Unlock()
	return nil
}

// kill ends the current child at once, for a forced shutdown.
func (s *apiserverSlot) kill() {
	if p := s.snapshot(); p != nil {
		p.kill()
	}
}

func (s *apiserverSlot) snapshot() *apiserverProcess {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.current
}

// apiserverState is what the control API reports about the API server.
type apiserverState struct {
	Running  bool `json:"running"`
	PID      int  `json:"pid,omitempty"`
	Restarts int  `json:"restarts"`
}

func (s *apiserverSlot) state() apiserverState {
	s.mu.Lock()
	p, restarts := s.current, s.restarts
	s.mu.Unlock()
	st := apiserverState{Restarts: restarts}
	if p != nil && p.running() {
		st.Running, st.PID = true, p.pid()
	}
	return st
}
