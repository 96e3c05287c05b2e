package overlay

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/printer"
	"go/token"
	"go/types"
	"sort"
	"strings"
)

// optionalHelper writes the function that replaces calls of a removed
// interface method: it returns x's method if x has it, else a function
// returning zero values, which is what the release's interface could
// give (it has no such method to call).
func optionalHelper(fset *token.FileSet, name string, method *ast.Field) (string, error) {
	ft := method.Type.(*ast.FuncType)
	sig, err := nodeString(fset, ft)
	if err != nil {
		return "", err
	}
	zero := &ast.FuncType{Params: renamedFields(ft.Params, "_"), Results: renamedFields(ft.Results, "r")}
	zeroSig, err := nodeString(fset, zero)
	if err != nil {
		return "", err
	}
	m := method.Names[0].Name
	params := strings.TrimPrefix(sig, "func")
	return fmt.Sprintf(`
// %[1]s returns x's %[2]s method when x has one (this
// client-go release's interface does not require it), or the library's own
// type's %[2]s, hidden as %[5]s%[2]s; else a function doing nothing and
// returning zero values.
func %[1]s(x any) %[3]s {
	if v, ok := x.(interface{ %[2]s%[4]s }); ok {
		return v.%[2]s
	}
	if v, ok := x.(interface{ %[5]s%[2]s%[4]s }); ok {
		return v.%[5]s%[2]s
	}
	return %[6]s { return }
}
`, name, m, sig, params, hiddenPrefix, zeroSig), nil
}

// renamedFields copies a parameter or result list with every entry named
// prefix (blank) or prefix plus its index.
func renamedFields(list *ast.FieldList, prefix string) *ast.FieldList {
	if list == nil {
		return nil
	}
	out := &ast.FieldList{}
	i := 0
	for _, f := range list.List {
		n := max(len(f.Names), 1)
		var names []*ast.Ident
		for range n {
			name := prefix
			if prefix != "_" {
				name = fmt.Sprintf("%s%d", prefix, i)
			}
			names = append(names, ast.NewIdent(name))
			i++
		}
		out.List = append(out.List, &ast.Field{Names: names, Type: f.Type})
	}
	return out
}

// reorderedStruct prints a struct type with its exported fields in order
// (as the release declares them) followed by its other fields, without
// comments.
func reorderedStruct(fset *token.FileSet, t *ast.StructType, order []string) string {
	rank := func(f *ast.Field) int {
		for i, n := range order {
			if len(f.Names) == 1 && f.Names[0].Name == n {
				return i
			}
		}
		return len(order)
	}
	fields := append([]*ast.Field{}, t.Fields.List...)
	sort.SliceStable(fields, func(i, j int) bool { return rank(fields[i]) < rank(fields[j]) })
	var b strings.Builder
	b.WriteString("struct {\n")
	for _, f := range fields {
		plain := &ast.Field{Names: f.Names, Type: f.Type, Tag: f.Tag}
		s, _ := nodeString(fset, &ast.StructType{Fields: &ast.FieldList{List: []*ast.Field{plain}}})
		s = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(s), "struct {"), "}")
		b.WriteString("\t" + strings.TrimSpace(s) + "\n")
	}
	b.WriteString("}")
	return b.String()
}

// nodeString prints an AST node without comments.
func nodeString(fset *token.FileSet, n ast.Node) (string, error) {
	var b bytes.Buffer
	if err := printer.Fprint(&b, fset, n); err != nil {
		return "", err
	}
	return b.String(), nil
}

// baseName is the file name of a path.
func baseName(p string) string {
	if i := strings.LastIndexAny(p, `/\`); i >= 0 {
		return p[i+1:]
	}
	return p
}

// origin is the generic declaration behind an instantiated field or method.
func origin(obj types.Object) types.Object {
	switch o := obj.(type) {
	case *types.Func:
		return o.Origin()
	case *types.Var:
		return o.Origin()
	}
	return obj
}
