package overlay

import (
	"fmt"
	"go/ast"
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

// rewriter collects the text edits applyPlan makes, per file.
type rewriter struct {
	k     *checkedPackage
	p     *adaptPlan
	files map[string]*fileEdits
}

// at returns the edits of the file holding pos, and pos's offset in it.
func (r *rewriter) at(pos token.Pos) (*fileEdits, int) {
	position := r.k.fset.Position(pos)
	name := baseName(position.Filename)
	if r.files[name] == nil {
		r.files[name] = &fileEdits{}
	}
	return r.files[name], position.Offset
}

// offset is pos's offset in its file.
func (r *rewriter) offset(pos token.Pos) int { return r.k.fset.Position(pos).Offset }

// applyPlan rewrites k's files by p and returns the new sources of the
// files it changed, by file name (not yet gofmt'ed). Ranges are taken
// first, while the AST still has the original names (an ident's End
// depends on its name); then the AST takes the new names; then the text
// printed from it (reordered structs, helpers) is made.
func applyPlan(k *checkedPackage, p *adaptPlan, src map[string][]byte) (map[string][]byte, error) {
	r := &rewriter{k: k, p: p, files: map[string]*fileEdits{}}
	mutate := r.renameIdents()
	r.wrapDroppedCalls()
	var later []func() error
	for _, f := range k.files {
		r.dropAssertions(f)
		later = append(later, r.narrowTypes(f)...)
	}
	mutate()
	for _, f := range later {
		if err := f(); err != nil {
			return nil, err
		}
	}
	return r.output(src)
}

// wrapDroppedCalls turns every x.M of a removed interface method M into
// helper(x), the helper returning x's M or a no-op.
func (r *rewriter) wrapDroppedCalls() {
	for sel, s := range r.k.info.Selections {
		m, ok := s.Obj().(*types.Func)
		if !ok {
			continue
		}
		helper, ok := r.p.drop[m.Origin()]
		if !ok {
			continue
		}
		fe, start := r.at(sel.X.Pos())
		fe.edits = append(fe.edits, textEdit{start, start, helper + "("},
			textEdit{r.offset(sel.X.End()), r.offset(sel.End()), ")"})
	}
}

// narrowTypes removes the planned interface methods and reorders the
// planned structs declared in f, returning what must run once the AST
// carries the new names.
func (r *rewriter) narrowTypes(f *ast.File) []func() error {
	var later []func() error
	ast.Inspect(f, func(n ast.Node) bool {
		ts, ok := n.(*ast.TypeSpec)
		if !ok {
			return true
		}
		obj, _ := r.k.info.Defs[ts.Name].(*types.TypeName)
		if obj == nil {
			return false
		}
		switch t := ts.Type.(type) {
		case *ast.InterfaceType:
			later = append(later, r.dropMethods(t)...)
		case *ast.StructType:
			if order, ok := r.p.reorder[obj]; ok {
				fe, start := r.at(t.Pos())
				i := len(fe.removed)
				fe.removed = append(fe.removed, textEdit{start, r.offset(t.End()), ""})
				later = append(later, func() error {
					fe.removed[i].text = reorderedStruct(r.k.fset, t, order)
					return nil
				})
			}
		}
		return false
	})
	return later
}

// output applies the edits to src and appends the helpers to the files
// declaring their interfaces.
func (r *rewriter) output(src map[string][]byte) (map[string][]byte, error) {
	helpers := map[string][]string{}
	for _, h := range r.p.helpers {
		helpers[h.file] = append(helpers[h.file], h.text)
	}
	out := map[string][]byte{}
	for name, fe := range r.files {
		data, ok := src[name]
		if !ok {
			return nil, fmt.Errorf("adapting %s: no source", name)
		}
		out[name] = fe.apply(data)
	}
	for name, h := range helpers {
		text, ok := out[name]
		if !ok {
			text = append([]byte{}, src[name]...)
		}
		out[name] = append(text, strings.Join(h, "\n")...)
	}
	return out, nil
}

// dropAssertions removes the compile-time checks "var _ I = value" whose
// interface I is hidden, or whose value lost a method I asks for: the
// exported type checked no longer has all of I's methods (this release's
// does not either), and nothing needs it to.
func (r *rewriter) dropAssertions(f *ast.File) {
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
			tn, ok := r.k.info.Uses[id].(*types.TypeName)
			if !ok || !types.IsInterface(tn.Type()) || len(vs.Values) != 1 {
				continue
			}
			if _, hidden := r.p.hide[tn]; !hidden && !r.losesMethodOf(vs.Values[0], tn) {
				continue
			}
			start, end := vs.Pos(), vs.End()
			if len(gd.Specs) == 1 {
				start, end = gd.Pos(), gd.End()
			}
			if gd.Doc != nil && len(gd.Specs) == 1 {
				start = gd.Doc.Pos()
			}
			fe, s := r.at(start)
			fe.removed = append(fe.removed, textEdit{s, r.offset(end), ""})
		}
	}
}

// losesMethodOf reports whether the type of value has a hidden method
// that interface iface asks for, so it no longer implements iface.
func (r *rewriter) losesMethodOf(value ast.Expr, iface *types.TypeName) bool {
	tv, ok := r.k.info.Types[value]
	if !ok {
		return false
	}
	ms := types.NewMethodSet(iface.Type())
	for i := 0; i < ms.Len(); i++ {
		m := ms.At(i).Obj()
		obj, _, _ := types.LookupFieldOrMethod(tv.Type, true, m.Pkg(), m.Name())
		if _, hidden := r.p.hide[obj]; obj != nil && hidden {
			return true
		}
	}
	return false
}

// renameIdents records the edits renaming every definition and use of a
// hidden object, and returns the function that renames them in the AST
// too (so printed nodes show the new names).
func (r *rewriter) renameIdents() (mutate func()) {
	renamed := map[*ast.Ident]string{}
	rename := func(id *ast.Ident, obj types.Object) {
		if obj == nil {
			return
		}
		name, ok := r.p.hide[origin(obj)]
		if !ok {
			return
		}
		fe, start := r.at(id.Pos())
		fe.edits = append(fe.edits, textEdit{start, start + len(id.Name), name})
		renamed[id] = name
	}
	for id, obj := range r.k.info.Defs {
		rename(id, obj)
	}
	for id, obj := range r.k.info.Uses {
		rename(id, obj)
	}
	return func() {
		for id, name := range renamed {
			id.Name = name
		}
	}
}

// dropMethods removes the planned methods from an interface type and
// returns the functions that, once the AST carries the new names, write
// the helpers their callers now go through (into p.helpers).
func (r *rewriter) dropMethods(t *ast.InterfaceType) []func() error {
	var later []func() error
	for _, field := range t.Methods.List {
		if len(field.Names) != 1 {
			continue
		}
		m, _ := r.k.info.Defs[field.Names[0]].(*types.Func)
		helper, ok := r.p.drop[m]
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
		fe, s := r.at(start)
		fe.removed = append(fe.removed, textEdit{s, r.offset(end), ""})
		if !m.Exported() {
			continue // a method sealing the interface: nothing calls it
		}
		file := baseName(r.k.fset.Position(start).Filename)
		later = append(later, func() error {
			h, err := optionalHelper(r.k.fset, helper, field)
			if err != nil {
				return err
			}
			r.p.helpers = append(r.p.helpers, generatedHelper{file: file, name: helper, text: h})
			return nil
		})
	}
	return later
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
