package overlay

import "golang.org/x/mod/semver"

// adapter is the hand-written part of adapting kcache to another minor:
// the API entries whose declarations it replaces (kcache's are hidden),
// the members a newer minor adds to types kcache declares (added to
// kcache's declarations, see addMembers), and the Go files (package cache,
// without header) that declare the rest. imports lists the packages its
// files and members import that kcache's sources may not (they are
// compiled for the type checker). Everything else follows from comparing
// the APIs (adapt_plan.go).
type adapter struct {
	replaced []string
	members  []typeMember
	imports  []string
	files    map[string]string
}

// adapters are keyed by minor version; a minor without one needs only the
// generated changes.
var adapters = map[string]adapter{}

// adapterFor returns the adapter for version's minor.
func adapterFor(version string) adapter {
	return adapters[semver.MajorMinor(version)]
}
