package main

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/kcache/cache/bench/internal/scaleresult"
)

// The repository's result files, figures and README, from this package.
const (
	repoResults = "../../results"
	repoDocs    = "../../../docs"
	repoReadme  = "../../../README.md"
)

// TestFigures_MatchNewestScaleResult holds docs/scale-*.svg to the newest
// bench/results/scale-<UTC>.txt: each must be byte for byte what `make
// plots` draws from it. It skips only while no scale result file exists.
func TestFigures_MatchNewestScaleResult(t *testing.T) {
	problems, err := checkFigures(repoResults, repoDocs)
	if errors.Is(err, scaleresult.ErrNoResult) {
		t.Skip("no bench/results/scale-<UTC>.txt yet (make bench-scale writes one): docs/scale-*.svg are held to the newest once one exists")
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error("docs/" + p)
	}
}

// TestReadme_ShowsHeapCurve checks that README.md shows the heap picture.
func TestReadme_ShowsHeapCurve(t *testing.T) {
	readme, err := os.ReadFile(repoReadme)
	if err != nil {
		t.Fatal(err)
	}
	if want := "](docs/" + figures[0].file + ")"; !strings.Contains(string(readme), want) {
		t.Errorf("README.md has no image line ending in %q", want)
	}
}
