package overlay

import (
	"fmt"
	"strings"

	"golang.org/x/mod/semver"
)

// supportedMinors are the client-go minor versions an overlay can be
// written for, oldest first, each with the newest patch release tested.
// Any patch release of these minors is accepted; the overlay is adapted to
// the exact release's tools/cache API (see adapt.go).
var supportedMinors = []struct {
	minor, newest string
}{
	{"v0.35", "v0.35.10"},
	{"v0.36", "v0.36.6"},
	{"v0.37", "v0.37.2"},
}

// newestSupported is the newest patch release of the newest supported
// minor: the release kcache's own API follows.
func newestSupported() string { return supportedMinors[len(supportedMinors)-1].newest }

// SupportedReleases names the supported client-go releases, for usage
// texts and errors.
func SupportedReleases() string {
	var parts []string
	for _, m := range supportedMinors {
		parts = append(parts, fmt.Sprintf("%s.x (tested: %s)", m.minor, m.newest))
	}
	return strings.Join(parts, ", ")
}

// checkClientGoVersion rejects versions outside the supported minors
// before anything is downloaded. A patch release that does not exist is
// reported later, by the module proxy.
func checkClientGoVersion(v string) error {
	if !semver.IsValid(v) || v != semver.Canonical(v) {
		return fmt.Errorf("client-go version %q is not a semantic version like %s", v, ReferenceClientGoVersion)
	}
	if semver.Prerelease(v) != "" {
		return fmt.Errorf("client-go %s is a pre-release; supported are the releases of %s", v, SupportedReleases())
	}
	for _, m := range supportedMinors {
		if semver.MajorMinor(v) == m.minor {
			return nil
		}
	}
	return fmt.Errorf("client-go %s is not supported; supported are the releases of %s", v, SupportedReleases())
}
