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

// textEdit replaces src[start:end] of one file by text.
type textEdit struct {
	start, end int
	text       string
}

// fileEdits gathers the edits of one file; removed ranges swallow every
// other edit inside them.
type fileEdits struct {
	edits   []textEdit
	removed []textEdit
}

// applyPlan rewrites k's files by p and returns the new sources of the
// files it changed, by file name (not yet gofmt'ed).
func applyPlan(k *checkedPackage, p *adaptPlan, src map[string][]byte) (map[string][]byte, error) {
	byFile := map[string]*fileEdits{}
	at := func(pos token.Pos) (*fileEdits, int) {
		position := k.fset.Position(pos)
		name := baseName(position.Filename)
		if byFile[name] == nil {
			byFile[name] = &fileEdits{}
		}
		return byFile[name], position.Offset
	}
	offset := func(pos token.Pos) int { return k.fset.Position(pos).Offset }

	mutate := p.renameIdents(k, at)
	for sel, s := range k.info.Selections {
		m, ok := s.Obj().(*types.Func)
		if !ok {
			continue
		}
		helper, ok := p.drop[m.Origin()]
		if !ok {
			continue
		}
		fe, start := at(sel.X.Pos())
		fe.edits = append(fe.edits, textEdit{start, start, helper + "("},
			textEdit{offset(sel.X.End()), offset(sel.End()), ")"})
	}
	// Ranges first, while the AST still has the original names (an
	// ident's End depends on its name); then the new names; then the text
	// printed from the AST.
	var later []func() error
	for _, f := range k.files {
		p.dropAssertions(k, f, at)
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			obj, _ := k.info.Defs[ts.Name].(*types.TypeName)
			if obj == nil {
				return false
			}
			switch t := ts.Type.(type) {
			case *ast.InterfaceType:
				later = append(later, p.dropMethods(k, t, at)...)
			case *ast.StructType:
				if order, ok := p.reorder[obj]; ok {
					fe, start := at(t.Pos())
					i := len(fe.removed)
					fe.removed = append(fe.removed, textEdit{start, offset(t.End()), ""})
					later = append(later, func() error {
						fe.removed[i].text = reorderedStruct(k.fset, t, order)
						return nil
					})
				}
			}
			return false
		})
	}
	mutate()
	for _, f := range later {
		if err := f(); err != nil {
			return nil, err
		}
	}
	helpers := map[string][]string{}
	for _, h := range p.helpers {
		helpers[h.file] = append(helpers[h.file], h.text)
	}
	out := map[string][]byte{}
	for name, fe := range byFile {
		data, ok := src[name]
		if !ok {
			return nil, fmt.Errorf("adapting %s: no source", name)
		}
		text := fe.apply(data)
		if h := helpers[name]; len(h) > 0 {
			text = append(text, strings.Join(h, "\n")...)
		}
		out[name] = text
	}
	for name, h := range helpers {
		if _, done := out[name]; !done && len(h) > 0 {
			out[name] = append(append([]byte{}, src[name]...), strings.Join(h, "\n")...)
		}
	}
	return out, nil
}

// dropAssertions removes the compile-time checks "var _ I = value" whose
// interface I is hidden, or whose value lost a method I asks for: the
// exported type checked no longer has all of I's methods (this release's
// does not either), and nothing needs it to.
func (p *adaptPlan) dropAssertions(k *checkedPackage, f *ast.File, at func(token.Pos) (*fileEdits, int)) {
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.VAR {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			id, ok := vs.Type.(*ast.Ident)
			if !ok || len(vs.Names) != 1 || vs.Names[0].Name != "_" {
				continue
			}
			tn, ok := k.info.Uses[id].(*types.TypeName)
			if !ok || !types.IsInterface(tn.Type()) || len(vs.Values) != 1 {
				continue
			}
			if _, hidden := p.hide[tn]; !hidden && !p.losesMethodOf(k, vs.Values[0], tn) {
				continue
			}
			start, end := vs.Pos(), vs.End()
			if len(gd.Specs) == 1 {
				start, end = gd.Pos(), gd.End()
			}
			if gd.Doc != nil && len(gd.Specs) == 1 {
				start = gd.Doc.Pos()
			}
			fe, s := at(start)
			fe.removed = append(fe.removed, textEdit{s, k.fset.Position(end).Offset, ""})
		}
	}
}

// losesMethodOf reports whether the type of value has a hidden method
// that interface iface asks for, so it no longer implements iface.
func (p *adaptPlan) losesMethodOf(k *checkedPackage, value ast.Expr, iface *types.TypeName) bool {
	tv, ok := k.info.Types[value]
	if !ok {
		return false
	}
	ms := types.NewMethodSet(iface.Type())
	for i := 0; i < ms.Len(); i++ {
		m := ms.At(i).Obj()
		obj, _, _ := types.LookupFieldOrMethod(tv.Type, true, m.Pkg(), m.Name())
		if _, hidden := p.hide[obj]; obj != nil && hidden {
			return true
		}
	}
	return false
}

// baseName is the file name of a path.
func baseName(p string) string {
	if i := strings.LastIndexAny(p, `/\`); i >= 0 {
		return p[i+1:]
	}
	return p
}

// renameIdents records the edits renaming every definition and use of a
// hidden object, and returns the function that renames them in the AST
// too (so printed nodes show the new names).
func (p *adaptPlan) renameIdents(k *checkedPackage, at func(token.Pos) (*fileEdits, int)) (mutate func()) {
	renamed := map[*ast.Ident]string{}
	rename := func(id *ast.Ident, obj types.Object) {
		if obj == nil {
			return
		}
		name, ok := p.hide[origin(obj)]
		if !ok {
			return
		}
		fe, start := at(id.Pos())
		fe.edits = append(fe.edits, textEdit{start, start + len(id.Name), name})
		renamed[id] = name
	}
	for id, obj := range k.info.Defs {
		rename(id, obj)
	}
	for id, obj := range k.info.Uses {
		rename(id, obj)
	}
	return func() {
		for id, name := range renamed {
			id.Name = name
		}
	}
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

// dropMethods removes the planned methods from an interface type and
// returns the functions that, once the AST carries the new names, write
// the helpers their callers now go through (into p.helpers).
func (p *adaptPlan) dropMethods(k *checkedPackage, t *ast.InterfaceType, at func(token.Pos) (*fileEdits, int)) []func() error {
	var later []func() error
	for _, field := range t.Methods.List {
		if len(field.Names) != 1 {
			continue
		}
		m, _ := k.info.Defs[field.Names[0]].(*types.Func)
		helper, ok := p.drop[m]
		if m == nil || !ok {
			continue
		}
		start := field.Pos()
		if field.Doc != nil {
			start = field.Doc.Pos()
		}
		end := field.End()
		if field.Comment != nil {
			end = field.Comment.End()
		}
		fe, s := at(start)
		fe.removed = append(fe.removed, textEdit{s, k.fset.Position(end).Offset, ""})
		if !m.Exported() {
			continue // a method sealing the interface: nothing calls it
		}
		file := baseName(k.fset.Position(start).Filename)
		later = append(later, func() error {
			h, err := optionalHelper(k.fset, helper, field)
			if err != nil {
				return err
			}
			p.helpers = append(p.helpers, generatedHelper{file: file, name: helper, text: h})
			return nil
		})
	}
	return later
}

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
	return fmt.Sprintf(`
// %s returns x's %s method when x has one (this
// client-go release's interface does not require it), else a function
// doing nothing and returning zero values.
func %s(x any) %s {
	if v, ok := x.(interface{ %s%s }); ok {
		return v.%s
	}
	return %s { return }
}
`, name, m, name, sig, m, strings.TrimPrefix(sig, "func"), m, zeroSig), nil
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

// apply returns data with the edits made, dropping edits inside removed
// ranges.
func (fe *fileEdits) apply(data []byte) []byte {
	all := append([]textEdit{}, fe.removed...)
	for _, e := range fe.edits {
		inside := false
		for _, r := range fe.removed {
			if e.start >= r.start && e.end <= r.end {
				inside = true
				break
			}
		}
		if !inside {
			all = append(all, e)
		}
	}
	sort.SliceStable(all, func(i, j int) bool {
		if all[i].start != all[j].start {
			return all[i].start < all[j].start
		}
		return all[i].end < all[j].end
	})
	var out []byte
	last := 0
	for _, e := range all {
		if e.start < last {
			continue // overlapping edit; the enclosing one wins
		}
		out = append(out, data[last:e.start]...)
		out = append(out, e.text...)
		last = e.end
	}
	return append(out, data[last:]...)
}
