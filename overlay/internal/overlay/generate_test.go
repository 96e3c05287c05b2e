package overlay

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// offlineEnv makes every go command fail to fetch anything: no proxy and
// an empty module cache.
func offlineEnv(t *testing.T) []string {
	return []string{"GOPROXY=off", "GOMODCACHE=" + t.TempDir(), "GOFLAGS=-modcacherw"}
}

func TestGenerate_BadInputChangesNothing(t *testing.T) {
	foreign := map[string]string{"client-go/go.mod": "module mine\n", "client-go/main.go": "package main\n"}
	earlier := map[string]string{"client-go/" + MarkerFile: validMarker, "client-go/go.mod": "module k8s.io/client-go\n"}
	tests := []struct {
		name    string
		files   map[string]string // under the parent of the target "client-go"
		opts    func(t *testing.T, o *Options)
		wantErr []string
	}{
		{
			name:    "older client-go",
			opts:    func(t *testing.T, o *Options) { o.ClientGoVersion = "v0.34.13" },
			wantErr: []string{"client-go v0.34.13 is not supported", "v0.35.x", "v0.36.x", "v0.37.x"},
		},
		{
			name:    "newer client-go, over an earlier overlay with force",
			files:   earlier,
			opts:    func(t *testing.T, o *Options) { o.ClientGoVersion = "v0.39.0"; o.Force = true },
			wantErr: []string{"client-go v0.39.0 is not supported"},
		},
		{
			name:    "pre-release",
			opts:    func(t *testing.T, o *Options) { o.ClientGoVersion = "v0.37.0-rc.1" },
			wantErr: []string{"pre-release"},
		},
		{
			name:    "directory the tool did not write",
			files:   foreign,
			wantErr: []string{"not written by kcache-overlay", "refusing to overwrite"},
		},
		{
			name:    "directory the tool did not write, with force",
			files:   foreign,
			opts:    func(t *testing.T, o *Options) { o.Force = true },
			wantErr: []string{"not written by kcache-overlay"},
		},
		{
			name:    "a file where the directory should be",
			files:   map[string]string{"client-go": "x"},
			opts:    func(t *testing.T, o *Options) { o.Force = true },
			wantErr: []string{"not a directory"},
		},
		{
			name:    "earlier overlay without force",
			files:   earlier,
			wantErr: []string{"pass -force"},
		},
		{
			name:    "client-go unreachable",
			files:   earlier,
			opts:    func(t *testing.T, o *Options) { o.Force = true; o.Env = offlineEnv(t) },
			wantErr: []string{"getting client-go", "k8s.io/client-go@v0.37.2", "GOPROXY=off"},
		},
		{
			name: "kcache version unreachable",
			opts: func(t *testing.T, o *Options) {
				o.KcacheDir, o.KcacheVersion = "", "v9.9.9"
				o.Env = offlineEnv(t)
			},
			wantErr: []string{"getting kcache's source", "github.com/kcache/cache@v9.9.9"},
		},
		{
			name:    "kcache directory that is not kcache",
			opts:    func(t *testing.T, o *Options) { o.KcacheDir = t.TempDir() },
			wantErr: []string{"kcache source", "go.mod"},
		},
		{
			name:    "no output directory",
			opts:    func(t *testing.T, o *Options) { o.Out = "" },
			wantErr: []string{"no output directory"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			parent := t.TempDir()
			writeFiles(t, parent, tc.files)
			o := Options{Out: filepath.Join(parent, "client-go"), KcacheDir: repoRoot(t), Check: true}
			if tc.opts != nil {
				tc.opts(t, &o)
			}
			before := snapshot(t, parent)
			_, err := Generate(context.Background(), o)
			if err == nil {
				t.Fatal("Generate succeeded, want an error")
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
			if diff := cmp.Diff(before, snapshot(t, parent)); diff != "" {
				t.Errorf("Generate changed the target's parent (-before +after):\n%s", diff)
			}
		})
	}
}

// TestGenerate_WritesAndForceReplacesAnOverlay generates real overlays
// from client-go in the module cache (downloaded when missing), without
// building them: the e2e test builds one.
func TestGenerate_WritesAndForceReplacesAnOverlay(t *testing.T) {
	parent := t.TempDir()
	target := filepath.Join(parent, "third_party", "client-go")
	o := Options{Out: target, KcacheDir: repoRoot(t)}
	res, err := Generate(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Dir != target || res.Marker.ClientGo != ReferenceClientGoVersion || !strings.HasPrefix(res.Marker.Kcache, "devel") {
		t.Fatalf("result = %+v", res)
	}
	onDisk, err := readMarker(target)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(res.Marker, onDisk); diff != "" {
		t.Fatalf("marker on disk (-returned +disk):\n%s", diff)
	}
	stale := filepath.Join(target, "stale.txt")
	writeFiles(t, target, map[string]string{"stale.txt": "from before"})

	if _, err := Generate(context.Background(), o); err == nil || !strings.Contains(err.Error(), "pass -force") {
		t.Fatalf("second run without force: %v", err)
	}
	if _, err := os.Stat(stale); err != nil {
		t.Fatalf("refused run touched the overlay: %v", err)
	}
	o.Force = true
	if _, err := Generate(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Fatalf("forced run kept a file of the old overlay: %v", err)
	}
	if left := stagingLeftovers(t, filepath.Dir(target)); len(left) != 0 {
		t.Fatalf("left behind: %v", left)
	}
	head := header(res.Marker.Kcache, ReferenceClientGoVersion)
	for _, rel := range res.Marker.Generated {
		if !strings.HasSuffix(rel, ".go") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(target, filepath.FromSlash(rel)))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(data), head) {
			t.Errorf("%s does not start with the generated header", rel)
		}
	}
}
