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
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
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

// goFileName finds the Go file names a comment cites: a name ending in
// .go, with or without a folder before it. A name followed by another
// extension (shard_apimachinery_test.go.in) is not a Go file's.
var goFileName = regexp.MustCompile(`[A-Za-z0-9_./-]*[A-Za-z0-9_]\.go\b(\.[A-Za-z0-9]+)?`)

// citedGoFiles returns, for each Go file of the repository (every
// module's, testdata, vendored and hidden folders left out), the Go file
// names its comments cite that name no file: a name with a folder is
// looked up from the citing file's folder, its module's root and the
// repository's root; a bare name in the citing file's folder and in the
// root package's (kcache's cache package, which other packages' comments
// cite by its files' names). A comment that says the file is generated
// ("generated", "generates") may name a file that is not in the tree.
func citedGoFiles(t *testing.T, repo string) (stale []string, cited int) {
	t.Helper()
	fset := token.NewFileSet()
	err := filepath.WalkDir(repo, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != repo && (name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return fmt.Errorf("parsing %s: %w", path, err)
		}
		dir, mod := filepath.Dir(path), moduleRoot(repo, filepath.Dir(path))
		for _, cg := range f.Comments {
			text := cg.Text()
			generated := strings.Contains(strings.ToLower(text), "generat")
			for _, m := range goFileName.FindAllStringSubmatch(text, -1) {
				if m[1] != "" {
					continue // another extension follows
				}
				name := strings.TrimPrefix(m[0], "./")
				cited++
				var places []string
				if strings.Contains(name, "/") {
					places = []string{filepath.Join(dir, name), filepath.Join(mod, name), filepath.Join(repo, name)}
				} else {
					places = []string{filepath.Join(dir, name), filepath.Join(repo, name)}
				}
				if generated || slices.ContainsFunc(places, fileExists) {
					continue
				}
				stale = append(stale, fmt.Sprintf("%s:%d names %s, which is no file", path, fset.Position(cg.Pos()).Line, name))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return stale, cited
}

// moduleRoot returns the nearest folder from dir up to repo that holds a
// go.mod.
func moduleRoot(repo, dir string) string {
	for d := dir; ; d = filepath.Dir(d) {
		if fileExists(filepath.Join(d, "go.mod")) || d == repo || d == filepath.Dir(d) {
			return d
		}
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// TestComments_CiteFilesThatExist holds the comments of every package of
// the repository to the tree: each Go file a comment names exists.
func TestComments_CiteFilesThatExist(t *testing.T) {
	stale, cited := citedGoFiles(t, ".")
	for _, s := range stale {
		t.Error(s)
	}
	if cited < 100 {
		t.Errorf("only %d file names found in comments: the search is broken", cited)
	}
}

// TestComments_CitedFilesFound guards the comment test itself: a comment
// naming a file that is gone is reported, a generated one is not.
func TestComments_CitedFilesFound(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":        "module example.com/x\n",
		"a.go":          "package x\n\n// See b.go and gone.go, and sub/c.go.\nvar A int\n",
		"b.go":          "package x\n",
		"sub/c.go":      "// Package sub is generated into out.go.\npackage sub\n",
		"sub/d.go":      "package sub\n\n// a.go is the root's; lost.go is not; x.go.in is no Go file.\nvar D int\n",
		"testdata/e.go": "package e\n\n// missing.go, in testdata, is not read.\n",
	}
	for name, text := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	stale, _ := citedGoFiles(t, dir)
	var names []string
	for _, s := range stale {
		names = append(names, s[strings.LastIndex(s, " names ")+len(" names "):strings.Index(s, ", which")])
	}
	if diff := cmp.Diff([]string{"gone.go", "lost.go"}, names); diff != "" {
		t.Errorf("stale names (-want +got):\n%s", diff)
	}
}

// TestDocLayers_EngineBehindOneDoor holds the value-sharing engine to its
// place: internal/dedup imports no package of this module, and
// dedup_switch.go is the only file of this package that imports it.
func TestDocLayers_EngineBehindOneDoor(t *testing.T) {
	const engine = "github.com/kcache/cache/internal/dedup"
	importers := map[string][]string{}
	for _, dir := range []string{".", filepath.Join("internal", "dedup")} {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
				continue
			}
			path := filepath.Join(dir, e.Name())
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				importers[p] = append(importers[p], path)
				if dir != "." && strings.HasPrefix(p, "github.com/kcache/cache") {
					t.Errorf("%s imports %s: the engine must not import the module's packages", path, p)
				}
			}
		}
	}
	if diff := cmp.Diff([]string{"dedup_switch.go"}, importers[engine]); diff != "" {
		t.Errorf("files of the package importing %s (-want +got):\n%s", engine, diff)
	}
}
