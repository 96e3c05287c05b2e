package overlay

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCheckClientGoVersion_AcceptsReleasesOfTheSupportedMinors(t *testing.T) {
	tests := []struct {
		version string
		wantErr string // "" means accepted
	}{
		{version: "v0.37.2"},
		{version: "v0.37.0"},
		{version: "v0.37.9"},
		{version: "v0.36.4"},
		{version: "v0.36.0"},
		{version: "v0.35.10"},
		{version: "v0.35.0"},
		{version: "v0.34.13", wantErr: "not supported; supported are v0.35.x (tested: v0.35.10), v0.36.x (tested: v0.36.6), v0.37.x (tested: v0.37.2), v0.38.x and its pre-releases (no release yet; tested: v0.38.0-beta.0, a pre-release)"},
		{version: "v0.38.0-beta.0"},
		{version: "v0.38.0-rc.1"},
		{version: "v0.38.0"},
		{version: "v0.38.3"},
		{version: "v0.39.0-alpha.0", wantErr: "not supported"},
		{version: "v1.37.2", wantErr: "not supported"},
		{version: "v0.37.0-rc.1", wantErr: "pre-release of a released minor"},
		{version: "0.37.2", wantErr: "not a semantic version"},
		{version: "v0.37", wantErr: "not a semantic version"},
		{version: "latest", wantErr: "not a semantic version"},
	}
	for _, tc := range tests {
		t.Run(tc.version, func(t *testing.T) {
			err := checkClientGoVersion(tc.version)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("rejected: %v", err)
			case tc.wantErr != "" && err == nil:
				t.Fatal("accepted, want an error")
			case tc.wantErr != "" && !strings.Contains(err.Error(), tc.wantErr):
				t.Fatalf("error %q does not say %q", err, tc.wantErr)
			}
		})
	}
}

func TestToolchainFor_NamesTheNewerGoOfV038(t *testing.T) {
	for version, want := range map[string]string{"v0.35.10": "", "v0.37.2": "", "v0.38.0-beta.0": "go1.27.3", "v0.38.2": "go1.27.3", "v0.40.0": ""} {
		if got := ToolchainFor(version); got != want {
			t.Errorf("ToolchainFor(%s) = %q, want %q", version, got, want)
		}
	}
}

func TestReleaseStatuses_NewestOfEachMinorAndWhetherChecked(t *testing.T) {
	versions := strings.Fields("v0.34.13 v0.35.9 v0.35.10 v0.36.6 v0.36.7 v0.37.0-rc.0 v0.37.1 v0.37.2 v0.38.0-alpha.0 v0.38.0-beta.0 v0.38.0-rc.0 v0.39.0-alpha.0")
	var got []string
	for _, r := range releaseStatuses(versions) {
		got = append(got, r.String())
	}
	want := []string{
		"v0.35: newest v0.35.10, checked",
		"v0.36: newest v0.36.7, NOT checked (the overlay was checked against v0.36.6)",
		"v0.37: newest v0.37.2, checked",
		"v0.38: newest v0.38.0-rc.0, NOT checked (the overlay was checked against v0.38.0-beta.0)",
		"v0.39 (next minor, not supported): newest v0.39.0-alpha.0, not checked",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got := releaseStatuses(strings.Fields("v0.38.0-beta.0 v0.38.0 v0.38.1-rc.0"))[3].Newest; got != "v0.38.0" {
		t.Errorf("newest v0.38 = %s, want the release v0.38.0 over its later patch's pre-release", got)
	}
}

// supportedLine is how README.md, CHANGELOG.md and overlay/README.md state
// the supported releases: one line, made from supportedMinors.
func supportedLine() string {
	return "Supported client-go releases: " + SupportedReleases() + "."
}

// changelogMinorCell is the first cell of a minor's row in CHANGELOG.md's
// table of client-go minors.
func (m clientGoMinor) changelogMinorCell() string {
	if m.prerelease {
		return m.minor + ".x (pre-release)"
	}
	return m.minor + ".x"
}

func TestSupportedReleases_DocumentsMatchTheList(t *testing.T) {
	root := repoRoot(t)
	for _, doc := range []string{"README.md", "CHANGELOG.md", "overlay/README.md"} {
		data, err := os.ReadFile(filepath.Join(root, doc))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), "\n"+supportedLine()+"\n") {
			t.Errorf("%s does not state, on a line of its own:\n%s", doc, supportedLine())
		}
	}
	data, err := os.ReadFile(filepath.Join(root, "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	// The rows of the table headed "| client-go minor |": first cell, and
	// the overlay cell (the third), which starts with the release checked.
	var rows [][]string
	in := false
	for line := range strings.SplitSeq(string(data), "\n") {
		switch {
		case strings.HasPrefix(line, "| client-go minor |"):
			in = true
		case in && strings.HasPrefix(line, "|---"):
		case in && strings.HasPrefix(line, "| "):
			cells := strings.Split(line, " | ")
			rows = append(rows, []string{strings.TrimPrefix(cells[0], "| "), cells[2]})
		default:
			in = false
		}
	}
	var want, got []string
	for _, m := range supportedMinors {
		want = append(want, m.changelogMinorCell()+" | "+m.newest)
	}
	for _, r := range rows {
		newest, _, _ := strings.Cut(r[1], ":")
		got = append(got, r[0]+" | "+strings.Fields(newest + " ?")[0])
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("CHANGELOG.md's table of client-go minors (minor | release checked) differs from supportedMinors (-want +got):\n%s", diff)
	}
}
