package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gonum.org/v1/plot/plotter"

	"github.com/kcache/cache/bench/internal/scaleresult"
)

const fixture = "testdata/scale-fixture.txt"

func fixtureRows(t *testing.T) []scaleresult.Row {
	t.Helper()
	f, err := os.Open(fixture)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := scaleresult.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func TestCurves_Fixture(t *testing.T) {
	rows := fixtureRows(t)
	for _, tc := range []struct {
		fig  string
		want map[string]plotter.XYs
	}{
		{fig: "scale-heap-per-pod.svg", want: map[string]plotter.XYs{
			"client-go":      {{X: 1000, Y: 27000}, {X: 20000, Y: 25000}, {X: 100000, Y: 24800}},
			"kcache":         {{X: 1000, Y: 10500}, {X: 20000, Y: 8800}, {X: 100000, Y: 8600}},
			"kcache-noshare": {{X: 1000, Y: 26500}, {X: 20000, Y: 24700}, {X: 100000, Y: 24500}},
		}},
		{fig: "scale-sync-time.svg", want: map[string]plotter.XYs{
			"client-go":      {{X: 1000, Y: 0.40}, {X: 20000, Y: 5.00}, {X: 100000, Y: 26.00}},
			"kcache":         {{X: 1000, Y: 0.42}, {X: 20000, Y: 4.70}, {X: 100000, Y: 24.00}},
			"kcache-noshare": {{X: 1000, Y: 0.38}, {X: 20000, Y: 4.50}, {X: 100000, Y: 22.50}},
		}},
	} {
		t.Run(tc.fig, func(t *testing.T) {
			cs, err := curves(rows, figureNamed(t, tc.fig).y)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]plotter.XYs{}
			var order []string
			for _, c := range cs {
				got[c.variant] = c.points
				order = append(order, c.variant)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("points (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(scaleresult.Variants, order); diff != "" {
				t.Errorf("curve order (-want +got):\n%s", diff)
			}
		})
	}
}

func figureNamed(t *testing.T, file string) figure {
	t.Helper()
	for _, f := range figures {
		if f.file == file {
			return f
		}
	}
	t.Fatalf("no figure %s", file)
	return figure{}
}

func TestRender_Errors(t *testing.T) {
	row := func(variant, list string, sync float64) scaleresult.Row {
		return scaleresult.Row{Pods: 1000, Variant: variant, List: list, HeapPerPodBytes: 100, SyncSeconds: sync}
	}
	all := []scaleresult.Row{
		row("client-go", "stream", 1), row("kcache", "stream", 1), row("kcache-noshare", "stream", 1),
	}
	for _, tc := range []struct {
		name    string
		rows    []scaleresult.Row
		fig     string
		wantErr string
	}{
		{name: "a variant missing", rows: all[:2], fig: "scale-heap-per-pod.svg",
			wantErr: "no list=stream rows for variant kcache-noshare"},
		{name: "a variant measured paged only", rows: append(all[1:3:3], row("client-go", "paged", 1)), fig: "scale-heap-per-pod.svg",
			wantErr: "no list=stream rows for variant client-go"},
		{name: "no rows", fig: "scale-sync-time.svg", wantErr: "no list=stream rows for variant client-go"},
		{name: "zero on a log scale", rows: append(all[:2:2], row("kcache-noshare", "stream", 0)), fig: "scale-sync-time.svg",
			wantErr: "scale-sync-time.svg: a value of 0 cannot be drawn on a log scale"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := render(figureNamed(t, tc.fig), tc.rows, "x.txt")
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("render error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
	// A zero heap per pod is drawable on the linear axis.
	zero := append(all[:2:2], scaleresult.Row{Pods: 1000, Variant: "kcache-noshare", List: "stream"})
	if _, err := render(figureNamed(t, "scale-heap-per-pod.svg"), zero, "x.txt"); err != nil {
		t.Errorf("render with a zero heap per pod: %v", err)
	}
}

// TestRender_SameInputSameBytes is what lets the figures test compare
// bytes; a changed point or source must change them.
func TestRender_SameInputSameBytes(t *testing.T) {
	rows := fixtureRows(t)
	for _, fig := range figures {
		t.Run(fig.file, func(t *testing.T) {
			first, err := render(fig, rows, "scale-fixture.txt")
			if err != nil {
				t.Fatal(err)
			}
			again, err := render(fig, fixtureRows(t), "scale-fixture.txt")
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(first, again) {
				t.Fatal("two renders of the same rows differ")
			}
			moved := fixtureRows(t)
			moved[0].HeapPerPodBytes += 1000
			moved[0].SyncSeconds += 1
			changed, err := render(fig, moved, "scale-fixture.txt")
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Equal(first, changed) {
				t.Error("moving a point left the picture unchanged")
			}
			renamed, err := render(fig, rows, "scale-other.txt")
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Equal(first, renamed) {
				t.Error("naming another source left the picture unchanged")
			}
		})
	}
}

// TestRender_Content checks that each picture is well-formed SVG with its
// title, source, legend and pod labels.
func TestRender_Content(t *testing.T) {
	rows := fixtureRows(t)
	for _, fig := range figures {
		t.Run(fig.file, func(t *testing.T) {
			svg, err := render(fig, rows, "scale-fixture.txt")
			if err != nil {
				t.Fatal(err)
			}
			texts := svgTexts(t, svg)
			for _, want := range []string{
				fig.title, "from scale-fixture.txt", fig.yLabel, "pods in the informer (log scale)",
				"client-go", "kcache", "kcache-noshare", "1k", "20k", "100k",
			} {
				if !texts[want] {
					t.Errorf("no text %q in the picture; its texts: %v", want, texts)
				}
			}
			if texts["5k"] || texts["50k"] {
				t.Error("a pod count the file does not measure is labelled")
			}
		})
	}
}

// svgTexts returns the contents of the <text> elements of an SVG document,
// failing the test if it is not well-formed XML.
func svgTexts(t *testing.T, svg []byte) map[string]bool {
	t.Helper()
	texts := map[string]bool{}
	dec := xml.NewDecoder(bytes.NewReader(svg))
	inText := false
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return texts
		}
		if err != nil {
			t.Fatalf("the SVG is not well-formed: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			inText = tok.Name.Local == "text"
		case xml.EndElement:
			inText = false
		case xml.CharData:
			if inText {
				texts[string(tok)] = true
			}
		}
	}
}

func TestPodLabel(t *testing.T) {
	for n, want := range map[int]string{
		1000: "1k", 5000: "5k", 20000: "20k", 100000: "100k", 2500: "2.5k",
		750: "750", 1001: "1001", 1000000: "1000k",
	} {
		if got := podLabel(n); got != want {
			t.Errorf("podLabel(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestLogTicks(t *testing.T) {
	for _, tc := range []struct {
		lo, hi float64
		want   []string // labels, "" for a minor tick
	}{
		{lo: 0.25, hi: 39, want: []string{
			"", "", "0.5", "", "", "", "", // 0.3 to 0.9
			"1", "2", "", "", "5", "", "", "", "",
			"10", "20", "", // 30
		}},
		{lo: 3.1, hi: 3.5, want: nil}, // no whole multiple of a power of ten between
		{lo: 0.01, hi: 0.06, want: []string{"0.01", "0.02", "", "", "0.05", ""}},
	} {
		var got []string
		for _, tick := range logTicks(tc.lo, tc.hi) {
			got = append(got, tick.Label)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("logTicks(%g, %g) labels (-want +got):\n%s", tc.lo, tc.hi, diff)
		}
	}
}

func TestRun(t *testing.T) {
	emptyResults := t.TempDir()
	noRows := filepath.Join(t.TempDir(), "scale-20261129T120000Z.txt")
	if err := os.WriteFile(noRows, []byte("# header only\nscale: pods=100000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		args       []string
		wantCode   int
		wantStderr string
	}{
		{name: "the fixture", args: []string{"-from", fixture}, wantCode: 0},
		{name: "newest of an empty results directory", args: []string{"-results", emptyResults}, wantCode: 1,
			wantStderr: "no scale result file (scale-<UTC>.txt) in " + emptyResults},
		{name: "a file that does not exist", args: []string{"-from", "testdata/absent.txt"}, wantCode: 1,
			wantStderr: "reading scale result: open testdata/absent.txt"},
		{name: "a file without rows", args: []string{"-from", noRows}, wantCode: 1, wantStderr: "no scale-row: lines"},
		{name: "an unknown flag", args: []string{"-plot"}, wantCode: 2, wantStderr: "flag provided but not defined"},
		{name: "an argument", args: []string{fixture}, wantCode: 2, wantStderr: "unexpected arguments"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := t.TempDir()
			var stdout, stderr bytes.Buffer
			code := run(append([]string{"-out", out}, tc.args...), &stdout, &stderr)
			if code != tc.wantCode || !strings.Contains(stderr.String(), tc.wantStderr) {
				t.Fatalf("run = %d, stderr %q; want %d, stderr with %q", code, stderr.String(), tc.wantCode, tc.wantStderr)
			}
			if code != 0 {
				return
			}
			want, err := renderFile(fixture)
			if err != nil {
				t.Fatal(err)
			}
			for i, fig := range figures {
				got, err := os.ReadFile(filepath.Join(out, fig.file))
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want[i]) {
					t.Errorf("%s differs from its render", fig.file)
				}
				if !strings.Contains(stdout.String(), "wrote "+filepath.Join(out, fig.file)+" from "+fixture) {
					t.Errorf("stdout %q does not name %s", stdout.String(), fig.file)
				}
			}
		})
	}
}

// TestCheckFigures runs the figures test's check on directories made for
// each case.
func TestCheckFigures(t *testing.T) {
	fixtureBytes, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := renderFile(fixture) // names scale-fixture.txt, not the result file
	if err != nil {
		t.Fatal(err)
	}
	const resultName = "scale-20261129T120000Z.txt"
	for _, tc := range []struct {
		name         string
		result       bool
		docs         func(results string) [][]byte // nil entries are not written
		wantNoResult bool
		wantProblems []string
	}{
		{name: "no result file, no pictures", wantNoResult: true},
		{name: "no result file, pictures left", docs: func(string) [][]byte { return fresh }, wantNoResult: true},
		{name: "a result file and no pictures", result: true, docs: func(string) [][]byte { return nil },
			wantProblems: []string{
				"scale-heap-per-pod.svg is missing, but " + resultName + " exists: run make plots",
				"scale-sync-time.svg is missing, but " + resultName + " exists: run make plots",
			}},
		{name: "pictures of another file", result: true, docs: func(string) [][]byte { return fresh },
			wantProblems: []string{
				"scale-heap-per-pod.svg is not what make plots draws from the newest scale result, " + resultName + ": run make plots",
				"scale-sync-time.svg is not what make plots draws from the newest scale result, " + resultName + ": run make plots",
			}},
		{name: "pictures made from it", result: true, docs: func(results string) [][]byte {
			svgs, err := renderFile(filepath.Join(results, resultName))
			if err != nil {
				t.Fatal(err)
			}
			return svgs
		}},
		{name: "one picture made from it, one missing", result: true, docs: func(results string) [][]byte {
			svgs, err := renderFile(filepath.Join(results, resultName))
			if err != nil {
				t.Fatal(err)
			}
			return svgs[:1]
		}, wantProblems: []string{"scale-sync-time.svg is missing, but " + resultName + " exists: run make plots"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			results, docs := t.TempDir(), t.TempDir()
			if tc.result {
				if err := os.WriteFile(filepath.Join(results, resultName), fixtureBytes, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if tc.docs != nil {
				for i, svg := range tc.docs(results) {
					if err := os.WriteFile(filepath.Join(docs, figures[i].file), svg, 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			problems, err := checkFigures(results, docs)
			if tc.wantNoResult {
				if !errors.Is(err, scaleresult.ErrNoResult) {
					t.Fatalf("checkFigures = %v, %v; want ErrNoResult", problems, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantProblems, problems); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}
