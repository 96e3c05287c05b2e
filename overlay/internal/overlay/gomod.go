package overlay

import (
	"context"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/semver"
)

// requirementBumps compares the requirements of kcache's go.mod with
// client-go's, and returns the requirements (path@version) that must be
// raised in the overlay: modules that provide a package imported by the
// copied kcache files, required by kcache at a higher version than by
// client-go (or not at all by client-go). goVersion is kcache's go
// directive when it is newer than client-go's, else "".
func requirementBumps(kcacheMod, clientGoMod []byte, imports []string) (bumps []string, goVersion string, err error) {
	k, err := modfile.ParseLax("kcache go.mod", kcacheMod, nil)
	if err != nil {
		return nil, "", err
	}
	c, err := modfile.ParseLax("client-go go.mod", clientGoMod, nil)
	if err != nil {
		return nil, "", err
	}
	have := map[string]string{}
	for _, r := range c.Require {
		have[r.Mod.Path] = r.Mod.Version
	}
	for _, r := range k.Require {
		if !providesAny(r.Mod.Path, imports) {
			continue
		}
		if cur, ok := have[r.Mod.Path]; ok && semver.Compare(cur, r.Mod.Version) >= 0 {
			continue
		}
		bumps = append(bumps, r.Mod.Path+"@"+r.Mod.Version)
	}
	sort.Strings(bumps)
	if k.Go != nil && c.Go != nil && compareGo(k.Go.Version, c.Go.Version) > 0 {
		goVersion = k.Go.Version
	}
	return bumps, goVersion, nil
}

// providesAny reports whether module path mod could provide one of the
// import paths.
func providesAny(mod string, imports []string) bool {
	for _, p := range imports {
		if p == mod || strings.HasPrefix(p, mod+"/") {
			return true
		}
	}
	return false
}

// compareGo compares two go directive versions ("1.26", "1.26.0").
func compareGo(a, b string) int {
	return semver.Compare("v"+a, "v"+b)
}

// importsOf returns the sorted, distinct import paths of the non-test Go
// files in the given files.
func importsOf(paths []string) ([]string, error) {
	seen := map[string]bool{}
	fset := token.NewFileSet()
	for _, p := range paths {
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			return nil, err
		}
		for _, imp := range f.Imports {
			v, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				return nil, err
			}
			seen[v] = true
		}
	}
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	sort.Strings(out)
	return out, nil
}

// goFilesIn lists dir's files named in names as full paths.
func goFilesIn(dir string, names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = filepath.Join(dir, n)
	}
	return out
}

// applyBumps raises the given requirements in dir/go.mod (and the go
// directive when goVersion is set). The caller then runs go mod tidy so
// go.sum matches.
func applyBumps(dir string, bumps []string, goVersion string) error {
	p := filepath.Join(dir, "go.mod")
	data, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	f, err := modfile.Parse(p, data, nil)
	if err != nil {
		return err
	}
	for _, b := range bumps {
		path, version, _ := strings.Cut(b, "@")
		if err := f.AddRequire(path, version); err != nil {
			return fmt.Errorf("requiring %s: %w", b, err)
		}
	}
	if goVersion != "" {
		if err := f.AddGoStmt(goVersion); err != nil {
			return err
		}
	}
	f.Cleanup()
	out, err := f.Format()
	if err != nil {
		return err
	}
	return os.WriteFile(p, out, 0o644)
}

// withoutPinned drops from bumps the Kubernetes modules (k8s.io/...) when
// version is not of the newest supported minor: an overlay of an older
// client-go must leave the program on that minor's api and apimachinery,
// and kcache's sources compile against them.
func withoutPinned(bumps []string, version string) []string {
	if semver.MajorMinor(version) == semver.MajorMinor(ReferenceClientGoVersion) {
		return bumps
	}
	var out []string
	for _, b := range bumps {
		if !strings.HasPrefix(b, "k8s.io/") {
			out = append(out, b)
		}
	}
	return out
}

// checkPinned returns an error if the overlay's go.mod in dir requires a
// Kubernetes module at a newer version than client-go's own go.mod (before)
// does, for a release of an older minor (see withoutPinned).
func checkPinned(before []byte, dir, version string) error {
	if semver.MajorMinor(version) == semver.MajorMinor(ReferenceClientGoVersion) {
		return nil
	}
	after, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return err
	}
	b, err := modfile.ParseLax("client-go go.mod", before, nil)
	if err != nil {
		return err
	}
	a, err := modfile.ParseLax("overlay go.mod", after, nil)
	if err != nil {
		return err
	}
	had := map[string]string{}
	for _, r := range b.Require {
		had[r.Mod.Path] = r.Mod.Version
	}
	for _, r := range a.Require {
		if v, ok := had[r.Mod.Path]; ok && strings.HasPrefix(r.Mod.Path, "k8s.io/") && semver.Compare(r.Mod.Version, v) > 0 {
			return fmt.Errorf("kcache's sources need %s %s, newer than client-go %s requires (%s): this kcache cannot be used with client-go %s", r.Mod.Path, r.Mod.Version, version, v, semver.MajorMinor(version))
		}
	}
	return nil
}

// proxyGap is a module version a supported client-go release requires
// that the module proxy does not serve (it answers 403 "not available";
// checked 2026-11-28), with the newest version of the module it serves.
type proxyGap struct {
	module, needed, served string
}

// proxyGaps are pinned in every module this tool builds for a release
// that requires them: apimachinery v0.38.0-beta.0 requires
// structured-merge-diff/v7 v7.0.1. tools/minors.sh keeps the same list
// for the library's minors tests. (client-go v0.38.0-beta.0 also requires
// k8s.io/ktesting v0.38.0-beta.0, of which no version is served; only
// client-go's k8s.io/client-go/ktesting package and some tests import it,
// none of which the overlay builds; see TestOverlayE2E.)
var proxyGaps = []proxyGap{
	{module: "sigs.k8s.io/structured-merge-diff/v7", needed: "v7.0.1", served: "v7.0.0"},
}

// gapsIn returns the proxy gaps the go.mod text gomod requires.
func gapsIn(gomod []byte) ([]proxyGap, error) {
	f, err := modfile.ParseLax("go.mod", gomod, nil)
	if err != nil {
		return nil, err
	}
	var out []proxyGap
	for _, r := range f.Require {
		for _, gap := range proxyGaps {
			if r.Mod.Path == gap.module && r.Mod.Version == gap.needed {
				out = append(out, gap)
			}
		}
	}
	return out, nil
}

// pinGaps replaces, in the module at dir, each gap's unserved version
// with the served one, and adds the served version's checksums to go.sum
// (from `go mod download -json`). It returns one line per pin, for the
// marker.
func pinGaps(ctx context.Context, g goTool, dir string, gaps []proxyGap) ([]string, error) {
	var notes []string
	for _, gap := range gaps {
		info, err := g.download(ctx, gap.module, gap.served)
		if err != nil {
			return nil, err
		}
		if _, err := g.run(ctx, dir, "mod", "edit", "-replace="+gap.module+"@"+gap.needed+"="+gap.module+"@"+gap.served); err != nil {
			return nil, err
		}
		sums := fmt.Sprintf("%s %s %s\n%s %s/go.mod %s\n", gap.module, gap.served, info.Sum, gap.module, gap.served, info.GoModSum)
		f, err := os.OpenFile(filepath.Join(dir, "go.sum"), os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
		if err != nil {
			return nil, err
		}
		_, werr := f.WriteString(sums)
		if err := errors.Join(werr, f.Close()); err != nil {
			return nil, err
		}
		notes = append(notes, fmt.Sprintf("replace %s %s => %s (the module proxy does not serve %s)", gap.module, gap.needed, gap.served, gap.needed))
	}
	return notes, nil
}

// goDirective returns the go directive of a go.mod text ("1.26.0" if it
// has none).
func goDirective(gomod []byte) string {
	if f, err := modfile.ParseLax("go.mod", gomod, nil); err == nil && f.Go != nil {
		return f.Go.Version
	}
	return "1.26.0"
}
