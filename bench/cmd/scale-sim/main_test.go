package main

import (
	"io"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kcache/cache/bench/internal/harness"
)

// TestMain lets the test binary serve as the server and the children, as
// the scale-sim binary does.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case childFlag:
			os.Exit(childMain(os.Args[2:], os.Stdout, os.Stderr))
		case serverFlag:
			os.Exit(serverMain(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
		}
	}
	os.Exit(m.Run())
}

var (
	variantLineRE = regexp.MustCompile(`^scale-sim: objects=(\d+) variant=(client-go|kcache|kcache-noshare) heap-per-object-bytes=\d+ ` +
		`peak-heap-mib=-?\d+\.\d peak-rss-mib=\d+\.\d sync-s=\d+\.\d\d sync-cpu-s=\d+\.\d\d$`)
	ratioLineRE = regexp.MustCompile(`^scale-sim: objects=(\d+) heap/object kcache/client-go = \d+\.\d\d, sync time = \d+\.\d\d$`)
)

// machineLines returns the report's variant lines' objects and variants,
// in order, and whether it has a ratio line, failing t on any line that
// starts like one but does not parse.
func machineLines(t *testing.T, report string) ([]string, bool) {
	t.Helper()
	var got []string
	ratio := false
	for line := range strings.SplitSeq(report, "\n") {
		if !strings.HasPrefix(line, "scale-sim: ") {
			continue
		}
		if m := variantLineRE.FindStringSubmatch(line); m != nil {
			got = append(got, m[1]+" "+m[2])
			continue
		}
		if ratioLineRE.MatchString(line) {
			ratio = true
			continue
		}
		t.Errorf("malformed machine-readable line %q", line)
	}
	return got, ratio
}

// The quick run, as make test runs it: a real server process, a child per
// variant over HTTP, every figure of the report.
func TestRun_Quick(t *testing.T) {
	tests := map[string]struct {
		args      []string
		want      []string
		wantRatio bool
	}{
		"streamed, every variant": {
			args:      []string{"-quick"},
			want:      []string{"2000 client-go", "2000 kcache", "2000 kcache-noshare"},
			wantRatio: true,
		},
		"paged, kcache alone": {
			args: []string{"-objects", "1200", "-watchlist=false", "-only", "kcache"},
			want: []string{"1200 kcache"},
		},
		"one response, kcache alone": {
			args: []string{"-objects", "1200", "-watchlist=false", "-one-page", "-only", "kcache"},
			want: []string{"1200 kcache"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var out, progress strings.Builder
			if code := parentMain(append(tc.args, "-timeout", "2m"), &out, &progress); code != 0 {
				t.Fatalf("exit code %d; progress:\n%s", code, progress.String())
			}
			got, ratio := machineLines(t, out.String())
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("variant lines (-want +got):\n%s\nreport:\n%s", diff, out.String())
			}
			if ratio != tc.wantRatio {
				t.Errorf("ratio line present = %t, want %t; report:\n%s", ratio, tc.wantRatio, out.String())
			}
		})
	}
}

func TestParseOptions_RefusesBadInput(t *testing.T) {
	tests := map[string][]string{
		"no objects":         {"-objects", "0"},
		"negative objects":   {"-objects", "-5"},
		"an unknown variant": {"-only", "kcache,informer"},
		"a zero timeout":     {"-timeout", "0s"},
		"a stray argument":   {"extra"},
		"an unknown flag":    {"-pods", "5"},
	}
	for name, args := range tests {
		t.Run(name, func(t *testing.T) {
			if _, err := parseOptions(args, io.Discard); err == nil {
				t.Errorf("parseOptions(%q) succeeded, want an error", args)
			}
		})
	}
}

func TestWriteReport_Lines(t *testing.T) {
	res := func(v variant, perObject, syncS float64) result {
		return result{Variant: v, ScaleSimResult: harness.ScaleSimResult{
			Lib: v.Lib, Objects: 1000, SteadyHeap: perObject * 1000, PeakHeap: 3 * mib, PeakRSS: 50.25 * mib,
			SyncSeconds: syncS, SyncCPUSeconds: syncS / 2,
		}}
	}
	cg, kc, noshare := allVariants[0], allVariants[1], allVariants[2]
	tests := map[string]struct {
		results []result
		want    []string
	}{
		"all three": {
			results: []result{res(cg, 3000, 10), res(kc, 1200, 8), res(noshare, 3100, 9)},
			want: []string{
				"scale-sim: objects=1000 variant=client-go heap-per-object-bytes=3000 peak-heap-mib=3.0 peak-rss-mib=50.2 sync-s=10.00 sync-cpu-s=5.00",
				"scale-sim: objects=1000 variant=kcache heap-per-object-bytes=1200 peak-heap-mib=3.0 peak-rss-mib=50.2 sync-s=8.00 sync-cpu-s=4.00",
				"scale-sim: objects=1000 variant=kcache-noshare heap-per-object-bytes=3100 peak-heap-mib=3.0 peak-rss-mib=50.2 sync-s=9.00 sync-cpu-s=4.50",
				"scale-sim: objects=1000 heap/object kcache/client-go = 0.40, sync time = 0.80",
			},
		},
		"no client-go: no ratio": {
			results: []result{res(kc, 1200, 8)},
			want: []string{
				"scale-sim: objects=1000 variant=kcache heap-per-object-bytes=1200 peak-heap-mib=3.0 peak-rss-mib=50.2 sync-s=8.00 sync-cpu-s=4.00",
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var out strings.Builder
			opts := options{objects: 1000, watchList: true, timeout: time.Minute}
			if err := writeReport(&out, opts, tc.results); err != nil {
				t.Fatal(err)
			}
			var got []string
			for line := range strings.SplitSeq(out.String(), "\n") {
				if strings.HasPrefix(line, "scale-sim: ") {
					got = append(got, line)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("machine lines (-want +got):\n%s", diff)
			}
			if !strings.Contains(out.String(), "| kcache | 1000 | 1200 | 3.0 | 50.2 | 8.00 | 4.00 |") {
				t.Errorf("no table row for kcache in:\n%s", out.String())
			}
		})
	}
}

func TestParseReady(t *testing.T) {
	tests := map[string]struct {
		line    string
		wantURL string
		wantErr bool
	}{
		"a ready line":   {line: readyPrefix + "http://127.0.0.1:4000 1.500\n", wantURL: "http://127.0.0.1:4000"},
		"something else": {line: "panic: boom\n", wantErr: true},
		"no load time":   {line: readyPrefix + "http://127.0.0.1:4000\n", wantErr: true},
		"a bad time":     {line: readyPrefix + "http://127.0.0.1:4000 soon\n", wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			url, _, err := parseReady(tc.line)
			if (err != nil) != tc.wantErr || url != tc.wantURL {
				t.Errorf("parseReady(%q) = %q, %v; want %q, error %t", tc.line, url, err, tc.wantURL, tc.wantErr)
			}
		})
	}
}
