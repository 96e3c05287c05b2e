// Command specreport reads the results of one test suite run several ways
// (variants), prints a markdown table of counts and times, lists every spec
// or Go test whose outcome differs between variants, and exits 1 unless
// every variant that ran passed with the same counts.
//
// Usage:
//
//	specreport VARIANT=DIR...
//
// Each DIR may hold report.json (Ginkgo's JSON report), test.json (the test
// binary's output through `go tool test2json`), times (lines "build_s N",
// "run_s N", "exit N", written by run.sh) and pending (the reason the variant
// was not run; such a variant is listed but not compared).
package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/kcache/cache/ecosystem/internal/specs"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "specreport:", err)
		os.Exit(1)
	}
}

// variantDir is one VARIANT=DIR argument, read.
type variantDir struct {
	run   specs.Run
	times map[string]int
}

func run(args []string, w io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: specreport VARIANT=DIR [VARIANT=DIR ...]")
	}
	var vs []variantDir
	for _, a := range args {
		name, dir, ok := strings.Cut(a, "=")
		if !ok || name == "" || dir == "" {
			return fmt.Errorf("argument %q: want VARIANT=DIR", a)
		}
		v, err := readVariant(name, dir)
		if err != nil {
			return err
		}
		vs = append(vs, v)
	}
	runs := make([]specs.Run, len(vs))
	for i, v := range vs {
		runs[i] = v.run
	}
	diffs := specs.Compare(runs)
	printTable(w, vs)
	printRetried(w, runs)
	printDiffs(w, runs, diffs)
	if err := specs.Verdict(runs, diffs); err != nil {
		return err
	}
	for _, v := range vs {
		if v.run.Pending == "" && v.times["exit"] != 0 {
			return fmt.Errorf("variant %s: test binary exited with status %d", v.run.Variant, v.times["exit"])
		}
	}
	return nil
}

func readVariant(name, dir string) (variantDir, error) {
	v := variantDir{run: specs.Run{Variant: name}, times: map[string]int{}}
	if b, err := os.ReadFile(filepath.Join(dir, "pending")); err == nil {
		v.run.Pending = strings.TrimSpace(string(b))
		if v.run.Pending == "" {
			v.run.Pending = "pending"
		}
		return v, nil
	}
	f, err := os.Open(filepath.Join(dir, "report.json"))
	if err != nil {
		// A run that left no report failed before or while starting its
		// suite: it counts as a run with nothing passed.
		v.run.Specs = []specs.Spec{{Name: "(no ginkgo report)", State: specs.Failed, Message: err.Error()}}
	} else {
		v.run.Specs, err = specs.ReadGinkgo(f)
		f.Close()
		if err != nil {
			return v, fmt.Errorf("variant %s: %w", name, err)
		}
	}
	if f, err := os.Open(filepath.Join(dir, "test.json")); err == nil {
		v.run.Tests, err = specs.ReadTest2JSON(f)
		f.Close()
		if err != nil {
			return v, fmt.Errorf("variant %s: %w", name, err)
		}
	}
	if f, err := os.Open(filepath.Join(dir, "times")); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			k, val, ok := strings.Cut(strings.TrimSpace(sc.Text()), " ")
			if n, err := strconv.Atoi(strings.TrimSpace(val)); ok && err == nil {
				v.times[k] = n
			}
		}
		f.Close()
	}
	return v, nil
}

func printTable(w io.Writer, vs []variantDir) {
	fmt.Fprintln(w, "| variant | specs passed | failed | skipped | not selected | passed on retry | go tests passed | build | run |")
	fmt.Fprintln(w, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
	for _, v := range vs {
		if v.run.Pending != "" {
			fmt.Fprintf(w, "| %s | pending: %s | | | | | | | |\n", v.run.Variant, v.run.Pending)
			continue
		}
		c := specs.Count(v.run.Specs)
		retried := 0
		for _, s := range v.run.Specs {
			if s.Retried {
				retried++
			}
		}
		testsPassed := 0
		for _, st := range v.run.Tests {
			if st == specs.Passed {
				testsPassed++
			}
		}
		fmt.Fprintf(w, "| %s | %d | %d | %d | %d | %d | %d/%d | %s | %s |\n", v.run.Variant,
			c[specs.Passed], c[specs.Failed], c[specs.Skipped]+c[specs.Pending], c[specs.Filtered], retried,
			testsPassed, len(v.run.Tests), seconds(v.times, "build_s"), seconds(v.times, "run_s"))
	}
}

func seconds(times map[string]int, key string) string {
	n, ok := times[key]
	if !ok {
		return "-"
	}
	return fmt.Sprintf("%d s", n)
}

func printDiffs(w io.Writer, runs []specs.Run, diffs []specs.Difference) {
	if len(diffs) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%d spec(s) or test(s) differ between variants:\n", len(diffs))
	for _, d := range diffs {
		fmt.Fprintf(w, "- %s\n", d.Name)
		for i, r := range runs {
			if r.Pending != "" {
				continue
			}
			line := fmt.Sprintf("    %s: %s", r.Variant, d.States[i])
			if d.Messages[i] != "" {
				line += ": " + d.Messages[i]
			}
			fmt.Fprintln(w, line)
		}
	}
}

// printRetried names the specs that failed once and passed on a retry, so
// a flaky spec is visible even though it counts as passed.
func printRetried(w io.Writer, runs []specs.Run) {
	for _, r := range runs {
		for _, s := range r.Specs {
			if s.Retried {
				fmt.Fprintf(w, "\n%s: passed on retry: %s", r.Variant, s.Name)
			}
		}
	}
	fmt.Fprintln(w)
}
