package overlay

import (
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// typeMember is a member a newer release declares in a type kcache
// declares too: an interface method or a struct field, as Go source
// (doc comment included), added at the end of kcache's declaration. The
// library does not use it; the adapter's files give it its meaning.
type typeMember struct {
	typeName, text string
}

// addMembers adds ad's members to the types of the package in pkgDir, with
// the imports their text needs (ad.imports, those of them used), and
// returns the names of the files it rewrote and one note per member.
func addMembers(pkgDir string, ad adapter) (changed, notes []string, err error) {
	if len(ad.members) == 0 {
		return nil, nil, nil
	}
	entries, err := os.ReadDir(pkgDir)
	if err != nil {
		return nil, nil, err
	}
	found := map[string]bool{}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		p := filepath.Join(pkgDir, name)
		src, err := os.ReadFile(p)
		if err != nil {
			return nil, nil, err
		}
		out, added, err := addMembersToFile(name, src, ad)
		if err != nil {
			return nil, nil, err
		}
		if len(added) == 0 {
			continue
		}
		if err := os.WriteFile(p, out, 0o644); err != nil {
			return nil, nil, err
		}
		changed = append(changed, name)
		for _, m := range added {
			found[m.typeName+"\x00"+m.text] = true
			notes = append(notes, fmt.Sprintf("added: member of %s: %s", m.typeName, firstCodeLine(m.text)))
		}
	}
	for _, m := range ad.members {
		if !found[m.typeName+"\x00"+m.text] {
			return nil, nil, fmt.Errorf("adding %q to %s: kcache declares no struct or interface type %s", firstCodeLine(m.text), m.typeName, m.typeName)
		}
	}
	sort.Strings(notes)
	return changed, notes, nil
}

// addMembersToFile adds the members of the types declared in one file and
// returns the formatted result and the members added.
func addMembersToFile(name string, src []byte, ad adapter) ([]byte, []typeMember, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return nil, nil, err
	}
	type insert struct {
		offset int
		text   string
	}
	var inserts []insert
	var added []typeMember
	ast.Inspect(f, func(n ast.Node) bool {
		ts, ok := n.(*ast.TypeSpec)
		if !ok {
			return true
		}
		var closing token.Pos
		switch t := ts.Type.(type) {
		case *ast.InterfaceType:
			closing = t.Methods.Closing
		case *ast.StructType:
			closing = t.Fields.Closing
		default:
			return false
		}
		for _, m := range ad.members {
			if m.typeName == ts.Name.Name {
				inserts = append(inserts, insert{fset.Position(closing).Offset, "\n" + m.text + "\n"})
				added = append(added, m)
			}
		}
		return false
	})
	if len(added) == 0 {
		return src, nil, nil
	}
	have := map[string]bool{}
	for _, imp := range f.Imports {
		if p, err := strconv.Unquote(imp.Path.Value); err == nil {
			have[p] = true
		}
	}
	var text strings.Builder
	for _, imp := range ad.imports {
		if have[imp] || !slices.ContainsFunc(added, func(m typeMember) bool { return strings.Contains(m.text, importName(imp)+".") }) {
			continue
		}
		fmt.Fprintf(&text, "import %q\n", imp)
	}
	if text.Len() > 0 {
		// A declaration of its own after the package clause: gofmt keeps
		// it, and the type checker does not mind a second import block.
		inserts = append(inserts, insert{fset.Position(f.Name.End()).Offset, "\n\n" + text.String()})
	}
	sort.Slice(inserts, func(i, j int) bool { return inserts[i].offset > inserts[j].offset })
	out := slices.Clone(src)
	for _, in := range inserts {
		out = slices.Concat(out[:in.offset], []byte(in.text), out[in.offset:])
	}
	formatted, err := format.Source(out)
	if err != nil {
		return nil, nil, fmt.Errorf("adding members to %s: %w", name, err)
	}
	return formatted, added, nil
}

// importName is the last element of an import path, the name a file
// refers to the package by.
func importName(path string) string {
	return path[strings.LastIndex(path, "/")+1:]
}

// firstCodeLine is the first line of text that is not a comment.
func firstCodeLine(text string) string {
	for line := range strings.SplitSeq(text, "\n") {
		if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "//") {
			return l
		}
	}
	return strings.TrimSpace(text)
}
