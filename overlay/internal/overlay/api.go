package overlay

import (
	"fmt"
	"go/types"
	"slices"
	"sort"
	"strings"
)

// packageAPI describes what pkg offers importers, one entry per exported
// name: constants, variables and functions by their types, each type by
// its definition with only exported fields and methods, and each method
// of an exported type's method set (promoted ones included) under
// "Type.Method". Two packages with equal maps are interchangeable for any
// importer that uses exported names only.
func packageAPI(pkg *types.Package) map[string]string {
	qual := func(p *types.Package) string {
		if p == pkg || p.Path() == pkg.Path() {
			return ""
		}
		return p.Name()
	}
	api := map[string]string{}
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		switch o := obj.(type) {
		case *types.Const:
			api[name] = "const " + name + " " + types.TypeString(o.Type(), qual)
		case *types.Var:
			api[name] = "var " + name + " " + types.TypeString(o.Type(), qual)
		case *types.Func:
			api[name] = "func " + name + strings.TrimPrefix(types.TypeString(o.Type(), qual), "func")
		case *types.TypeName:
			addTypeAPI(api, o, qual)
		}
	}
	return api
}

// addTypeAPI records a type name and, for defined types, its methods.
func addTypeAPI(api map[string]string, o *types.TypeName, qual types.Qualifier) {
	name := o.Name()
	if o.IsAlias() {
		api[name] = "type " + name + " = " + types.TypeString(types.Unalias(o.Type()), qual)
		return
	}
	named, ok := o.Type().(*types.Named)
	if !ok {
		return
	}
	api[name] = "type " + name + typeParams(named.TypeParams(), qual) + " " + underlyingAPI(named.Underlying(), qual)
	if types.IsInterface(named) {
		return
	}
	valueSet := types.NewMethodSet(named)
	ptrSet := types.NewMethodSet(types.NewPointer(named))
	for i := 0; i < ptrSet.Len(); i++ {
		m := ptrSet.At(i).Obj()
		if !m.Exported() {
			continue
		}
		recv := "*" + name
		if valueSet.Lookup(m.Pkg(), m.Name()) != nil {
			recv = name
		}
		api[name+"."+m.Name()] = fmt.Sprintf("func (%s) %s%s", recv, m.Name(), strings.TrimPrefix(types.TypeString(m.Type(), qual), "func"))
	}
}

// typeParams renders a type parameter list, or "" for none.
func typeParams(tps *types.TypeParamList, qual types.Qualifier) string {
	if tps.Len() == 0 {
		return ""
	}
	var parts []string
	for i := 0; i < tps.Len(); i++ {
		tp := tps.At(i)
		parts = append(parts, tp.Obj().Name()+" "+types.TypeString(tp.Constraint(), qual))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// underlyingAPI renders a type with only its exported fields (structs)
// or its exported methods and a mark for unexported ones (interfaces).
func underlyingAPI(t types.Type, qual types.Qualifier) string {
	switch u := t.(type) {
	case *types.Struct:
		var fields []string
		for i := 0; i < u.NumFields(); i++ {
			f := u.Field(i)
			if !f.Exported() {
				continue
			}
			prefix := f.Name() + " "
			if f.Embedded() {
				prefix = "embedded "
			}
			fields = append(fields, prefix+types.TypeString(f.Type(), qual))
		}
		return "struct{" + strings.Join(fields, "; ") + "}"
	case *types.Interface:
		if !u.IsMethodSet() {
			return types.TypeString(u, qual)
		}
		var methods []string
		for i := 0; i < u.NumMethods(); i++ {
			m := u.Method(i)
			if !m.Exported() {
				methods = append(methods, "(unexported methods)")
				continue
			}
			methods = append(methods, m.Name()+strings.TrimPrefix(types.TypeString(m.Type(), qual), "func"))
		}
		sort.Strings(methods)
		return "interface{" + strings.Join(slices.Compact(methods), "; ") + "}"
	}
	return types.TypeString(t, qual)
}
