package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/kcache/cache/bench/internal/harness"
	framework "github.com/kcache/cache/testing"
)

// serverFlag, as the first argument, makes the binary the simulated API
// server.
const serverFlag = "-server"

// readyPrefix starts the line a server writes to its stdout once it
// serves: then its URL and how long it took to load its objects.
const readyPrefix = "scale-sim server: serving "

// wireCodec encodes what the server sends: core/v1 objects, lists and
// statuses as JSON, with apiVersion and kind.
func wireCodec() runtime.Encoder { return scheme.Codecs.LegacyCodec(v1.SchemeGroupVersion) }

// serverMain loads the objects into the simulated API server, serves it
// over HTTP on a free local port, says where on stdout, and serves until
// stdin ends (the parent closes it, or dies). It returns the exit code.
func serverMain(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	fs.SetOutput(stderr)
	objects := fs.Int("objects", 0, "ConfigMaps to serve")
	watchList := fs.Bool("watchlist", true, "serve streaming lists")
	onePage := fs.Bool("one-page", false, "answer every list in one response, whatever its limit")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *objects < 1 {
		fmt.Fprintf(stderr, "scale-sim server: -objects %d: want at least 1\n", *objects)
		return 2
	}
	quietKlog()
	began := time.Now()
	src := harness.NewConfigMapSource(*objects, harness.SimLayout, *watchList, *onePage)
	defer src.Shutdown()
	loaded := time.Since(began)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintf(stderr, "scale-sim server: listen: %v\n", err)
		return 1
	}
	srv := &http.Server{Handler: framework.HTTPHandler{Source: src, Encoder: wireCodec()}, ReadHeaderTimeout: time.Minute}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Fprintf(stdout, "%shttp://%s %.3f\n", readyPrefix, ln.Addr(), loaded.Seconds())
	_, _ = io.Copy(io.Discard, stdin)
	_ = srv.Close()
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(stderr, "scale-sim server: %v\n", err)
		return 1
	}
	return 0
}

// server is a running server process.
type server struct {
	URL    string
	Loaded time.Duration // how long it took to load its objects
	cmd    *exec.Cmd
	stdin  io.Closer
}

// startServer starts the server process serving opts.objects ConfigMaps
// and waits until it serves.
func startServer(opts options, progress io.Writer) (*server, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find own executable: %w", err)
	}
	cmd := exec.Command(exe, serverFlag,
		"-objects="+strconv.Itoa(opts.objects), "-watchlist="+strconv.FormatBool(opts.watchList), "-one-page="+strconv.FormatBool(opts.onePage))
	cmd.Stderr = progress
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("server stdin: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("server stdout: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start server: %w", err)
	}
	s := &server{cmd: cmd, stdin: stdin}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err == nil {
		s.URL, s.Loaded, err = parseReady(line)
	}
	if err != nil {
		s.stop()
		return nil, fmt.Errorf("server did not start: %w", err)
	}
	return s, nil
}

// parseReady reads a server's ready line.
func parseReady(line string) (string, time.Duration, error) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(line), readyPrefix)
	url, secs, ok2 := strings.Cut(rest, " ")
	if !ok || !ok2 {
		return "", 0, fmt.Errorf("unexpected first line %q", line)
	}
	s, err := strconv.ParseFloat(secs, 64)
	if err != nil {
		return "", 0, fmt.Errorf("unexpected first line %q: %w", line, err)
	}
	return url, time.Duration(s * float64(time.Second)), nil
}

// stop ends the server: its stdin closes, and it is killed if it has not
// exited a minute later.
func (s *server) stop() {
	_ = s.stdin.Close()
	done := make(chan struct{})
	go func() {
		_ = s.cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		_ = s.cmd.Process.Kill()
		<-done
	}
}
