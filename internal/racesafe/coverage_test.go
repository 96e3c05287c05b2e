package racesafe

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const selfPath = "github.com/kcache/cache/internal/racesafe"

// TestEverySynctestPackageImportsRacesafe walks the repository (every
// module in it) and fails for a directory whose test files use
// testing/synctest while none of its files import this package, since
// such a test binary can crash under -race on Go 1.26.
func TestEverySynctestPackageImportsRacesafe(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	uses, guarded := scanImports(t, root)
	if len(uses) == 0 {
		t.Fatalf("no test file under %s imports testing/synctest; the walk is broken", root)
	}
	var missing []string
	for dir := range uses {
		if !guarded[dir] {
			missing = append(missing, dir)
		}
	}
	sort.Strings(missing)
	for _, dir := range missing {
		t.Errorf("%s: tests use testing/synctest but no file imports %s", dir, selfPath)
	}
}

// scanImports returns the directories with a test file importing
// testing/synctest, and those with any Go file importing this package.
func scanImports(t *testing.T, root string) (uses, guarded map[string]bool) {
	t.Helper()
	uses, guarded = map[string]bool{}, map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && skipDir(d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return nil // not ours to judge: another test reports broken Go files
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			switch {
			case p == "testing/synctest" && strings.HasSuffix(path, "_test.go"):
				uses[rel] = true
			case p == selfPath:
				guarded[rel] = true
			}
		}
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatalf("walking %s: %v", root, err)
	}
	return uses, guarded
}

// skipDir names directories that hold no code of ours: hidden ones (caches,
// work trees of benchmarks), testdata and vendored trees.
func skipDir(name string) bool {
	return strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor" || name == "node_modules"
}
