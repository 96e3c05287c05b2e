package overlay

import (
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
