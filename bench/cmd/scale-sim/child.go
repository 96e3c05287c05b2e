package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kcache/cache/bench/internal/harness"
)

// childFlag, as the first argument, makes the binary a measured child.
const childFlag = "-child"

// childMain runs one library's informer against the server at -url and
// writes its result as JSON to stdout. It returns the exit code.
func childMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("child", flag.ContinueOnError)
	fs.SetOutput(stderr)
	lib := fs.String("lib", "", "library to measure")
	url := fs.String("url", "", "the simulated API server")
	objects := fs.Int("objects", 0, "objects the server holds")
	heapProf := fs.String("heapprofile", "", "heap profile prefix")
	timeout := fs.Duration("timeout", 30*time.Minute, "give up after this long")
	verbose := fs.Bool("v", false, "keep klog output")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if !*verbose {
		quietKlog()
	}
	l, ok := library(*lib)
	if !ok {
		fmt.Fprintf(stderr, "scale-sim child: unknown library %q\n", *lib)
		return 2
	}
	res, err := runChild(l, *url, *objects, *heapProf, *timeout)
	if err == nil {
		err = json.NewEncoder(stdout).Encode(res)
	}
	if err != nil {
		fmt.Fprintf(stderr, "scale-sim child %s: %v\n", *lib, err)
		return 1
	}
	return 0
}

func runChild(l harness.Library, url string, objects int, heapProf string, timeout time.Duration) (harness.ScaleSimResult, error) {
	cs, err := kubernetes.NewForConfig(restConfig(url))
	if err != nil {
		return harness.ScaleSimResult{}, fmt.Errorf("clientset: %w", err)
	}
	return l.ScaleSim(context.Background(), harness.ScaleSimConfig{
		Client:      cs.CoreV1().RESTClient(),
		Objects:     objects,
		Timeout:     timeout,
		HeapProfile: heapProf,
	})
}

// restConfig points a client at the simulated server: JSON, the one
// encoding it serves, and no client-side rate limit, as a controller sets.
func restConfig(url string) *rest.Config {
	cfg := &rest.Config{Host: url, QPS: -1}
	cfg.ContentType = "application/json"
	cfg.AcceptContentTypes = "application/json"
	return cfg
}

// spawnChild runs v's informer in a fresh process against the server.
func spawnChild(ctx context.Context, opts options, v variant, url string, progress io.Writer) (harness.ScaleSimResult, error) {
	exe, err := os.Executable()
	if err != nil {
		return harness.ScaleSimResult{}, fmt.Errorf("find own executable: %w", err)
	}
	args := []string{childFlag,
		"-lib=" + v.Lib,
		"-url=" + url,
		"-objects=" + strconv.Itoa(opts.objects),
		"-timeout=" + opts.timeout.String(),
		"-v=" + strconv.FormatBool(opts.verbose),
	}
	if opts.heapProf != "" {
		args = append(args, "-heapprofile="+opts.heapProf+"."+v.Name())
	}
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Env = childEnv(os.Environ(), v)
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, progress
	if err := cmd.Run(); err != nil {
		return harness.ScaleSimResult{}, fmt.Errorf("child %s: %w", v.Name(), err)
	}
	var res harness.ScaleSimResult
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		return res, fmt.Errorf("child %s: decode result: %w", v.Name(), err)
	}
	if res.Objects != opts.objects {
		return res, fmt.Errorf("child %s: cached %d objects, the server holds %d", v.Name(), res.Objects, opts.objects)
	}
	return res, nil
}
