package overlay

import (
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

func TestKcacheQueryFor_FollowsTheToolsOwnVersion(t *testing.T) {
	tests := []struct {
		name string
		main debug.Module
		want string
	}{
		{name: "release", main: debug.Module{Path: toolModule, Version: "v1.2.3"}, want: "v1.2.3"},
		{name: "pseudo-version", main: debug.Module{Path: toolModule, Version: "v0.0.0-20260101120000-0123456789ab"}, want: "0123456789ab"},
		{name: "built in a checkout", main: debug.Module{Path: toolModule, Version: "(devel)"}, want: ""},
		{name: "dirty checkout", main: debug.Module{Path: toolModule, Version: "v1.2.4-0.20260101120000-0123456789ab+dirty"}, want: ""},
		{name: "no version", main: debug.Module{Path: toolModule}, want: ""},
		{name: "another main module", main: debug.Module{Path: "example.com/x", Version: "v1.0.0"}, want: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := kcacheQueryFor(tc.main); got != tc.want {
				t.Fatalf("kcacheQueryFor(%+v) = %q, want %q", tc.main, got, tc.want)
			}
		})
	}
}

func TestFindCheckout_PassesOverNestedModules(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"go.mod":             "module github.com/kcache/cache\n",
		"overlay/go.mod":     "module github.com/kcache/cache/overlay\n",
		"overlay/cmd/x/x.go": "package main\n",
		"elsewhere/go.mod":   "module example.com/other\n",
		"elsewhere/pkg/p.go": "package p\n",
	})
	for _, start := range []string{"overlay/cmd/x", "elsewhere/pkg", "."} {
		got, ok := findCheckout(filepath.Join(root, start))
		if !ok || got != root {
			t.Errorf("findCheckout(%s) = %q, %v; want %q", start, got, ok, root)
		}
	}
	if got, ok := findCheckout(t.TempDir()); ok {
		t.Errorf("found a checkout at %s outside any", got)
	}
}

func TestCheckKcacheRoot_WantsKcachesModuleAndTheReplacedFiles(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]string
		wantErr string
	}{
		{name: "kcache", files: map[string]string{"go.mod": "module github.com/kcache/cache\n", "features.go": "", "getter.go": ""}},
		{name: "no go.mod", files: map[string]string{"features.go": ""}, wantErr: "no such file"},
		{name: "another module", files: map[string]string{"go.mod": "module k8s.io/client-go\n"}, wantErr: "declares module k8s.io/client-go"},
		{name: "seam file missing", files: map[string]string{"go.mod": "module github.com/kcache/cache\n", "features.go": ""}, wantErr: "getter.go, which is missing"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, tc.files)
			err := checkKcacheRoot(dir)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error = %v, want one saying %q", err, tc.wantErr)
			}
		})
	}
}

func TestDescribeCheckout_SaysDevel(t *testing.T) {
	if got := describeCheckout(t.TempDir()); got != "devel" {
		t.Errorf("outside git: %q, want devel", got)
	}
	if got := describeCheckout(repoRoot(t)); !strings.HasPrefix(got, "devel ") || len(got) <= len("devel ") {
		t.Errorf("in the checkout: %q, want devel and a description", got)
	}
}
