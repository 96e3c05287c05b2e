package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/tools/clientcmd"
)

// replica is one running process of examples/cmd/activeactive, reaching
// the API server through its own proxy.
type replica struct {
	identity string
	// proxy carries the replica's informers and reconciler; leases its
	// Lease requests, on connections of their own.
	proxy, leases *proxy
	cmd           *exec.Cmd
	// stateURL is the replica's state endpoint, read from its output.
	stateURL string
	done     chan struct{}
}

// replicaSpec is how every replica of a run is started.
type replicaSpec struct {
	bin, kubeconfig, dir, target string
	group                        string
	leaseDuration, renewDeadline time.Duration
	retryPeriod                  time.Duration
	// work is each reconcile's CPU time.
	work time.Duration
}

var stateLine = regexp.MustCompile(`state at (http://\S+)`)

// start runs a replica named identity behind p (its Leases behind
// leases) and waits until it prints its state address.
func (s replicaSpec) start(ctx context.Context, identity string, p, leases *proxy) (*replica, error) {
	kubeconfig, err := s.kubeconfigVia(identity, p)
	if err != nil {
		return nil, err
	}
	leaseKubeconfig, err := s.kubeconfigVia(identity+"-leases", leases)
	if err != nil {
		return nil, err
	}
	logFile, err := os.OpenFile(filepath.Join(s.dir, identity+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(s.bin, "--identity="+identity, "--kubeconfig="+kubeconfig, "--lease-kubeconfig="+leaseKubeconfig,
		"--group="+s.group, "--lease-namespace=default",
		"--lease-duration="+s.leaseDuration.String(), "--renew-deadline="+s.renewDeadline.String(),
		"--retry-period="+s.retryPeriod.String(), "--status-every=1h", "--state-addr=127.0.0.1:0", "--work="+s.work.String())
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		logFile.Close()
		return nil, err
	}
	cmd.Stderr = logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", identity, err)
	}
	r := &replica{identity: identity, proxy: p, leases: leases, cmd: cmd, done: make(chan struct{})}
	found := make(chan string, 1)
	go func() {
		defer close(r.done)
		defer logFile.Close()
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			fmt.Fprintln(logFile, sc.Text())
			if m := stateLine.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
		_ = cmd.Wait()
	}()
	select {
	case r.stateURL = <-found:
		return r, nil
	case <-r.done:
		return nil, fmt.Errorf("%s exited before serving its state (see %s.log)", identity, filepath.Join(s.dir, identity))
	case <-time.After(2 * time.Minute):
		r.kill()
		return nil, fmt.Errorf("%s printed no state address in 2 minutes", identity)
	case <-ctx.Done():
		r.kill()
		return nil, ctx.Err()
	}
}

// kubeconfigVia writes a copy of the run's kubeconfig whose server is the
// proxy, and returns its path.
func (s replicaSpec) kubeconfigVia(identity string, p *proxy) (string, error) {
	cfg, err := clientcmd.LoadFromFile(s.kubeconfig)
	if err != nil {
		return "", err
	}
	for _, cluster := range cfg.Clusters {
		cluster.Server = "https://" + p.addr()
	}
	path := filepath.Join(s.dir, identity+".kubeconfig")
	return path, clientcmd.WriteToFile(*cfg, path)
}

// ended reports whether the replica's process has exited.
func (r *replica) ended() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// kill ends the replica at once (SIGKILL): its Lease stays until it
// expires.
func (r *replica) kill() {
	_ = r.cmd.Process.Kill()
	<-r.done
}

// stop ends the replica cleanly (SIGINT): it releases its Lease.
func (r *replica) stop() {
	_ = r.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-r.done:
	case <-time.After(30 * time.Second):
		r.kill()
	}
}

// target is host:port of the API server named in kubeconfig.
func target(kubeconfig string) (string, error) {
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		return "", err
	}
	for _, cluster := range cfg.Clusters {
		host := strings.TrimPrefix(cluster.Server, "https://")
		if host != cluster.Server {
			return strings.TrimSuffix(host, "/"), nil
		}
	}
	return "", fmt.Errorf("%s names no https server", kubeconfig)
}
