// Command scale runs the end-to-end benchmark (cmd/e2e) at growing pod
// counts on one real kube-apiserver (kas/) and writes the cost curve: for
// each count, one child process per variant (client-go, kcache as shipped,
// kcache without value sharing), first with streaming lists, then with
// paginated ones; at the counts -churn-at names, a churn phase; at the
// largest count, a forced relist (etcd compacted, API server restarted)
// with kcache's quiet relist as a fourth variant. It prints the tables, one
// machine-readable line per measurement and, last, the summary line
// "scale: pods=...". bench/scale.sh starts the server and writes the result
// file; see bench/README.md ("Scale").
//
//	cd bench && go run ./cmd/scale -pods 1000,5000,20000,50000,100000
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// options are the command's flags.
type options struct {
	pods      []int
	churnAt   []int
	relistAt  int
	churn     time.Duration
	churnRate float64
	timeout   time.Duration
	e2eBin    string
	simBin    string
	simCount  int
	// relistOnly runs only the forced relist's step; rowsFrom names an
	// earlier result file whose sync and churn lines this run copies and
	// whose figures its summary uses where it measured none itself.
	relistOnly bool
	rowsFrom   string
}

// Variants measured at every count, and at the relist.
const (
	syncVariants   = "client-go,kcache,kcache-noshare"
	relistVariants = "client-go,kcache,kcache-noshare,kcache-quiet"
)

func parseOptions(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("scale", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	pods := fs.String("pods", "1000,5000,20000,50000,100000", "comma-separated pod counts, measured in increasing order (SCALE_PODS in bench/scale.sh)")
	churnAt := fs.String("churn-at", "5000,100000", "pod counts at which a churn phase runs (counts not in -pods are ignored)")
	fs.IntVar(&o.relistAt, "relist-at", 0, "pod count at which the forced relist is measured (0: the largest of -pods; -1: none)")
	fs.DurationVar(&o.churn, "churn", 60*time.Second, "length of each churn phase")
	fs.Float64Var(&o.churnRate, "churn-rate", 200, "pod updates per second in a churn phase")
	fs.DurationVar(&o.timeout, "timeout", 30*time.Minute, "give up on one child after this long")
	fs.StringVar(&o.e2eBin, "e2e", "", "cmd/e2e binary to run (default: built from this module)")
	fs.StringVar(&o.simBin, "sim", "", "cmd/scale-sim binary to run after the server phases (default: built from this module when -sim-objects > 0)")
	fs.IntVar(&o.simCount, "sim-objects", 0, "objects of the simulated server's phase (cmd/scale-sim); 0 skips it")
	fs.BoolVar(&o.relistOnly, "relist-only", false, "run only the forced relist at -relist-at (sync and churn figures can come from -rows-from)")
	fs.StringVar(&o.rowsFrom, "rows-from", "", "earlier scale result file: its scale-row and scale-churn lines are copied into this run's output, marked, and the summary uses them where this run measured nothing")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	var err error
	if o.pods, err = parseCounts(*pods); err != nil {
		return o, fmt.Errorf("scale: -pods: %w", err)
	}
	if len(o.pods) == 0 {
		return o, fmt.Errorf("scale: -pods names no count")
	}
	if o.churnAt, err = parseCounts(*churnAt); err != nil {
		return o, fmt.Errorf("scale: -churn-at: %w", err)
	}
	if o.relistAt == 0 {
		o.relistAt = o.pods[len(o.pods)-1]
	}
	if o.relistOnly && !slices.Contains(o.pods, o.relistAt) {
		return o, fmt.Errorf("scale: -relist-only: -relist-at %d is not one of -pods", o.relistAt)
	}
	return o, nil
}

// parseCounts reads a comma-separated list of positive counts, sorted and
// without repeats.
func parseCounts(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		f = strings.TrimSpace(strings.ReplaceAll(f, "_", ""))
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%q is not a positive count", f)
		}
		out = append(out, n)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

func main() {
	opts, err := parseOptions(os.Args[1:], os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if err := run(context.Background(), opts, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// step is one run of cmd/e2e: its flags, and what it measured.
type step struct {
	pods   int
	list   string
	relist bool
	churn  time.Duration
}

// steps are the runs, in order, for opts.
func steps(opts options) []step {
	var out []step
	for _, n := range opts.pods {
		if opts.relistOnly {
			if n == opts.relistAt {
				out = append(out, step{pods: n, list: "stream", relist: true})
			}
			continue
		}
		s := step{pods: n, list: "stream"}
		if slices.Contains(opts.churnAt, n) {
			s.churn = opts.churn
		}
		out = append(out, s, step{pods: n, list: "paged"})
		if n == opts.relistAt {
			out = append(out, step{pods: n, list: "stream", relist: true})
		}
	}
	return out
}

// args are cmd/e2e's flags for s; the results go as JSON to out.
func (s step) args(opts options, out string) []string {
	only := syncVariants
	if s.relist {
		only = relistVariants
	}
	return []string{
		"-n", strconv.Itoa(s.pods), "-only", only, "-list", s.list,
		"-relist=" + strconv.FormatBool(s.relist),
		"-churn", s.churn.String(), "-churn-rate", strconv.FormatFloat(opts.churnRate, 'g', -1, 64),
		"-timeout", opts.timeout.String(), "-json", out,
	}
}

// run runs every step, then the simulation, and writes the report.
func run(ctx context.Context, opts options, stdout, stderr io.Writer) error {
	dir, err := os.MkdirTemp("", "kcache-scale-")
	if err != nil {
		return fmt.Errorf("scale: temp dir: %w", err)
	}
	defer os.RemoveAll(dir)
	earlier, err := copyEarlier(opts.rowsFrom, stdout)
	if err != nil {
		return err
	}
	bin, err := binary(ctx, opts.e2eBin, "./cmd/e2e", dir, stderr)
	if err != nil {
		return err
	}
	var all []measured
	for k, s := range steps(opts) {
		out := filepath.Join(dir, fmt.Sprintf("step-%d.json", k))
		fmt.Fprintf(stderr, "scale: %d pods, %s lists%s%s\n", s.pods, s.list,
			map[bool]string{true: ", relist"}[s.relist], map[bool]string{true: ", churn " + s.churn.String()}[s.churn > 0])
		cmd := exec.CommandContext(ctx, bin, s.args(opts, out)...)
		cmd.Stdout, cmd.Stderr = stderr, stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("scale: %d pods, %s lists: e2e: %w", s.pods, s.list, err)
		}
		got, err := readStep(out, s)
		if err != nil {
			return err
		}
		// Each step's lines go out as soon as it ends, so that a run
		// stopped early still leaves what it measured.
		if err := writeLines(stdout, got); err != nil {
			return err
		}
		all = append(all, got...)
	}
	var sim []string
	if opts.simCount > 0 {
		if sim, err = runSim(ctx, opts, dir, stderr); err != nil {
			return err
		}
	}
	return writeReport(stdout, all, earlier, sim, opts)
}

// readStep reads the results cmd/e2e wrote for s.
func readStep(path string, s step) ([]measured, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("scale: results of %d pods, %s lists: %w", s.pods, s.list, err)
	}
	var rs []e2eResult
	if err := json.Unmarshal(data, &rs); err != nil {
		return nil, fmt.Errorf("scale: results of %d pods, %s lists: %w", s.pods, s.list, err)
	}
	out := make([]measured, len(rs))
	for k, r := range rs {
		out[k] = measured{step: s, e2eResult: r}
	}
	return out, nil
}

// binary returns bin, or when it is empty builds pkg of this module into dir.
func binary(ctx context.Context, bin, pkg, dir string, progress io.Writer) (string, error) {
	if bin != "" {
		return bin, nil
	}
	out := filepath.Join(dir, filepath.Base(pkg))
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, pkg)
	cmd.Stdout, cmd.Stderr = progress, progress
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("scale: build %s: %w", pkg, err)
	}
	return out, nil
}

// runSim runs cmd/scale-sim and returns its machine-readable lines (its
// tables go to progress).
func runSim(ctx context.Context, opts options, dir string, progress io.Writer) ([]string, error) {
	bin, err := binary(ctx, opts.simBin, "./cmd/scale-sim", dir, progress)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(progress, "scale: simulated server, %d objects\n", opts.simCount)
	cmd := exec.CommandContext(ctx, bin, "-objects", strconv.Itoa(opts.simCount))
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = io.MultiWriter(&out, progress), progress
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("scale: scale-sim: %w", err)
	}
	var lines []string
	for l := range strings.SplitSeq(out.String(), "\n") {
		if strings.HasPrefix(l, "scale-sim:") {
			lines = append(lines, l)
		}
	}
	return lines, nil
}
