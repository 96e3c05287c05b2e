// Command plots draws the pictures of a `make bench-scale` result file:
// heap per cached pod and initial sync time against pod count, one curve
// per variant (client-go, kcache, kcache-noshare), from the file's
// list=stream rows, as SVG files under docs/ (gonum.org/v1/plot).
//
//	go run ./cmd/plots                                     # the newest results/scale-*.txt, into ../docs
//	go run ./cmd/plots -from results/scale-20261129T120000Z.txt -out /tmp
//
// The same file gives the same bytes, so a test can hold the committed
// pictures to the newest result file.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/kcache/cache/bench/internal/scaleresult"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the command with its arguments and outputs; it returns the exit
// code.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("plots", flag.ContinueOnError)
	fs.SetOutput(stderr)
	from := fs.String("from", "", "the scale result file to draw (default: the newest scale-<UTC>.txt in -results)")
	results := fs.String("results", "results", "the directory of the result files")
	out := fs.String("out", filepath.Join("..", "docs"), "the directory the SVG files are written to")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "plots: unexpected arguments %q\n", fs.Args())
		return 2
	}
	src := *from
	if src == "" {
		newest, err := scaleresult.Newest(*results)
		if err != nil {
			fmt.Fprintf(stderr, "plots: %v (make bench-scale writes one; -from names another file)\n", err)
			return 1
		}
		src = newest
	}
	written, err := writeFigures(src, *out)
	for _, path := range written {
		fmt.Fprintf(stdout, "wrote %s from %s\n", path, src)
	}
	if err != nil {
		fmt.Fprintf(stderr, "plots: %v\n", err)
		return 1
	}
	return 0
}

// writeFigures draws every figure from the result file src into dir and
// returns the paths written.
func writeFigures(src, dir string) ([]string, error) {
	svgs, err := renderFile(src)
	if err != nil {
		return nil, err
	}
	var written []string
	for i, fig := range figures {
		path := filepath.Join(dir, fig.file)
		if err := os.WriteFile(path, svgs[i], 0o644); err != nil {
			return written, fmt.Errorf("writing figure: %w", err)
		}
		written = append(written, path)
	}
	return written, nil
}

// renderFile draws every figure from the result file src, in the order of
// figures. The pictures name src by its base name only, so that where the
// file was read from does not change them.
func renderFile(src string) ([][]byte, error) {
	f, err := os.Open(src)
	if err != nil {
		return nil, fmt.Errorf("reading scale result: %w", err)
	}
	defer f.Close()
	rows, err := scaleresult.Parse(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", src, err)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%s: %w", src, errNoRows)
	}
	var svgs [][]byte
	for _, fig := range figures {
		svg, err := render(fig, rows, filepath.Base(src))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", src, err)
		}
		svgs = append(svgs, svg)
	}
	return svgs, nil
}

var errNoRows = errors.New("no " + scaleresult.RowPrefix + " lines")
