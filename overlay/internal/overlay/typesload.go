package overlay

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// exportIndex maps import paths to the compiler's export data files, as
// `go list -export -deps` reports them for one module.
type exportIndex map[string]string

// listExports compiles pkg and its dependencies in the module at dir and
// returns where their export data is. With tolerant set, packages that do
// not compile (pkg itself, typically) are left out instead of failing.
func listExports(ctx context.Context, g goTool, dir, pkg string, tolerant bool) (exportIndex, error) {
	args := []string{"list", "-export", "-deps", "-json=ImportPath,Export,Error"}
	if tolerant {
		args = append(args, "-e")
	}
	out, err := g.run(ctx, dir, append(args, pkg)...)
	if err != nil {
		return nil, fmt.Errorf("compiling %s: %w", pkg, err)
	}
	idx := exportIndex{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath, Export string
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("reading go list output for %s: %w", pkg, err)
		}
		if p.Export != "" {
			idx[p.ImportPath] = p.Export
		}
	}
	return idx, nil
}

// importer returns a types importer reading the export data in idx; a
// nil idx imports the standard library only (tests).
func (idx exportIndex) importer(fset *token.FileSet) types.Importer {
	if idx == nil {
		return importer.ForCompiler(fset, "source", nil)
	}
	return importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		f, ok := idx[path]
		if !ok {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	})
}

// loadCompiled returns the compiled package pkg of the module at dir.
func loadCompiled(ctx context.Context, g goTool, dir, pkg string) (*types.Package, error) {
	idx, err := listExports(ctx, g, dir, pkg, false)
	if err != nil {
		return nil, err
	}
	return idx.importer(token.NewFileSet()).Import(pkg)
}

// checkedPackage is a package parsed from source and type-checked as far
// as it goes: errors are collected, not fatal, so an overlay that does not
// compile yet can still be adapted.
type checkedPackage struct {
	fset   *token.FileSet
	files  map[string]*ast.File // by file name
	pkg    *types.Package
	info   *types.Info
	errors []error
}

// checkSource parses the non-test Go files of dir and type-checks them as
// package path, importing dependencies through idx.
func checkSource(dir, path string, idx exportIndex) (*checkedPackage, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	cp := &checkedPackage{fset: token.NewFileSet(), files: map[string]*ast.File{}}
	var names []string
	for _, e := range entries {
		if n := e.Name(); !e.IsDir() && strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	var list []*ast.File
	for _, n := range names {
		f, err := parser.ParseFile(cp.fset, filepath.Join(dir, n), nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		cp.files[n] = f
		list = append(list, f)
	}
	cp.info = &types.Info{
		Defs:       map[*ast.Ident]types.Object{},
		Uses:       map[*ast.Ident]types.Object{},
		Selections: map[*ast.SelectorExpr]*types.Selection{},
		Types:      map[ast.Expr]types.TypeAndValue{},
	}
	conf := types.Config{Importer: idx.importer(cp.fset), Error: func(err error) { cp.errors = append(cp.errors, err) }}
	cp.pkg, _ = conf.Check(path, cp.fset, list, cp.info)
	return cp, nil
}

// loadReleasePackage returns the compiled package pkg of client-go
// release cg. A release that requires a module version the proxy does not
// serve (proxyGaps) cannot be built in the module cache, where it lies;
// it is then built in a scratch module that requires it and pins the gap.
func loadReleasePackage(ctx context.Context, g goTool, cg moduleInfo, pkg string) (*types.Package, error) {
	gomod, err := os.ReadFile(filepath.Join(cg.Dir, "go.mod"))
	if err != nil {
		return nil, err
	}
	gaps, err := gapsIn(gomod)
	if err != nil || len(gaps) == 0 {
		if err != nil {
			return nil, err
		}
		return loadCompiled(ctx, g, cg.Dir, pkg)
	}
	dir, err := os.MkdirTemp("", "kcache-overlay-release-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	text := fmt.Sprintf("module kcache.invalid/release\n\ngo %s\n\nrequire %s %s\n", goDirective(gomod), ClientGoModule, cg.Version)
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(text), 0o644); err != nil {
		return nil, err
	}
	if _, err := pinGaps(ctx, g, dir, gaps); err != nil {
		return nil, err
	}
	// -mod=mod lets the go command complete the scratch go.mod and go.sum.
	g.env = append(slices.Clip(g.env), "GOFLAGS="+strings.TrimSpace(os.Getenv("GOFLAGS")+" -mod=mod"))
	return loadCompiled(ctx, g, dir, pkg)
}
