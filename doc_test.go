package cache

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// docLayers reads the layer map of doc.go's "# Layers" section: one entry
// per layer, in the order listed, each with the files it names. A layer's
// line starts with its name; a line that starts with spaces carries on the
// layer above it.
func docLayers(t *testing.T) (names []string, files [][]string) {
	t.Helper()
	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatalf("reading doc.go: %v", err)
	}
	lines := strings.Split(string(src), "\n")
	start := slices.Index(lines, "// # Layers")
	if start < 0 {
		t.Fatal(`doc.go has no "# Layers" section`)
	}
	fileName := regexp.MustCompile(`\b[a-z0-9_]+\.go\b`)
	layerName := regexp.MustCompile(`^//\t([a-z][a-z, ]*?)  +`)
	inMap := false
	for _, line := range lines[start+1:] {
		if !strings.HasPrefix(line, "//\t") {
			if inMap {
				break // the map ends at its first line that is not indented
			}
			continue
		}
		inMap = true
		if m := layerName.FindStringSubmatch(line); m != nil {
			names = append(names, m[1])
			files = append(files, nil)
			line = line[len(m[0]):]
		}
		if len(files) == 0 {
			t.Fatalf("doc.go's layer map starts without a layer name: %q", line)
		}
		files[len(files)-1] = append(files[len(files)-1], fileName.FindAllString(line, -1)...)
	}
	return names, files
}

// rootFiles returns the package's non-test Go files, sorted.
func rootFiles(t *testing.T) []string {
	t.Helper()
	all, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatalf("listing the package's files: %v", err)
	}
	var out []string
	for _, f := range all {
		if !strings.HasSuffix(f, "_test.go") {
			out = append(out, f)
		}
	}
	sort.Strings(out)
	return out
}

// TestDocLayers_ListEveryFileOnce holds doc.go's layer map to the package:
// each non-test file is listed exactly once, and the map lists no file that
// does not exist.
func TestDocLayers_ListEveryFileOnce(t *testing.T) {
	_, layers := docLayers(t)
	listed := map[string]int{}
	for _, fs := range layers {
		for _, f := range fs {
			listed[f]++
		}
	}
	for _, f := range rootFiles(t) {
		switch n := listed[f]; n {
		case 0:
			t.Errorf("%s is not in doc.go's layer map", f)
		case 1:
		default:
			t.Errorf("%s is listed %d times in doc.go's layer map", f, n)
		}
		delete(listed, f)
	}
	for f := range listed {
		t.Errorf("doc.go's layer map lists %s, which is not a file of the package", f)
	}
}

// TestDocLayers_ReferencesRunDown holds the package's files to doc.go's
// layer map: a file uses only names (types, functions, variables,
// constants, methods) declared in its own layer or in a layer listed
// before it. The package is type-checked without its imports, which are
// stood in for by empty packages: only the package's own names matter here,
// and a name reached only through a value of an imported type is not seen.
func TestDocLayers_ReferencesRunDown(t *testing.T) {
	names, layers := docLayers(t)
	layerOf := map[string]int{}
	for i, fs := range layers {
		for _, f := range fs {
			layerOf[f] = i
		}
	}
	refs, err := crossFileReferences(rootFiles(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range refs {
		from, okFrom := layerOf[r.from]
		to, okTo := layerOf[r.to]
		if !okFrom || !okTo {
			continue // TestDocLayers_ListEveryFileOnce reports these
		}
		if to > from {
			t.Errorf("%s (%s) uses %s, declared in %s (%s), a layer listed after its own", r.from, names[from], r.name, r.to, names[to])
		}
	}
}

// reference is one use, in file from, of a name declared in file to.
type reference struct{ from, to, name string }

// crossFileReferences type-checks files as one package and returns, once
// per (from, to, name), each use of a package name in a file other than
// the one declaring it.
func crossFileReferences(files []string) ([]reference, error) {
	fset := token.NewFileSet()
	var parsed []*ast.File
	for _, f := range files {
		af, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, fmt.Errorf("parsing %s: %w", f, err)
		}
		parsed = append(parsed, af)
	}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
	conf := types.Config{
		Importer: emptyImporter{},
		Error:    func(error) {}, // the stand-in imports leave errors; the package's own names still resolve
	}
	pkg, _ := conf.Check("github.com/kcache/cache", fset, parsed, info)
	seen := map[reference]bool{}
	var out []reference
	for id, obj := range info.Uses {
		if obj.Pkg() != pkg || !obj.Pos().IsValid() || !declaredAtPackageLevel(obj) {
			continue
		}
		r := reference{
			from: filepath.Base(fset.Position(id.Pos()).Filename),
			to:   filepath.Base(fset.Position(obj.Pos()).Filename),
			name: obj.Name(),
		}
		if r.from != r.to && !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		return a.from+"\x00"+a.to+"\x00"+a.name < b.from+"\x00"+b.to+"\x00"+b.name
	})
	return out, nil
}

// declaredAtPackageLevel reports whether obj is a package-level name or a
// method: what a file can refer to in another file.
func declaredAtPackageLevel(obj types.Object) bool {
	if obj.Parent() != nil && obj.Parent() == obj.Pkg().Scope() {
		return true
	}
	if fn, ok := obj.(*types.Func); ok {
		return fn.Signature().Recv() != nil
	}
	return false
}

// emptyImporter stands in an empty package for every import.
type emptyImporter struct{}

func (emptyImporter) Import(path string) (*types.Package, error) {
	p := types.NewPackage(path, filepath.Base(path))
	p.MarkComplete()
	return p, nil
}

// TestDocLayers_CrossFileReferencesFound guards the layer test itself: it
// finds, in this package, references that are known to cross files, so an
// analysis that silently found nothing would fail here.
func TestDocLayers_CrossFileReferencesFound(t *testing.T) {
	refs, err := crossFileReferences(rootFiles(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []reference{
		{from: "store.go", to: "keys.go", name: "KeyFunc"},
		{from: "shared_informer.go", to: "processor.go", name: "distribute"},
	} {
		if !slices.Contains(refs, want) {
			t.Errorf("the references found miss %+v", want)
		}
	}
}
