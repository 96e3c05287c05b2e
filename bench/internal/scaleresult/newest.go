package scaleresult

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
)

// ErrNoResult says a results directory holds no scale result file.
var ErrNoResult = errors.New("no scale result file")

// fileName matches the name of a scale result file, scale-<UTC>.txt; the
// UTC date-time makes the newest file the greatest name.
var fileName = regexp.MustCompile(`^scale-\d{8}T\d{6}Z\.txt$`)

// Newest returns the path of the newest scale result file in dir, or an
// error wrapping ErrNoResult when dir has none.
func Newest(dir string) (string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", fmt.Errorf("listing scale results: %w", err)
	}
	newest := ""
	for _, e := range entries {
		if e.Type().IsRegular() && fileName.MatchString(e.Name()) && e.Name() > newest {
			newest = e.Name()
		}
	}
	if newest == "" {
		return "", fmt.Errorf("%w (scale-<UTC>.txt) in %s", ErrNoResult, dir)
	}
	return filepath.Join(dir, newest), nil
}
