package overlay

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
)

// toolModule is the module this package is built in; its version in the
// running binary's build information says which kcache to take by default.
const toolModule = "github.com/kcache/cache/overlay"

// kcacheSource is where kcache's source was found.
type kcacheSource struct {
	// dir holds kcache's go.mod, root package and testing/.
	dir string
	// version names the source in generated headers: a module version, or
	// "devel <git describe>" for a checkout.
	version string
	// origin says how it was found, for the log and the marker.
	origin string
}

// resolveKcache finds kcache's source: the directory or version the options
// name; else the version this binary was built from (go run ...@VERSION);
// else the checkout containing the working directory.
func resolveKcache(ctx context.Context, g goTool, o *Options) (kcacheSource, error) {
	switch {
	case o.KcacheDir != "":
		return checkoutSource(o.KcacheDir, "-kcache "+o.KcacheDir)
	case o.KcacheVersion != "":
		return moduleSource(ctx, g, o.KcacheVersion)
	}
	if v := builtFromVersion(); v != "" {
		return moduleSource(ctx, g, v)
	}
	wd, err := os.Getwd()
	if err != nil {
		return kcacheSource{}, fmt.Errorf("finding kcache's source: %w", err)
	}
	if dir, ok := findCheckout(wd); ok {
		return checkoutSource(dir, "the checkout containing "+wd)
	}
	return kcacheSource{}, errors.New("cannot find kcache's source: this binary was not built from a module version and " +
		wd + " is not inside a kcache checkout; pass -kcache DIR or -kcache-version VERSION")
}

// checkoutSource uses dir, which must be the root of a kcache checkout.
func checkoutSource(dir, origin string) (kcacheSource, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return kcacheSource{}, fmt.Errorf("kcache source %s: %w", dir, err)
	}
	if err := checkKcacheRoot(abs); err != nil {
		return kcacheSource{}, err
	}
	return kcacheSource{dir: abs, version: describeCheckout(abs), origin: origin}, nil
}

// moduleSource takes kcache at query (a version or revision) from the
// module cache, downloading it when missing.
func moduleSource(ctx context.Context, g goTool, query string) (kcacheSource, error) {
	info, err := g.download(ctx, KcacheModule, query)
	if err != nil {
		return kcacheSource{}, fmt.Errorf("getting kcache's source: %w", err)
	}
	if err := checkKcacheRoot(info.Dir); err != nil {
		return kcacheSource{}, err
	}
	return kcacheSource{dir: info.Dir, version: info.Version, origin: "module " + KcacheModule + "@" + info.Version}, nil
}

// checkKcacheRoot reports whether dir holds kcache's go.mod and the two
// files the overlay replaces.
func checkKcacheRoot(dir string) error {
	path, err := modulePath(dir)
	if err != nil {
		return fmt.Errorf("kcache source %s: %w", dir, err)
	}
	if path != KcacheModule {
		return fmt.Errorf("kcache source %s: go.mod declares module %s, want %s", dir, path, KcacheModule)
	}
	for _, name := range replacedFiles {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("kcache source %s: the overlay replaces %s, which is missing: %w", dir, name, err)
		}
	}
	return nil
}

// modulePath reads the module path declared by dir/go.mod.
func modulePath(dir string) (string, error) {
	data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return "", err
	}
	f, err := modfile.ParseLax("go.mod", data, nil)
	if err != nil {
		return "", err
	}
	if f.Module == nil {
		return "", errors.New("go.mod has no module line")
	}
	return f.Module.Mod.Path, nil
}

// findCheckout walks up from dir to the first go.mod declaring kcache.
// Nested modules (overlay/, compat/, ...) are passed over on the way.
func findCheckout(dir string) (string, bool) {
	for {
		if path, err := modulePath(dir); err == nil && path == KcacheModule {
			return dir, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

// describeCheckout names a checkout's state for headers: "devel" and what
// git describe says, or just "devel" when git cannot tell.
func describeCheckout(dir string) string {
	out, err := exec.Command("git", "-C", dir, "describe", "--tags", "--always", "--dirty").Output()
	if err != nil {
		return "devel"
	}
	return "devel " + strings.TrimSpace(string(out))
}

// builtFromVersion returns the kcache version matching the module version
// this binary was built at, or "" when it was built from a checkout. A
// release of the overlay module is tagged together with the same release
// of kcache; a pseudo-version names the commit, which the proxy resolves
// for kcache's module too.
func builtFromVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	return kcacheQueryFor(info.Main)
}

// kcacheQueryFor maps the tool's own module version to a query for kcache.
func kcacheQueryFor(main debug.Module) string {
	v := main.Version
	if main.Path != toolModule || v == "" || v == "(devel)" || strings.Contains(v, "+dirty") {
		return ""
	}
	if module.IsPseudoVersion(v) {
		if rev, err := module.PseudoVersionRev(v); err == nil {
			return rev
		}
		return ""
	}
	return v
}
