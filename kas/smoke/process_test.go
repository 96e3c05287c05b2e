package smoke

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Limits of the smoke test. Startup is generous because other builds may
// share the machine's two cores.
const (
	readyLimit = 3 * time.Minute
	stopLimit  = time.Minute
)

// launcherBinary returns the kas binary under test: $KAS_BINARY when set
// (run.sh build prints it), otherwise a fresh build, which is a relink of
// a few seconds once the build cache is warm and many minutes when cold.
func launcherBinary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("KAS_BINARY"); bin != "" {
		return bin
	}
	moduleRoot, err := filepath.Abs("..")
	if err != nil {
		t.Fatalf("find the kas module: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "kas")
	build := exec.Command("go", "build", "-o", bin, "./cmd/kas")
	build.Dir = moduleRoot
	out, err := build.CombinedOutput()
	if err != nil {
		t.Fatalf("go build ./cmd/kas: %v\n%s", err, out)
	}
	return bin
}

// launcher is one running kas process.
type launcher struct {
	cmd     *exec.Cmd
	exited  chan error
	ready   map[string]string // key=value fields of the ready line
	logFile string
}

// startLauncher runs bin with its temporary files under tmpDir and waits for
// the ready line.
func startLauncher(t *testing.T, bin, tmpDir, kubeconfig, logFile string) *launcher {
	t.Helper()
	cmd := exec.Command(bin, "--kubeconfig-out", kubeconfig, "--log-file", logFile, "--control-addr", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "TMPDIR="+tmpDir)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatalf("pipe launcher stdout: %v", err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	l := &launcher{cmd: cmd, exited: make(chan error, 1), logFile: logFile}

	lines := make(chan string)
	go func() {
		defer close(lines)
		scanner := bufio.NewScanner(stdout)
		for scanner.Scan() {
			lines <- scanner.Text()
		}
	}()
	deadline := time.After(readyLimit)
	for l.ready == nil {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("launcher exited before ready: %v\n%s", cmd.Wait(), tail(logFile))
			}
			l.ready = parseReadyLine(line)
		case <-deadline:
			cmd.Process.Kill()
			t.Fatalf("launcher not ready after %v\n%s", readyLimit, tail(logFile))
		}
	}
	go func() {
		for range lines { // nothing else is expected; keep the pipe drained
		}
		l.exited <- cmd.Wait()
	}()
	t.Cleanup(func() { l.kill() })
	return l
}

// parseReadyLine returns the key=value fields of a "KAS READY" line, or nil
// for any other line.
func parseReadyLine(line string) map[string]string {
	rest, ok := strings.CutPrefix(line, "KAS READY ")
	if !ok {
		return nil
	}
	fields := map[string]string{}
	for _, field := range strings.Fields(rest) {
		if k, v, ok := strings.Cut(field, "="); ok {
			fields[k] = v
		}
	}
	return fields
}

// stop sends SIGTERM and returns the launcher's exit error (nil for status 0).
func (l *launcher) stop(t *testing.T) error {
	t.Helper()
	if err := l.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("signal launcher: %v", err)
	}
	select {
	case err := <-l.exited:
		return err
	case <-time.After(stopLimit):
		t.Fatalf("launcher still running %v after SIGTERM\n%s", stopLimit, tail(l.logFile))
		return nil
	}
}

// kill is the last resort of a failed test; after a clean stop it does
// nothing (the process is gone).
func (l *launcher) kill() { _ = l.cmd.Process.Kill() }

// tail returns the end of a log file, for failure messages.
func tail(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	const keep = 6000
	if len(data) > keep {
		data = data[len(data)-keep:]
	}
	return "--- end of " + path + " ---\n" + string(data)
}
