package overlay

import (
	"context"
	"errors"
	"fmt"
	"go/version"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
)

// Generate writes the overlay module described by o and returns what it
// wrote. On any error the target is left as it was and the staging
// directory is removed.
func Generate(ctx context.Context, o Options) (*Result, error) {
	if o.Out == "" {
		return nil, errors.New("no output directory given (-o DIR)")
	}
	target, err := filepath.Abs(o.Out)
	if err != nil {
		return nil, fmt.Errorf("output directory %s: %w", o.Out, err)
	}
	cgVersion := o.ClientGoVersion
	if cgVersion == "" {
		cgVersion = ReferenceClientGoVersion
	}
	if err := checkClientGoVersion(cgVersion); err != nil {
		return nil, err
	}
	state, err := inspectTarget(target, o.Force)
	if err != nil {
		return nil, err
	}
	if tc := ToolchainFor(cgVersion); tc != "" {
		// The release's modules need a newer Go than kcache's. The tool
		// reads the packages that Go compiles, so it must run on it too;
		// every go command it runs gets that toolchain (which the go
		// command fetches through the module proxy).
		if v := runtime.Version(); version.IsValid(v) && version.Compare(v, tc) < 0 {
			return nil, fmt.Errorf("client-go %s needs Go toolchain %s and this tool runs on %s, whose type checker cannot read that Go's compiled packages: run it with GOTOOLCHAIN=%s (make overlay does)", cgVersion, tc, v, tc)
		}
		if !slices.ContainsFunc(o.Env, func(e string) bool { return strings.HasPrefix(e, "GOTOOLCHAIN=") }) {
			o.Env = append(slices.Clip(o.Env), "GOTOOLCHAIN="+tc)
		}
		o.logf("client-go %s needs Go toolchain %s (GOTOOLCHAIN)", cgVersion, tc)
	}
	g := newGoTool(&o)

	src, err := resolveKcache(ctx, g, &o)
	if err != nil {
		return nil, err
	}
	o.logf("kcache %s from %s", src.version, src.origin)

	cg, err := g.download(ctx, ClientGoModule, cgVersion)
	if err != nil {
		return nil, fmt.Errorf("getting client-go: %w", err)
	}
	o.logf("client-go %s from %s", cg.Version, cg.Dir)

	staging, err := newStagingDir(target)
	if err != nil {
		return nil, err
	}
	renamed := false
	defer func() {
		if !renamed {
			os.RemoveAll(staging)
		}
	}()
	m, err := assemble(ctx, g, src, cg, staging)
	if err != nil {
		return nil, err
	}
	if o.Check {
		o.logf("building tools/cache in %s", staging)
		if _, err := g.run(ctx, staging, "build", "-trimpath", "./"+cacheDir+"/..."); err != nil {
			return nil, fmt.Errorf("the generated overlay does not build; %s left unchanged: %w", target, err)
		}
		if err := checkTestingAPI(ctx, g, staging, cg); err != nil {
			return nil, err
		}
	}
	// Look again: the target may have appeared while the tree was built.
	if _, err := inspectTarget(target, o.Force); err != nil {
		return nil, err
	}
	if err := replaceTarget(staging, target, state); err != nil {
		return nil, err
	}
	renamed = true
	o.logf("wrote %s", target)
	return &Result{Dir: target, Marker: m}, nil
}

// assemble fills the empty directory dst with the overlay module and
// returns its marker (already written).
func assemble(ctx context.Context, g goTool, src kcacheSource, cg moduleInfo, dst string) (Marker, error) {
	head := header(src.version, cg.Version)
	m := Marker{Generator: generatorName, Kcache: src.version, KcacheSource: src.origin, ClientGo: cg.Version}

	if err := copyClientGo(cg.Dir, dst); err != nil {
		return Marker{}, fmt.Errorf("copying client-go: %w", err)
	}
	gomod, err := os.ReadFile(filepath.Join(dst, "go.mod"))
	if err != nil {
		return Marker{}, err
	}
	gaps, err := gapsIn(gomod)
	if err != nil {
		return Marker{}, err
	}
	pins, err := pinGaps(ctx, g, dst, gaps)
	if err != nil {
		return Marker{}, fmt.Errorf("pinning module versions the proxy does not serve: %w", err)
	}
	cacheDst := filepath.Join(dst, filepath.FromSlash(cacheDir))
	names, err := placeKcacheFiles(src.dir, cacheDst, head, replacedFiles)
	if err != nil {
		return Marker{}, fmt.Errorf("placing kcache in %s: %w", cacheDir, err)
	}
	carried := map[carriedPackage][]string{}
	for _, p := range carriedPackages {
		srcDir := filepath.Join(src.dir, filepath.FromSlash(p.src))
		if _, err := os.Stat(srcDir); p.optional && errors.Is(err, fs.ErrNotExist) {
			continue
		}
		pn, err := placeKcacheFiles(srcDir, filepath.Join(dst, filepath.FromSlash(p.dst)), head, nil)
		if err != nil {
			return Marker{}, fmt.Errorf("placing kcache's package %s in %s: %w", p.src, p.dst, err)
		}
		carried[p] = pn
	}
	features, err := featuresFile(src.dir, filepath.Join(cg.Dir, "features"), head)
	if err != nil {
		return Marker{}, err
	}
	getter, err := getterFile(head)
	if err != nil {
		return Marker{}, err
	}
	for name, data := range map[string][]byte{"features.go": features, "getter.go": getter} {
		if err := os.WriteFile(filepath.Join(cacheDst, name), data, 0o644); err != nil {
			return Marker{}, err
		}
	}
	for _, n := range append(names, replacedFiles...) {
		m.Generated = append(m.Generated, path.Join(cacheDir, n))
	}
	goFiles := goFilesIn(src.dir, names)
	for _, p := range carriedPackages {
		for _, n := range carried[p] {
			m.Generated = append(m.Generated, path.Join(p.dst, n))
		}
		goFiles = append(goFiles, goFilesIn(filepath.Join(src.dir, filepath.FromSlash(p.src)), carried[p])...)
	}

	// go.mod: client-go's, raised only where kcache's copied code needs it.
	imports, err := importsOf(goFiles)
	if err != nil {
		return Marker{}, err
	}
	kmod, err := os.ReadFile(filepath.Join(src.dir, "go.mod"))
	if err != nil {
		return Marker{}, err
	}
	cmod, err := os.ReadFile(filepath.Join(dst, "go.mod"))
	if err != nil {
		return Marker{}, err
	}
	bumps, goVersion, err := requirementBumps(kmod, cmod, imports)
	if err != nil {
		return Marker{}, fmt.Errorf("comparing requirements: %w", err)
	}
	bumps = withoutPinned(bumps, cg.Version)
	if len(bumps) > 0 || goVersion != "" {
		if err := applyBumps(dst, bumps, goVersion); err != nil {
			return Marker{}, fmt.Errorf("raising requirements: %w", err)
		}
		if len(bumps) > 0 {
			if _, err := g.run(ctx, dst, "mod", "tidy"); err != nil {
				return Marker{}, fmt.Errorf("completing go.sum after raising %v: %w", bumps, err)
			}
			if err := checkPinned(cmod, dst, cg.Version); err != nil {
				return Marker{}, err
			}
		}
		m.RequirementsChanged = bumps
		if goVersion != "" {
			m.RequirementsChanged = append(m.RequirementsChanged, "go "+goVersion)
		}
	}
	m.RequirementsChanged = append(m.RequirementsChanged, pins...)
	ad, err := adaptToRelease(ctx, g, dst, cg, head)
	if err != nil {
		return Marker{}, err
	}
	for _, f := range ad.changed {
		if !slices.Contains(m.Generated, f) {
			m.Generated = append(m.Generated, f)
		}
	}
	m.Adapted = ad.notes
	m.Generated = append(m.Generated, MarkerFile)
	if err := writeMarker(dst, m); err != nil {
		return Marker{}, err
	}
	return m, nil
}

// checkTestingAPI compares the overlay's tools/cache/testing, built, with
// the release's: every name the release exports must be there, the same.
func checkTestingAPI(ctx context.Context, g goTool, dir string, cg moduleInfo) error {
	const pkg = ClientGoModule + "/" + testingDir
	got, err := loadCompiled(ctx, g, dir, pkg)
	if err != nil {
		return fmt.Errorf("reading the overlay's %s: %w", testingDir, err)
	}
	want, err := loadReleasePackage(ctx, g, cg, pkg)
	if err != nil {
		return fmt.Errorf("reading client-go %s's %s: %w", cg.Version, testingDir, err)
	}
	return sameAPI(testingDir, packageAPI(got), packageAPI(want), nil, cg.Version)
}
