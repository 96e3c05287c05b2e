package overlay

import "golang.org/x/mod/semver"

// adapter is the hand-written part of adapting kcache to an older minor:
// the API entries whose declarations it replaces (kcache's are hidden)
// and the Go files (package cache, without header) that declare them.
// Everything else follows from comparing the APIs (adapt_plan.go).
type adapter struct {
	replaced []string
	files    map[string]string
}

// adapters are keyed by minor version; a minor without one needs only the
// generated changes.
var adapters = map[string]adapter{}

// adapterFor returns the adapter for version's minor.
func adapterFor(version string) adapter {
	return adapters[semver.MajorMinor(version)]
}
