package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/kcache/cache/bench/internal/e2e"
	"github.com/kcache/cache/bench/internal/harness"
)

// The churn phase runs one more child per variant, all at once, each
// holding a synced informer on every pod, while the parent updates the
// pods (e2e.Churn): every child sees the same watch events at the same
// time, and measures its own process CPU and heap over them. They talk
// one line at a time: the child writes churnReady on its stdout once it
// has synced and its heap has settled; the parent writes churnBegin on
// every child's stdin when the updates start, then "end N" when they
// stopped, N the watch events they made; the child waits for N
// notifications, then writes its result as JSON on stdout and exits.
const (
	churnReady = "ready"
	churnBegin = "begin"
	churnEnd   = "end"
)

// churnChildLink is a churn child's end of the protocol: Begin and End of
// its harness.ChurnConfig.
type churnChildLink struct {
	in  *bufio.Reader
	out io.Writer
}

// Begin says the child is ready, then waits for the parent's churnBegin.
func (l churnChildLink) Begin(context.Context) error {
	if _, err := fmt.Fprintln(l.out, churnReady); err != nil {
		return fmt.Errorf("say ready: %w", err)
	}
	line, err := readLine(l.in)
	if err != nil {
		return err
	}
	if line != churnBegin {
		return fmt.Errorf("got %q from the parent, want %q", line, churnBegin)
	}
	return nil
}

// End waits for the parent's "end N" and returns N.
func (l churnChildLink) End(context.Context) (int64, error) {
	line, err := readLine(l.in)
	if err != nil {
		return 0, err
	}
	n, ok := strings.CutPrefix(line, churnEnd+" ")
	events, convErr := strconv.ParseInt(n, 10, 64)
	if !ok || convErr != nil || events < 0 {
		return 0, fmt.Errorf("got %q from the parent, want %q and a count", line, churnEnd)
	}
	return events, nil
}

// readLine reads one line without its newline; the end of the input
// before one is an error.
func readLine(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		if errors.Is(err, io.EOF) {
			return "", fmt.Errorf("the other end closed the pipe (read %q)", line)
		}
		return "", fmt.Errorf("read a line: %w", err)
	}
	return strings.TrimSuffix(line, "\n"), nil
}

// runChurnChild is a churn child's work: l's informer, synced, measured
// through the churn window that stdin and stdout delimit.
func runChurnChild(l harness.Library, pods int, kubeconfig, cpuProf, heapProf string, timeout time.Duration, stdin io.Reader, stdout io.Writer) (harness.ChurnResult, error) {
	cfg, err := restConfig(kubeconfig)
	if err != nil {
		return harness.ChurnResult{}, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return harness.ChurnResult{}, fmt.Errorf("clientset: %w", err)
	}
	link := churnChildLink{in: bufio.NewReader(stdin), out: stdout}
	return l.E2EChurn(context.Background(), harness.ChurnConfig{
		Client:      cs.CoreV1().RESTClient(),
		Pods:        pods,
		Timeout:     timeout,
		Begin:       link.Begin,
		End:         link.End,
		CPUProfile:  cpuProf,
		HeapProfile: heapProf,
	})
}

// churnChild is the parent's handle on a running churn child.
type churnChild struct {
	v      variant
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	waited bool
}

// startChurnChild starts v's churn child and returns once it is ready:
// synced, its heap settled, waiting for churnBegin.
func startChurnChild(ctx context.Context, opts options, v variant, bin string, pods int, progress io.Writer) (*churnChild, error) {
	// The child waits while the others sync and during the churn; its
	// -timeout covers all of it.
	timeout := opts.timeout*time.Duration(len(opts.variants)) + opts.churn.Duration
	args := []string{childFlag, "-churn",
		"-lib=" + v.Lib,
		"-pods=" + strconv.Itoa(pods),
		"-kubeconfig=" + opts.kubeconfig,
		"-timeout=" + timeout.String(),
		"-v=" + strconv.FormatBool(opts.verbose),
	}
	if opts.cpuProf != "" {
		args = append(args, "-cpuprofile="+opts.cpuProf+"."+v.Name()+".churn")
	}
	if opts.heapProf != "" {
		args = append(args, "-heapprofile="+opts.heapProf+"."+v.Name()+".churn")
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = childEnv(os.Environ(), v, opts.list)
	cmd.Stderr = progress
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("churn child %s: %w", v.Name(), err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("churn child %s: %w", v.Name(), err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("churn child %s: %w", v.Name(), err)
	}
	c := &churnChild{v: v, cmd: cmd, stdin: stdin, stdout: bufio.NewReader(stdout)}
	line, err := readLine(c.stdout)
	if err == nil && line != churnReady {
		err = fmt.Errorf("got %q, want %q", line, churnReady)
	}
	if err != nil {
		if exit := c.stop(); exit != nil {
			err = fmt.Errorf("%w (child: %v)", err, exit)
		}
		return nil, fmt.Errorf("churn child %s: %w", v.Name(), err)
	}
	return c, nil
}

// begin tells the child the updates start.
func (c *churnChild) begin() error {
	if _, err := fmt.Fprintln(c.stdin, churnBegin); err != nil {
		return fmt.Errorf("churn child %s: %w", c.v.Name(), err)
	}
	return nil
}

// end tells the child the updates made events watch events, and returns
// its result once it exited.
func (c *churnChild) end(events int64) (harness.ChurnResult, error) {
	var res harness.ChurnResult
	if _, err := fmt.Fprintf(c.stdin, "%s %d\n", churnEnd, events); err != nil {
		return res, fmt.Errorf("churn child %s: %w", c.v.Name(), err)
	}
	out, readErr := io.ReadAll(c.stdout)
	c.waited = true
	if err := c.cmd.Wait(); err != nil {
		return res, fmt.Errorf("churn child %s: %w", c.v.Name(), err)
	}
	if readErr != nil {
		return res, fmt.Errorf("churn child %s: read result: %w", c.v.Name(), readErr)
	}
	if err := json.Unmarshal(out, &res); err != nil {
		return res, fmt.Errorf("churn child %s: decode result %q: %w", c.v.Name(), out, err)
	}
	return res, nil
}

// stop kills the child unless it was waited for, and reaps it.
func (c *churnChild) stop() error {
	if c.waited {
		return nil
	}
	c.waited = true
	_ = c.cmd.Process.Kill()
	return c.cmd.Wait()
}

// runChurn is the churn phase: a churn child per variant of opts (bins
// holds their binaries), started one after the other so that their
// initial syncs do not overlap, then opts.churn's updates while all of
// them watch. It returns the children's results in the order of
// opts.variants and what the updates did.
func runChurn(ctx context.Context, opts options, cs kubernetes.Interface, bins []string, pods int, progress io.Writer) ([]harness.ChurnResult, e2e.ChurnStats, error) {
	var children []*churnChild
	defer func() {
		for _, c := range children {
			_ = c.stop()
		}
	}()
	for k, v := range opts.variants {
		began := time.Now()
		c, err := startChurnChild(ctx, opts, v, bins[k], pods, progress)
		if err != nil {
			return nil, e2e.ChurnStats{}, err
		}
		children = append(children, c)
		fmt.Fprintf(progress, "e2e: churn: %s synced in %.1f s, waiting\n", v.Name(), time.Since(began).Seconds())
	}
	for _, c := range children {
		if err := c.begin(); err != nil {
			return nil, e2e.ChurnStats{}, err
		}
	}
	fmt.Fprintf(progress, "e2e: churn: %d pod updates at %g/s for %s, %d children watching\n",
		opts.churn.Updates(), opts.churn.Rate, opts.churn.Duration, len(children))
	stats, err := opts.churn.Run(ctx, cs)
	if err != nil {
		return nil, stats, err
	}
	out := make([]harness.ChurnResult, len(children))
	for k, c := range children {
		if out[k], err = c.end(stats.Events); err != nil {
			return nil, stats, err
		}
	}
	return out, stats, nil
}
