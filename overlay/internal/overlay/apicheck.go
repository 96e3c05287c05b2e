package overlay

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// exportedAPI returns the exported declarations of the package in dir
// (non-test files), keyed by name ("Type", "Func", "Type.Method"), each
// rendered without comments, bodies, constant values or unexported struct
// fields and interface methods. Two packages with equal maps offer the same
// API to importers.
func exportedAPI(dir string) (map[string]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	api := map[string]string{}
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		for _, decl := range f.Decls {
			if err := addDecl(api, fset, decl); err != nil {
				return nil, fmt.Errorf("%s: %w", n, err)
			}
		}
	}
	return api, nil
}

// addDecl records the exported parts of one top-level declaration.
func addDecl(api map[string]string, fset *token.FileSet, decl ast.Decl) error {
	switch d := decl.(type) {
	case *ast.FuncDecl:
		name := d.Name.Name
		if !ast.IsExported(name) {
			return nil
		}
		if d.Recv != nil {
			recv := receiverName(d.Recv.List[0].Type)
			if !ast.IsExported(recv) {
				return nil
			}
			name = recv + "." + name
		}
		fn := &ast.FuncDecl{Recv: d.Recv, Name: d.Name, Type: d.Type}
		return render(api, fset, name, fn)
	case *ast.GenDecl:
		for _, spec := range d.Specs {
			switch s := spec.(type) {
			case *ast.TypeSpec:
				if !ast.IsExported(s.Name.Name) {
					continue
				}
				ts := *s
				ts.Doc, ts.Comment = nil, nil
				ts.Type = exportedOnly(s.Type)
				if err := render(api, fset, s.Name.Name, &ts); err != nil {
					return err
				}
				api[s.Name.Name] = "type " + api[s.Name.Name]
			case *ast.ValueSpec:
				for _, n := range s.Names {
					if !ast.IsExported(n.Name) {
						continue
					}
					kind := d.Tok.String() + " "
					if s.Type == nil {
						api[n.Name] = kind + n.Name
						continue
					}
					if err := render(api, fset, n.Name, s.Type); err != nil {
						return err
					}
					api[n.Name] = kind + n.Name + " " + api[n.Name]
				}
			}
		}
	}
	return nil
}

// receiverName is the base type name of a method receiver.
func receiverName(expr ast.Expr) string {
	for {
		switch t := expr.(type) {
		case *ast.StarExpr:
			expr = t.X
		case *ast.IndexExpr:
			expr = t.X
		case *ast.IndexListExpr:
			expr = t.X
		case *ast.Ident:
			return t.Name
		default:
			return ""
		}
	}
}

// exportedOnly drops the unexported fields of a struct type and the
// unexported methods of an interface type; other types are returned as
// they are.
func exportedOnly(expr ast.Expr) ast.Expr {
	switch t := expr.(type) {
	case *ast.StructType:
		return &ast.StructType{Fields: exportedFields(t.Fields, true)}
	case *ast.InterfaceType:
		return &ast.InterfaceType{Methods: exportedFields(t.Methods, false)}
	}
	return expr
}

// exportedFields keeps the exported names of a field list, and embedded
// entries (embedded struct fields only if the embedded type is exported).
func exportedFields(list *ast.FieldList, isStruct bool) *ast.FieldList {
	out := &ast.FieldList{}
	for _, f := range list.List {
		if len(f.Names) == 0 {
			if isStruct && !ast.IsExported(receiverName(embeddedName(f.Type))) {
				continue
			}
			out.List = append(out.List, &ast.Field{Type: f.Type, Tag: f.Tag})
			continue
		}
		var names []*ast.Ident
		for _, n := range f.Names {
			if ast.IsExported(n.Name) {
				names = append(names, n)
			}
		}
		if len(names) > 0 {
			out.List = append(out.List, &ast.Field{Names: names, Type: f.Type, Tag: f.Tag})
		}
	}
	return out
}

// embeddedName strips a package qualifier from an embedded field's type.
func embeddedName(expr ast.Expr) ast.Expr {
	if sel, ok := expr.(*ast.SelectorExpr); ok {
		return sel.Sel
	}
	if star, ok := expr.(*ast.StarExpr); ok {
		return embeddedName(star.X)
	}
	return expr
}

// render prints node on one normalised line under key.
func render(api map[string]string, fset *token.FileSet, key string, node any) error {
	var b bytes.Buffer
	if err := printer.Fprint(&b, fset, node); err != nil {
		return fmt.Errorf("printing %s: %w", key, err)
	}
	api[key] = strings.Join(strings.Fields(b.String()), " ")
	return nil
}

// diffAPI lists how got differs from want, one line per name, sorted.
func diffAPI(want, got map[string]string) []string {
	var out []string
	for name, w := range want {
		g, ok := got[name]
		switch {
		case !ok:
			out = append(out, "missing: "+w)
		case g != w:
			out = append(out, fmt.Sprintf("changed: %s\n    was: %s", g, w))
		}
	}
	for name, g := range got {
		if _, ok := want[name]; !ok {
			out = append(out, "added: "+g)
		}
	}
	sort.Strings(out)
	return out
}
