package overlay

import (
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
		{version: "v0.34.13", wantErr: "not supported; supported are v0.35.x (tested: v0.35.10), v0.36.x (tested: v0.36.6), v0.37.x (tested: v0.37.2), v0.38.x and its pre-releases (not released yet; tested: v0.38.0-beta.0)"},
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
