package overlay

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRewriteImports_MovesKcachePathsAndNothingElse(t *testing.T) {
	tests := []struct {
		name    string
		src     string
		want    string
		wantErr string
	}{
		{
			name: "no kcache import",
			src:  "package cache\n\nimport \"fmt\" // kcache \"github.com/kcache/cache\"\n",
			want: "package cache\n\nimport \"fmt\" // kcache \"github.com/kcache/cache\"\n",
		},
		{
			name: "root package, aliased, in a group",
			src:  "package testing\n\nimport (\n\t\"fmt\"\n\n\tkc \"github.com/kcache/cache\"\n)\n\nvar _ = fmt.Sprint(kc.Indexers{})\n",
			want: "package testing\n\nimport (\n\t\"fmt\"\n\n\tkc \"k8s.io/client-go/tools/cache\"\n)\n\nvar _ = fmt.Sprint(kc.Indexers{})\n",
		},
		{
			name: "testing package and root package",
			src:  "package x\n\nimport (\n\t\"github.com/kcache/cache\"\n\tfcache \"github.com/kcache/cache/testing\"\n)\n",
			want: "package x\n\nimport (\n\t\"k8s.io/client-go/tools/cache\"\n\tfcache \"k8s.io/client-go/tools/cache/testing\"\n)\n",
		},
		{
			name: "value-sharing engine",
			src:  "package cache\n\nimport \"github.com/kcache/cache/internal/dedup\"\n",
			want: "package cache\n\nimport \"k8s.io/client-go/tools/cache/internal/dedup\"\n",
		},
		{
			name:    "kcache package the overlay does not carry",
			src:     "package x\n\nimport _ \"github.com/kcache/cache/internal/x\"\n",
			wantErr: "does not carry",
		},
		{
			name:    "not Go",
			src:     "packge x",
			wantErr: "parsing",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := rewriteImports("f.go", []byte(tc.src))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestSkipFromClientGo_DropsOnlyTheReplacedPackages(t *testing.T) {
	tests := []struct {
		rel   string
		isDir bool
		want  bool
	}{
		{rel: "tools/cache/shared_informer.go", want: true},
		{rel: "tools/cache/shared_informer_test.go", want: true},
		{rel: "tools/cache/OWNERS", want: true},
		{rel: "tools/cache/testing", isDir: true, want: true},
		{rel: "tools/cache/internal/dedup", isDir: true, want: true},
		{rel: "tools/cache", isDir: true, want: false},
		{rel: "tools/cache/synctrack", isDir: true, want: false},
		{rel: "tools/cache/synctrack/synctrack.go", want: false},
		{rel: "tools/record/event.go", want: false},
		{rel: "informers/factory.go", want: false},
		{rel: "go.mod", want: false},
	}
	for _, tc := range tests {
		t.Run(tc.rel, func(t *testing.T) {
			if got := skipFromClientGo(tc.rel, tc.isDir); got != tc.want {
				t.Fatalf("skipFromClientGo(%q, %v) = %v, want %v", tc.rel, tc.isDir, got, tc.want)
			}
		})
	}
}

func TestPlaceKcacheFiles_CopiesNonTestFilesWithTheHeader(t *testing.T) {
	src := t.TempDir()
	writeFiles(t, src, map[string]string{
		"a.go":          "package cache\n",
		"a_test.go":     "package cache\n",
		"features.go":   "package cache\n",
		"notes.txt":     "x",
		"sub/nested.go": "package sub\n",
		"b.go":          "package cache\n\nimport _ \"github.com/kcache/cache/testing\"\n",
	})
	dst := filepath.Join(t.TempDir(), "tools", "cache")
	names, err := placeKcacheFiles(src, dst, "// head\n\n", []string{"features.go"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a.go", "b.go"}, names); diff != "" {
		t.Fatalf("names (-want +got):\n%s", diff)
	}
	want := map[string]string{
		"./":   "",
		"a.go": "// head\n\npackage cache\n",
		"b.go": "// head\n\npackage cache\n\nimport _ \"k8s.io/client-go/tools/cache/testing\"\n",
	}
	if diff := cmp.Diff(want, snapshot(t, dst)); diff != "" {
		t.Fatalf("written (-want +got):\n%s", diff)
	}
}

func TestCopyClientGo_LeavesOutTheCachePackageAndKeepsModes(t *testing.T) {
	src := t.TempDir()
	writeFiles(t, src, map[string]string{
		"go.mod":                             "module k8s.io/client-go\n",
		"tools/cache/store.go":               "package cache\n",
		"tools/cache/store_test.go":          "package cache\n",
		"tools/cache/testing/fake.go":        "package testing\n",
		"tools/cache/synctrack/synctrack.go": "package synctrack\n",
		"informers/factory.go":               "package informers\n",
		"hack/run.sh":                        "#!/bin/sh\n",
	})
	if err := os.Chmod(filepath.Join(src, "hack", "run.sh"), 0o555); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(src, "go.mod"), 0o444); err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	if err := copyClientGo(src, dst); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"./": "", "go.mod": "module k8s.io/client-go\n",
		"tools/": "", "tools/cache/": "", "tools/cache/synctrack/": "",
		"tools/cache/synctrack/synctrack.go": "package synctrack\n",
		"informers/":                         "", "informers/factory.go": "package informers\n",
		"hack/": "", "hack/run.sh": "#!/bin/sh\n",
	}
	if diff := cmp.Diff(want, snapshot(t, dst)); diff != "" {
		t.Fatalf("copied (-want +got):\n%s", diff)
	}
	for name, mode := range map[string]os.FileMode{"go.mod": 0o644, "hack/run.sh": 0o755} {
		info, err := os.Stat(filepath.Join(dst, filepath.FromSlash(name)))
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode().Perm() != mode {
			t.Errorf("%s has mode %v, want %v", name, info.Mode().Perm(), mode)
		}
	}
}
