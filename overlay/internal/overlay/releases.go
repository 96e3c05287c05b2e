package overlay

import (
	"context"
	"fmt"
	"os"
	"strings"

	"golang.org/x/mod/semver"
)

// ReleaseStatus is the newest client-go release of one minor, as the
// module proxy lists them, and whether the overlay was checked against it.
type ReleaseStatus struct {
	// Minor is the minor version, e.g. "v0.37".
	Minor string
	// Newest is its newest release ("" when it has none yet): the newest
	// patch, or for a minor without one (a pre-release minor, or the next
	// one) its newest pre-release.
	Newest string
	// Checked is the release of the minor the overlay was checked against
	// ("" for the next minor, which is not supported).
	Checked string
	// Supported is false for the next minor.
	Supported bool
}

// UpToDate reports whether the overlay was checked against the newest
// release of a supported minor.
func (r ReleaseStatus) UpToDate() bool { return r.Supported && r.Newest == r.Checked }

// String describes r in one line.
func (r ReleaseStatus) String() string {
	switch {
	case !r.Supported && r.Newest == "":
		return fmt.Sprintf("%s (next minor, not supported): no release yet", r.Minor)
	case !r.Supported:
		return fmt.Sprintf("%s (next minor, not supported): newest %s, not checked", r.Minor, r.Newest)
	case r.UpToDate():
		return fmt.Sprintf("%s: newest %s, checked", r.Minor, r.Newest)
	}
	return fmt.Sprintf("%s: newest %s, NOT checked (the overlay was checked against %s)", r.Minor, r.Newest, r.Checked)
}

// ListReleases asks the module proxy (`go list -m -versions`) for
// client-go's versions and returns the newest release of each supported
// minor and of the next one, against what the overlay was checked with
// (supportedMinors).
func ListReleases(ctx context.Context, o Options) ([]ReleaseStatus, error) {
	dir, err := os.MkdirTemp("", "kcache-overlay-releases-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	out, err := newGoTool(&o).run(ctx, dir, "list", "-m", "-versions", ClientGoModule)
	if err != nil {
		return nil, err
	}
	fields := strings.Fields(string(out))
	if len(fields) < 2 || fields[0] != ClientGoModule {
		return nil, fmt.Errorf("unexpected go list -m -versions output %q", out)
	}
	return releaseStatuses(fields[1:]), nil
}

// releaseStatuses picks, from client-go's versions, the newest release of
// each supported minor and of the next minor.
func releaseStatuses(versions []string) []ReleaseStatus {
	var out []ReleaseStatus
	for _, m := range supportedMinors {
		out = append(out, ReleaseStatus{Minor: m.minor, Newest: newestOf(versions, m.minor), Checked: m.newest, Supported: true})
	}
	last := supportedMinors[len(supportedMinors)-1].minor
	var major, minor int
	fmt.Sscanf(last, "v%d.%d", &major, &minor)
	next := fmt.Sprintf("v%d.%d", major, minor+1)
	return append(out, ReleaseStatus{Minor: next, Newest: newestOf(versions, next)})
}

// newestOf returns the newest version of minor: its newest release, or
// when it has none its newest pre-release ("" when there is neither).
func newestOf(versions []string, minor string) string {
	var release, pre string
	for _, v := range versions {
		if !semver.IsValid(v) || semver.MajorMinor(v) != minor {
			continue
		}
		if semver.Prerelease(v) == "" {
			if release == "" || semver.Compare(v, release) > 0 {
				release = v
			}
		} else if pre == "" || semver.Compare(v, pre) > 0 {
			pre = v
		}
	}
	if release != "" {
		return release
	}
	return pre
}
