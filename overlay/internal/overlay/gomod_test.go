package overlay

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRequirementBumps_RaisesOnlyWhatKcacheCodeNeeds(t *testing.T) {
	const clientGo = "module k8s.io/client-go\n\ngo 1.26.0\n\nrequire (\n\tk8s.io/apimachinery v0.37.2\n\tk8s.io/klog/v2 v2.140.0\n\tgithub.com/google/go-cmp v0.7.0\n)\n"
	tests := []struct {
		name      string
		kcache    string
		imports   []string
		wantBumps []string
		wantGo    string
	}{
		{
			name:    "same versions",
			kcache:  "module github.com/kcache/cache\n\ngo 1.26.0\n\nrequire (\n\tk8s.io/apimachinery v0.37.2\n\tk8s.io/klog/v2 v2.140.0\n)\n",
			imports: []string{"k8s.io/apimachinery/pkg/runtime", "k8s.io/klog/v2"},
		},
		{
			name:    "older versions",
			kcache:  "module github.com/kcache/cache\n\ngo 1.25\n\nrequire k8s.io/klog/v2 v2.100.0\n",
			imports: []string{"k8s.io/klog/v2"},
		},
		{
			name:      "newer imported module",
			kcache:    "module github.com/kcache/cache\n\ngo 1.26.0\n\nrequire (\n\tk8s.io/apimachinery v0.37.3\n\tk8s.io/klog/v2 v2.150.0\n)\n",
			imports:   []string{"k8s.io/apimachinery/pkg/runtime"},
			wantBumps: []string{"k8s.io/apimachinery@v0.37.3"},
		},
		{
			name:    "newer module only tests use",
			kcache:  "module github.com/kcache/cache\n\ngo 1.26.0\n\nrequire github.com/google/go-cmp v0.8.0\n",
			imports: []string{"k8s.io/klog/v2"},
		},
		{
			name:      "module client-go lacks, and a newer go",
			kcache:    "module github.com/kcache/cache\n\ngo 1.27\n\nrequire example.com/lib v1.0.0 // indirect\n",
			imports:   []string{"example.com/lib/sub"},
			wantBumps: []string{"example.com/lib@v1.0.0"},
			wantGo:    "1.27",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			bumps, goVersion, err := requirementBumps([]byte(tc.kcache), []byte(clientGo), tc.imports)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantBumps, bumps); diff != "" {
				t.Errorf("bumps (-want +got):\n%s", diff)
			}
			if goVersion != tc.wantGo {
				t.Errorf("go version = %q, want %q", goVersion, tc.wantGo)
			}
		})
	}
}

func TestWithoutPinned_KeepsOlderMinorsOnTheirKubernetesModules(t *testing.T) {
	bumps := []string{"github.com/google/go-cmp@v0.7.0", "k8s.io/apimachinery@v0.37.2", "k8s.io/utils@v0.0.0-20260626114624-be93311217bd"}
	tests := []struct {
		version string
		want    []string
	}{
		{version: "v0.37.2", want: bumps},
		{version: "v0.37.0", want: bumps},
		{version: "v0.36.6", want: []string{"github.com/google/go-cmp@v0.7.0"}},
		{version: "v0.35.0", want: []string{"github.com/google/go-cmp@v0.7.0"}},
	}
	for _, tc := range tests {
		t.Run(tc.version, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, withoutPinned(bumps, tc.version)); diff != "" {
				t.Errorf("withoutPinned (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCheckPinned_RefusesARaisedKubernetesModule(t *testing.T) {
	const before = "module k8s.io/client-go\n\ngo 1.24.0\n\nrequire (\n\tk8s.io/apimachinery v0.35.10\n\tgithub.com/google/go-cmp v0.6.0\n)\n"
	tests := []struct {
		name, version, after, wantErr string
	}{
		{name: "unchanged", version: "v0.35.10", after: before},
		{name: "other module raised", version: "v0.35.10", after: strings.Replace(before, "go-cmp v0.6.0", "go-cmp v0.7.0", 1)},
		{name: "apimachinery raised on an older minor", version: "v0.35.10", after: strings.Replace(before, "apimachinery v0.35.10", "apimachinery v0.37.2", 1),
			wantErr: "kcache's sources need k8s.io/apimachinery v0.37.2, newer than client-go v0.35.10 requires (v0.35.10)"},
		{name: "newest minor may raise", version: "v0.37.2", after: strings.Replace(before, "apimachinery v0.35.10", "apimachinery v0.37.9", 1)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, map[string]string{"go.mod": tc.after})
			err := checkPinned([]byte(before), dir, tc.version)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatal(err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error = %v, want one saying %q", err, tc.wantErr)
			}
		})
	}
}
