package overlay

import (
	"strings"
	"testing"
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
		{version: "v0.34.13", wantErr: "not supported; supported are the releases of v0.35.x (tested: v0.35.10), v0.36.x (tested: v0.36.6), v0.37.x (tested: v0.37.2)"},
		{version: "v0.38.0", wantErr: "not supported"},
		{version: "v1.37.2", wantErr: "not supported"},
		{version: "v0.37.0-rc.1", wantErr: "pre-release"},
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
