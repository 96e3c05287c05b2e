package overlay

import (
	"fmt"
	"strings"

	"golang.org/x/mod/semver"
)

// clientGoMinor is one client-go minor version an overlay can be written
// for.
type clientGoMinor struct {
	// minor is the minor version, e.g. "v0.37".
	minor string
	// newest is the newest release of the minor the overlay was checked
	// against (TestOverlayE2E writes, builds and tests it).
	newest string
	// prerelease says the minor has no release yet: newest is a
	// pre-release, and pre-releases of this minor are accepted too.
	prerelease bool
	// toolchain is the Go toolchain the minor's modules need when it is
	// newer than kcache's own (the go commands run with GOTOOLCHAIN set to
	// it); "" for none.
	toolchain string
}

// supportedMinors are the client-go minor versions an overlay can be
// written for, oldest first. It is the one list of supported releases:
// the refusal message, README.md and CHANGELOG.md's compatibility table
// are made from it (TestSupportedReleases_DocumentsMatchTheList keeps the
// two documents equal to it). Any release of a minor is accepted (and any
// pre-release of a pre-release minor); the overlay is adapted to the exact
// release's tools/cache API (see adapt.go).
var supportedMinors = []clientGoMinor{
	{minor: "v0.35", newest: "v0.35.10"},
	{minor: "v0.36", newest: "v0.36.6"},
	{minor: "v0.37", newest: "v0.37.2"},
	{minor: "v0.38", newest: "v0.38.0-beta.0", prerelease: true, toolchain: "go1.27.3"},
}

// minorOf returns the supported minor of version, if it is one.
func minorOf(version string) (clientGoMinor, bool) {
	for _, m := range supportedMinors {
		if semver.MajorMinor(version) == m.minor {
			return m, true
		}
	}
	return clientGoMinor{}, false
}

// ToolchainFor returns the Go toolchain (a GOTOOLCHAIN value) the go
// commands, and the tool itself, need for a client-go version: "" when
// kcache's own Go will do.
func ToolchainFor(version string) string {
	m, _ := minorOf(version)
	return m.toolchain
}

// SupportedReleases names the supported client-go releases, for usage
// texts, errors and the documents (see versions_test.go), e.g.
// "v0.37.x (tested: v0.37.2), v0.38.x and its pre-releases (no release
// yet; tested: v0.38.0-beta.0, a pre-release)".
func SupportedReleases() string {
	var parts []string
	for _, m := range supportedMinors {
		parts = append(parts, m.describe())
	}
	return strings.Join(parts, ", ")
}

// describe names the releases of m, as SupportedReleases lists them.
func (m clientGoMinor) describe() string {
	if m.prerelease {
		return fmt.Sprintf("%s.x and its pre-releases (no release yet; tested: %s, a pre-release)", m.minor, m.newest)
	}
	return fmt.Sprintf("%s.x (tested: %s)", m.minor, m.newest)
}

// checkClientGoVersion rejects versions outside the supported minors
// before anything is downloaded. A patch release that does not exist is
// reported later, by the module proxy.
func checkClientGoVersion(v string) error {
	if !semver.IsValid(v) || v != semver.Canonical(v) {
		return fmt.Errorf("client-go version %q is not a semantic version like %s", v, ReferenceClientGoVersion)
	}
	m, ok := minorOf(v)
	switch {
	case !ok:
		return fmt.Errorf("client-go %s is not supported; supported are %s", v, SupportedReleases())
	case semver.Prerelease(v) != "" && !m.prerelease:
		return fmt.Errorf("client-go %s is a pre-release of a released minor; supported are %s", v, SupportedReleases())
	}
	return nil
}
