package main

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kcache/cache/bench/internal/harness"
)

// TestMain lets the test binary serve as the memory child, as the compare
// binary does.
func TestMain(m *testing.M) {
	if isChild(os.Args[1:]) {
		os.Exit(childMain(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// TestRunTiny runs the whole comparison at tiny sizes, memory children
// included, and checks the report has every section and no errors.
func TestRunTiny(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var out, progress strings.Builder
	opts := options{
		rounds: 1, memRounds: 1, only: regexp.MustCompile(""),
		sizes:       harness.TinySizes,
		mem:         harness.MemConfig{Pods: 600, WatchList: true, ChangedEvery: 10, Timeout: time.Minute},
		progress:    &progress,
		out:         &out,
		childBinary: exe,
	}
	if err := run(context.Background(), opts); err != nil {
		t.Fatalf("run: %v\n%s", err, progress.String())
	}
	report := out.String()
	for _, section := range []string{"### Indexer, queues and listers", "### SharedIndexInformer", "### Write rate",
		"### Memory", "### Targets", "| Lister/ListAllByNamespace |", "| heap per cached pod |"} {
		if !strings.Contains(report, section) {
			t.Errorf("report lacks %q", section)
		}
	}
	if strings.Contains(report, "### Errors") || strings.Contains(report, "not measured") {
		t.Errorf("report has errors or gaps:\n%s\nprogress:\n%s", report, progress.String())
	}
}

func TestParseOptions(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantErr    bool
		wantRounds int
		wantPods   int
	}{
		{name: "defaults", wantRounds: 5, wantPods: 100_000},
		{name: "quick", args: []string{"-quick"}, wantRounds: 2, wantPods: 10_000},
		{name: "quick with rounds", args: []string{"-quick", "-rounds=3"}, wantRounds: 3, wantPods: 10_000},
		{name: "bad regexp", args: []string{"-only", "("}, wantErr: true},
		{name: "unknown library", args: []string{"-lib", "x"}, wantErr: true},
		{name: "stray argument", args: []string{"extra"}, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, err := parseOptions(tc.args)
			if (err != nil) != tc.wantErr {
				t.Fatalf("parseOptions error = %v, want error %t", err, tc.wantErr)
			}
			if err == nil && (o.rounds != tc.wantRounds || o.sizes.Pods != tc.wantPods) {
				t.Errorf("rounds %d, pods %d; want %d and %d", o.rounds, o.sizes.Pods, tc.wantRounds, tc.wantPods)
			}
		})
	}
}

func TestChildRejectsUnknownLibrary(t *testing.T) {
	var out, errs strings.Builder
	if code := childMain([]string{"-memchild=nope"}, &out, &errs); code == 0 {
		t.Errorf("exit code 0 for an unknown library; stderr %q", errs.String())
	}
}

// In each round the libraries after the first run a timed loop workload for
// exactly as many iterations as the first did, and the first alternates.
func TestRunWorkloads_EqualIterationsPerRound(t *testing.T) {
	lib := func(name string) harness.Library {
		return harness.Library{Name: name, Workloads: []harness.Workload{{
			Name: "Indexer/Spin", Group: harness.GroupIndexer,
			Run: func(b *testing.B, _ *harness.Fixture) error {
				for b.Loop() {
				}
				return nil
			},
		}}}
	}
	opts := options{rounds: 4, only: regexp.MustCompile(""), sizes: harness.Sizes{BenchTime: 20 * time.Millisecond},
		progress: &strings.Builder{}}
	rows := runWorkloads(context.Background(), opts, []harness.Library{lib("a"), lib("b")}, nil)
	if len(rows) != 1 || len(rows[0].errs) > 0 {
		t.Fatalf("rows %v", rows)
	}
	if got := rows[0].results; len(got["a"]) != 4 || len(got["b"]) != 4 {
		t.Fatalf("results per library: a %d, b %d; want 4 each", len(got["a"]), len(got["b"]))
	}
	for round := range 4 {
		a, b := rows[0].results["a"][round].N, rows[0].results["b"][round].N
		if a != b {
			t.Errorf("round %d: a ran %d iterations, b %d", round+1, a, b)
		}
	}
	if got := roundOrder([]harness.Library{{Name: "a"}, {Name: "b"}}, 2); got[0].Name != "b" {
		t.Errorf("round 2 starts with %s, want b", got[0].Name)
	}
}
