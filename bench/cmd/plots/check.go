package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/kcache/cache/bench/internal/scaleresult"
)

// checkFigures compares the figures under docsDir with what `make plots`
// draws from the newest scale result file in resultsDir, and returns what
// differs. With no scale result file at all there is nothing to compare:
// it returns an error wrapping scaleresult.ErrNoResult.
func checkFigures(resultsDir, docsDir string) ([]string, error) {
	src, err := scaleresult.Newest(resultsDir)
	if err != nil {
		return nil, err
	}
	svgs, err := renderFile(src)
	if err != nil {
		return nil, err
	}
	var problems []string
	for i, fig := range figures {
		committed, err := os.ReadFile(filepath.Join(docsDir, fig.file))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			problems = append(problems, fmt.Sprintf("%s is missing, but %s exists: run make plots", fig.file, filepath.Base(src)))
		case err != nil:
			return nil, fmt.Errorf("reading figure: %w", err)
		case !bytes.Equal(committed, svgs[i]):
			problems = append(problems, fmt.Sprintf("%s is not what make plots draws from the newest scale result, %s: run make plots", fig.file, filepath.Base(src)))
		}
	}
	return problems, nil
}
