// Package overlay writes a copy of the k8s.io/client-go module whose
// tools/cache package is kcache. Generate is the whole job; the command
// kcache-overlay is a thin flag parser around it.
//
// The output is client-go's module exactly as published, except:
//
//   - tools/cache holds kcache's root package (its non-test files), with
//     features.go and getter.go replaced by generated files that use
//     client-go's feature registry and client-go's Getter interface;
//   - tools/cache/testing holds kcache's testing package;
//   - go.mod requires newer versions only where kcache needs them;
//   - a marker file records what was generated, so a later run can
//     recognise (and, with Force, replace) a directory it wrote.
//
// Nothing is written to the target until the new tree is complete: it is
// built in a temporary directory beside the target and renamed into place.
package overlay

// ReferenceClientGoVersion is the client-go release written when no other
// is asked for: the newest release of the newest supported minor, whose
// tools/cache API kcache's own package reproduces. Releases of older
// minors (supportedMinors) get adapted copies of the same sources.
const ReferenceClientGoVersion = "v0.37.2"

// KcacheModule is the module path of kcache's library.
const KcacheModule = "github.com/kcache/cache"

// ClientGoModule is the module path of client-go.
const ClientGoModule = "k8s.io/client-go"

// Options says what to generate and where.
type Options struct {
	// Out is the directory to write the module to. It must not exist, be an
	// empty directory, or (with Force) hold an overlay written earlier.
	Out string
	// ClientGoVersion is the client-go release to copy; empty means
	// ReferenceClientGoVersion.
	ClientGoVersion string
	// KcacheDir is a kcache checkout (the directory holding its go.mod). If
	// empty, KcacheVersion is downloaded instead.
	KcacheDir string
	// KcacheVersion is a module version or revision of github.com/kcache/cache
	// to take from the module cache (downloaded through the proxy when
	// missing). If both KcacheDir and KcacheVersion are empty, the version the
	// running binary was built from is used, or failing that the checkout
	// containing the current directory.
	KcacheVersion string
	// Force allows replacing a directory this tool wrote before.
	Force bool
	// Check builds the new tools/cache package before the target is touched.
	Check bool
	// Go is the go command to run; empty means "go" from PATH.
	Go string
	// Env is added to the environment of every go command (tests use it to
	// point at an empty module cache or switch the proxy off).
	Env []string
	// Logf, if set, receives one line per step.
	Logf func(format string, args ...any)
}

// Result describes a module written by Generate.
type Result struct {
	// Dir is the absolute path of the written module.
	Dir string
	// Marker is what the marker file in Dir records.
	Marker Marker
}

func (o *Options) logf(format string, args ...any) {
	if o.Logf != nil {
		o.Logf(format, args...)
	}
}
