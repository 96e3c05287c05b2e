package overlay

import (
	"fmt"
	"go/types"
	"slices"
	"sort"
	"strings"
)

// hiddenPrefix starts the unexported name an exported declaration gets when
// the target release does not have it: the library keeps using it under
// the new name, importers no longer see it.
const hiddenPrefix = "overlay"

// adaptPlan is what the overlay changes in kcache's package to present a
// release's API: objects renamed out of the API, interface methods
// removed (their calls go through optional-interface helpers), struct
// fields put into the release's order.
type adaptPlan struct {
	hide    map[types.Object]string
	drop    map[*types.Func]string // interface method -> helper name
	reorder map[*types.TypeName][]string
	notes   []string
	// helpers are written by applyPlan: the optional-interface functions
	// that replace calls of removed interface methods.
	helpers []generatedHelper
}

// generatedHelper is a function added to a file of the package.
type generatedHelper struct {
	file, name, text string
}

// apiKeyName splits an API key into its type (or object) name and its
// method name, if any.
func apiKeyName(key string) (name, member string) {
	name, member, _ = strings.Cut(key, ".")
	return name, member
}

// planAdaptation compares kcache's package (kapi) with the release's API
// (rapi) and decides how to adapt kcache: every name a newer client-go
// release has (newest) but this one lacks is hidden; interfaces lose the
// methods the release's lack; structs lose the fields the release's lack
// and take its field order. Names in replaced are hidden too: the adapter
// files declare them anew. What cannot be adapted this way is left for the
// final API check to report.
func planAdaptation(k *checkedPackage, kapi, rapi, newest map[string]string, release *types.Package, replaced []string) *adaptPlan {
	p := &adaptPlan{hide: map[types.Object]string{}, drop: map[*types.Func]string{}, reorder: map[*types.TypeName][]string{}}
	keys := make([]string, 0, len(kapi))
	for key := range kapi {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	for _, key := range keys {
		want, inRelease := rapi[key]
		switch {
		case slices.Contains(replaced, key):
			p.hideKey(k.pkg, key, "declared by the adapter")
		case inRelease && want == kapi[key]:
		case !inRelease:
			if name, member := apiKeyName(key); member != "" && rapi[name] == "" {
				continue // the type is hidden, and its methods with it
			}
			if _, ok := newest[key]; ok {
				p.hideKey(k.pkg, key, "not in this release")
			}
		default:
			p.adaptType(k.pkg, release, key)
		}
	}
	p.hideMatchingInterfaceMethods(k.pkg, replaced)
	return p
}

// hideMatchingInterfaceMethods renames, in every hidden interface, the
// methods named like a method the adapter replaces, so the library's own
// types keep implementing its own (hidden) interfaces: with
// RealFIFO.PopBatch replaced by the adapter, the hidden QueueWithBatch asks
// for the hidden PopBatch, which RealFIFO still has.
func (p *adaptPlan) hideMatchingInterfaceMethods(pkg *types.Package, replaced []string) {
	hiddenMethods := map[string]bool{}
	for _, key := range replaced {
		if _, member := apiKeyName(key); member != "" {
			hiddenMethods[member] = true
		}
	}
	for obj := range p.hide {
		tn, ok := obj.(*types.TypeName)
		if !ok || tn.Parent() != pkg.Scope() {
			continue
		}
		iface, ok := tn.Type().Underlying().(*types.Interface)
		if !ok {
			continue
		}
		for i := 0; i < iface.NumExplicitMethods(); i++ {
			if m := iface.ExplicitMethod(i); hiddenMethods[m.Name()] {
				p.hide[m] = hiddenPrefix + m.Name()
			}
		}
	}
}

// hideKey hides the object (or method) an API key names.
func (p *adaptPlan) hideKey(pkg *types.Package, key, why string) {
	name, member := apiKeyName(key)
	obj := pkg.Scope().Lookup(name)
	if obj == nil {
		return
	}
	if member != "" {
		obj, _, _ = types.LookupFieldOrMethod(types.NewPointer(obj.Type()), true, pkg, member)
		if obj == nil || promotedFromInterface(obj) {
			return // an embedded interface's method goes with that interface's narrowing
		}
	}
	p.hide[obj] = hiddenPrefix + obj.Name()
	p.notes = append(p.notes, fmt.Sprintf("hidden: %s (%s)", key, why))
}

// promotedFromInterface reports whether obj is a method declared by an
// interface (reached through an embedded interface field).
func promotedFromInterface(obj types.Object) bool {
	f, ok := obj.(*types.Func)
	if !ok {
		return false
	}
	recv := f.Signature().Recv()
	return recv != nil && types.IsInterface(recv.Type())
}

// adaptType narrows a struct or interface type whose definition differs
// from the release's.
func (p *adaptPlan) adaptType(pkg, release *types.Package, name string) {
	obj, ok := pkg.Scope().Lookup(name).(*types.TypeName)
	relObj, relOK := release.Scope().Lookup(name).(*types.TypeName)
	if !ok || !relOK {
		return
	}
	switch u := obj.Type().Underlying().(type) {
	case *types.Struct:
		rs, ok := relObj.Type().Underlying().(*types.Struct)
		if !ok {
			return
		}
		var order []string
		for i := 0; i < rs.NumFields(); i++ {
			if f := rs.Field(i); f.Exported() {
				order = append(order, f.Name())
			}
		}
		for i := 0; i < u.NumFields(); i++ {
			if f := u.Field(i); f.Exported() && !slices.Contains(order, f.Name()) {
				p.hide[f] = hiddenPrefix + f.Name()
				p.notes = append(p.notes, fmt.Sprintf("hidden: field %s.%s (not in this release)", name, f.Name()))
			}
		}
		p.reorder[obj] = order
	case *types.Interface:
		ri, ok := relObj.Type().Underlying().(*types.Interface)
		if !ok {
			return
		}
		sealed := false // the release's interface has unexported methods too
		for i := 0; i < ri.NumMethods(); i++ {
			sealed = sealed || !ri.Method(i).Exported()
		}
		for i := 0; i < u.NumExplicitMethods(); i++ {
			m := u.ExplicitMethod(i)
			if !m.Exported() && sealed {
				continue
			}
			if rm, _, _ := types.LookupFieldOrMethod(ri, false, release, m.Name()); rm == nil || !m.Exported() {
				p.drop[m] = hiddenPrefix + name + m.Name()
				if m.Exported() {
					p.notes = append(p.notes, fmt.Sprintf("removed: method %s.%s; the library calls it only if the value has it", name, m.Name()))
				} else {
					p.notes = append(p.notes, fmt.Sprintf("removed: unexported method %s.%s (the release's interface can be implemented elsewhere)", name, m.Name()))
				}
			}
		}
	}
}
