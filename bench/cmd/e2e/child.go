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
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kcache/cache/bench/internal/e2e"
	"github.com/kcache/cache/bench/internal/harness"
)

// childFlag, as the first argument, makes the binary a measured child.
const childFlag = "-child"

// restConfig reads the kubeconfig and sets what a controller sets: the
// protobuf encoding and no client-side rate limit.
func restConfig(kubeconfig string) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	cfg.QPS, cfg.Burst = -1, 0
	return cfg, nil
}

// childMain runs one library's informer against the server and writes its
// result as JSON to stdout; with -churn, the churn phase's child, which
// also talks with the parent over stdin and stdout (churn.go). It returns
// the exit code.
func childMain(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("child", flag.ContinueOnError)
	fs.SetOutput(stderr)
	lib := fs.String("lib", "", "library to measure")
	pods := fs.Int("pods", 0, "pods the server holds")
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig")
	control := fs.String("control", "", "kas control API URL")
	heapProf := fs.String("heapprofile", "", "heap profile prefix (with -churn: the file)")
	cpuProf := fs.String("cpuprofile", "", "where to write a CPU profile: of the churn window with -churn, else of the whole run")
	timeout := fs.Duration("timeout", 10*time.Minute, "give up after this long")
	verbose := fs.Bool("v", false, "keep klog output")
	churn := fs.Bool("churn", false, "be a churn child: sync, then measure while the parent updates the pods")
	relist := fs.Bool("relist", true, "after the sync, force a relist and measure it")
	quietRelist := fs.Bool("quiet-relist", false, "the variant runs with quiet relists: expect no notification from the relist")
	relistLimit := fs.Float64("relist-memory-limit", 0, "run the relist under a Go memory limit of this many times the runtime's settled memory (0: none)")
	attribute := fs.Bool("attribution", false, "after the sync, report where the cached pods' bytes go")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if !*verbose {
		quietKlog()
	}
	l, ok := library(*lib)
	if !ok {
		fmt.Fprintf(stderr, "e2e child: unknown library %q\n", *lib)
		return 2
	}
	var res any
	var err error
	if *churn {
		res, err = runChurnChild(l, *pods, *kubeconfig, *cpuProf, *heapProf, *timeout, stdin, stdout)
	} else {
		res, err = runChild(l, childRun{pods: *pods, kubeconfig: *kubeconfig, control: *control, heapProf: *heapProf,
			cpuProf: *cpuProf, timeout: *timeout, relist: *relist, quietRelist: *quietRelist, relistLimit: *relistLimit, attribute: *attribute})
	}
	if err == nil {
		err = json.NewEncoder(stdout).Encode(res)
	}
	if err != nil {
		fmt.Fprintf(stderr, "e2e child %s: %v\n", *lib, err)
		return 1
	}
	return 0
}

// childRun is what a measured child is asked to do.
type childRun struct {
	pods                           int
	kubeconfig, control, heapProf  string
	cpuProf                        string
	timeout                        time.Duration
	relist, quietRelist, attribute bool
	relistLimit                    float64
}

// attributionRows is how many field paths an attribution reports.
const attributionRows = 25

func runChild(l harness.Library, c childRun) (res harness.E2EResult, err error) {
	if c.cpuProf != "" {
		stop, err := harness.StartCPUProfile(c.cpuProf)
		if err != nil {
			return res, err
		}
		defer func() {
			if serr := stop(); err == nil {
				err = serr
			}
		}()
	}
	cfg, err := restConfig(c.kubeconfig)
	if err != nil {
		return harness.E2EResult{}, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return harness.E2EResult{}, fmt.Errorf("clientset: %w", err)
	}
	e2eCfg := harness.E2EConfig{
		Client:      cs.CoreV1().RESTClient(),
		Pods:        c.pods,
		Timeout:     c.timeout,
		HeapProfile: c.heapProf,
	}
	var attribution *harness.Attribution
	if c.attribute {
		e2eCfg.AfterSync = func(indexer any) error {
			lister, ok := indexer.(interface{ List() []interface{} })
			if !ok {
				return fmt.Errorf("attribution: the cache of %s has no List", l.Name)
			}
			a := harness.Attribute(lister.List(), attributionRows)
			attribution = &a
			return nil
		}
	}
	if c.relist {
		e2eCfg.Relist = e2e.Relister{Client: cs, ControlURL: c.control}.Relist
		e2eCfg.RelistMemoryLimit = c.relistLimit
		e2eCfg.QuietRelist = c.quietRelist
	}
	res, err = l.E2E(context.Background(), e2eCfg)
	res.Attribution = attribution
	return res, err
}

// childBinary returns the binary to run v's child with: this executable
// when v has no tag, else one built with the tag into dir.
func childBinary(ctx context.Context, v variant, dir string, progress io.Writer) (string, error) {
	if v.Tag == "" {
		exe, err := os.Executable()
		if err != nil {
			return "", fmt.Errorf("find own executable: %w", err)
		}
		return exe, nil
	}
	out := filepath.Join(dir, "e2e-"+v.Tag)
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	began := time.Now()
	cmd := exec.CommandContext(ctx, "go", "build", "-tags", v.Tag, "-o", out, "github.com/kcache/cache/bench/cmd/e2e")
	cmd.Stdout, cmd.Stderr = progress, progress
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("build child with -tags %s: %w", v.Tag, err)
	}
	fmt.Fprintf(progress, "e2e: built the -tags %s child in %.0f s\n", v.Tag, time.Since(began).Seconds())
	return out, nil
}

// spawnChild runs v's informer in a fresh process.
func spawnChild(ctx context.Context, opts options, v variant, bin string, pods int, progress io.Writer) (harness.E2EResult, error) {
	args := []string{childFlag,
		"-lib=" + v.Lib,
		"-pods=" + strconv.Itoa(pods),
		"-kubeconfig=" + opts.kubeconfig,
		"-control=" + opts.controlURL,
		"-timeout=" + opts.timeout.String(),
		"-v=" + strconv.FormatBool(opts.verbose),
		"-relist=" + strconv.FormatBool(opts.relist),
		"-quiet-relist=" + strconv.FormatBool(v.Quiet),
	}
	if opts.heapProf != "" {
		args = append(args, "-heapprofile="+opts.heapProf+"."+v.Name())
	}
	if opts.relistMemoryLimit > 0 {
		args = append(args, "-relist-memory-limit="+strconv.FormatFloat(opts.relistMemoryLimit, 'g', -1, 64))
	}
	if opts.attribute {
		args = append(args, "-attribution")
	}
	if opts.cpuProf != "" {
		args = append(args, "-cpuprofile="+opts.cpuProf+"."+v.Name()+".run")
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = childEnv(os.Environ(), v, opts.list)
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, progress
	if err := cmd.Run(); err != nil {
		return harness.E2EResult{}, fmt.Errorf("child %s: %w", v.Name(), err)
	}
	var res harness.E2EResult
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		return res, fmt.Errorf("child %s: decode result: %w", v.Name(), err)
	}
	return res, nil
}

// childEnv is the environment of v's child: the parent's without any of
// the switches the variants and list modes set, then KCACHE_SHARE_VALUES=false
// for a -noshare variant, KCACHE_QUIET_RELIST=true for a -quiet one, and
// KUBE_FEATURE_WatchListClient=false for paginated lists (both libraries
// read it), so that each runs as its variant says and otherwise as it does
// by default.
func childEnv(parent []string, v variant, list listMode) []string {
	env := make([]string, 0, len(parent)+3)
	for _, kv := range parent {
		if !strings.HasPrefix(kv, shareValuesEnv+"=") && !strings.HasPrefix(kv, quietRelistEnv+"=") &&
			!strings.HasPrefix(kv, watchListEnv+"=") {
			env = append(env, kv)
		}
	}
	if v.NoShare {
		env = append(env, shareValuesEnv+"=false")
	}
	if v.Quiet {
		env = append(env, quietRelistEnv+"=true")
	}
	if list == listPaged {
		env = append(env, watchListEnv+"=false")
	}
	return env
}

// The switches childEnv sets: kcache's for sharing equal parts of cached
// objects and for quiet relists, and the feature gate both libraries read
// to choose streaming lists.
const (
	shareValuesEnv = "KCACHE_SHARE_VALUES"
	quietRelistEnv = "KCACHE_QUIET_RELIST"
	watchListEnv   = "KUBE_FEATURE_WatchListClient"
)

// listMode is how the informers list: streaming (a watch sending the
// initial objects, client-go v0.37.2's default) or paginated lists.
type listMode string

const (
	listStream listMode = "stream"
	listPaged  listMode = "paged"
)

// parseListMode reads -list.
func parseListMode(s string) (listMode, error) {
	switch m := listMode(s); m {
	case listStream, listPaged:
		return m, nil
	}
	return "", fmt.Errorf("e2e: -list %q: want %s or %s", s, listStream, listPaged)
}
