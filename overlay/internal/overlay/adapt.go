package overlay

import (
	"context"
	"fmt"
	"go/format"
	"go/types"
	"maps"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// cachePath is the import path of the package the overlay replaces.
const cachePath = ClientGoModule + "/" + cacheDir

// adaptation reports what adaptToRelease changed.
type adaptation struct {
	// changed lists the files of tools/cache rewritten or added.
	changed []string
	// notes lists the changes, one line each, for the log and the marker.
	notes []string
}

// adaptToRelease makes the tools/cache in the overlay module at dir (kcache's
// sources, placed and import-rewritten) present client-go cg's tools/cache
// API: it hides what a newer release added, narrows interfaces and structs,
// and adds the minor's adapter files (adapters). For the release kcache
// follows nothing changes; another patch release of its minor is only
// checked. It returns an error if the result still differs from the
// release's API.
func adaptToRelease(ctx context.Context, g goTool, dir string, cg moduleInfo, head string) (adaptation, error) {
	ad := adapterFor(cg.Version)
	if cg.Version == ReferenceClientGoVersion {
		return adaptation{}, nil // the release kcache follows (its CI checks the API)
	}
	newestInfo, err := g.download(ctx, ClientGoModule, ReferenceClientGoVersion)
	if err != nil {
		return adaptation{}, fmt.Errorf("getting client-go %s to tell its additions: %w", ReferenceClientGoVersion, err)
	}
	newest, err := loadCompiled(ctx, g, newestInfo.Dir, cachePath)
	if err != nil {
		return adaptation{}, fmt.Errorf("reading client-go %s's API: %w", ReferenceClientGoVersion, err)
	}
	release, err := loadReleasePackage(ctx, g, cg, cachePath)
	if err != nil {
		return adaptation{}, fmt.Errorf("reading client-go %s's API: %w", cg.Version, err)
	}
	idx, err := listExports(ctx, g, dir, "./"+cacheDir, true)
	if err != nil {
		return adaptation{}, err
	}
	for _, imp := range ad.imports {
		more, err := listExports(ctx, g, dir, imp, false)
		if err != nil {
			return adaptation{}, err
		}
		maps.Copy(idx, more)
	}
	return adaptPackage(filepath.Join(dir, filepath.FromSlash(cacheDir)), idx, release, packageAPI(newest), ad, head, cg.Version)
}

// adaptPackage rewrites the package in pkgDir (imported as cachePath,
// its dependencies through idx) to present release's API, newest being the
// API of the client-go release kcache follows, and adds ad's files (each
// prefixed with head).
func adaptPackage(pkgDir string, idx exportIndex, release *types.Package, newest map[string]string, ad adapter, head, version string) (adaptation, error) {
	extended, memberNotes, err := addMembers(pkgDir, ad)
	if err != nil {
		return adaptation{}, err
	}
	k, err := checkSource(pkgDir, cachePath, idx)
	if err != nil {
		return adaptation{}, fmt.Errorf("reading the overlay's %s: %w", cacheDir, err)
	}
	rapi := packageAPI(release)
	plan := planAdaptation(k, packageAPI(k.pkg), rapi, newest, release, ad.replaced)
	res := adaptation{notes: append(memberNotes, plan.notes...)}
	src := map[string][]byte{}
	for name := range k.files {
		if src[name], err = os.ReadFile(filepath.Join(pkgDir, name)); err != nil {
			return adaptation{}, err
		}
	}
	edited, err := applyPlan(k, plan, src)
	if err != nil {
		return adaptation{}, err
	}
	for name, text := range ad.files {
		edited[name] = []byte(head + text)
		res.notes = append(res.notes, "added: "+name)
	}
	for name, text := range edited {
		out, err := format.Source(text)
		if err != nil {
			return adaptation{}, fmt.Errorf("adapting %s for client-go %s: %w", name, version, err)
		}
		if err := os.WriteFile(filepath.Join(pkgDir, name), out, 0o644); err != nil {
			return adaptation{}, err
		}
		res.changed = append(res.changed, path.Join(cacheDir, name))
	}
	for _, name := range extended {
		if _, ok := edited[name]; !ok {
			res.changed = append(res.changed, path.Join(cacheDir, name))
		}
	}
	sort.Strings(res.changed)
	after, err := checkSource(pkgDir, cachePath, idx)
	if err != nil {
		return adaptation{}, err
	}
	if err := sameAPI(cacheDir, packageAPI(after.pkg), rapi, newest, version); err != nil {
		return adaptation{}, err
	}
	return res, nil
}

// sameAPI returns an error listing how got differs from the release's
// API want: a missing or different name, or a name of a newer release
// (newest) that this release does not have. kcache's own additions (names
// no client-go release has) are allowed.
func sameAPI(pkg string, got, want, newest map[string]string, version string) error {
	var diff []string
	for key, w := range want {
		switch g, ok := got[key]; {
		case !ok:
			diff = append(diff, "missing: "+w)
		case g != w:
			diff = append(diff, fmt.Sprintf("changed: %s\n    was: %s", g, w))
		}
	}
	for key, g := range got {
		if _, ok := want[key]; !ok {
			if _, newer := newest[key]; newer {
				diff = append(diff, "added (from a newer release): "+g)
			}
		}
	}
	if len(diff) == 0 {
		return nil
	}
	sort.Strings(diff)
	if len(diff) > 20 {
		diff = append(diff[:20], fmt.Sprintf("... and %d more", len(diff)-20))
	}
	return fmt.Errorf("the overlay's %s does not present client-go %s's API:\n  %s", pkg, version, strings.Join(diff, "\n  "))
}
