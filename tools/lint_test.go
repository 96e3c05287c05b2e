// Package tools pins the project's developer tools (see go.mod's tool
// directives) and tests lint.sh, the lint gate of `make lint`.
package tools

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// staticcheck is the pinned binary: $STATICCHECK (make lint passes the one
// it built), else built once by TestMain.
var staticcheck string

func TestMain(m *testing.M) {
	if staticcheck = os.Getenv("STATICCHECK"); staticcheck != "" {
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "kcache-lint-test-")
	if err != nil {
		panic(err)
	}
	staticcheck = filepath.Join(dir, "staticcheck")
	// go test puts the go command it runs with first on the tests' PATH.
	out, err := exec.Command("go", "build", "-o", staticcheck, "honnef.co/go/tools/cmd/staticcheck").CombinedOutput()
	code := 1
	if err != nil {
		os.Stderr.Write(out)
	} else {
		code = m.Run()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

const (
	usedFunc   = "package p\n\n// Answer is exported, so it is used.\nfunc Answer() int { return 42 }\n"
	unusedFunc = "package p\n\nfunc unused() int { return 42 }\n"
	// straySum is a go.sum line for a module nobody requires: tidy drops it.
	straySum = "golang.org/x/sync v0.23.0/go.mod h1:sUUOizhqBxiL6pEWpqNLUiaJn1ShEbZ6BBqskPbjZm0=\n"
)

func goMod(path string) string { return "module " + path + "\n\ngo 1.26.0\n" }

func TestLintScript(t *testing.T) {
	cases := map[string]struct {
		files    map[string]string // path under the root -> content
		wantFail bool
		want     []string // substrings of the output
	}{
		"clean module passes": {
			files:    map[string]string{"go.mod": goMod("github.com/kcache/cache"), "p.go": usedFunc},
			want:     []string{"lint: . (github.com/kcache/cache): tidy", "staticcheck ok", "lint: modules checked: 1,"},
			wantFail: false,
		},
		"unused function fails": {
			files:    map[string]string{"go.mod": goMod("github.com/kcache/cache"), "p.go": unusedFunc},
			want:     []string{"p.go:3:6: func unused is unused (U1000)", "lint: FAILED: . (staticcheck)"},
			wantFail: true,
		},
		"stray go.sum line fails": {
			files:    map[string]string{"go.mod": goMod("github.com/kcache/cache"), "go.sum": straySum, "p.go": usedFunc},
			want:     []string{"-golang.org/x/sync v0.23.0/go.mod", "lint: FAILED: . (tidy)"},
			wantFail: true,
		},
		"finding in a nested module fails": {
			files: map[string]string{
				"go.mod":        goMod("github.com/kcache/cache"),
				"p.go":          usedFunc,
				"newmod/go.mod": goMod("github.com/kcache/cache/newmod"),
				"newmod/p.go":   unusedFunc,
			},
			want:     []string{"func unused is unused (U1000)", "lint: FAILED: ./newmod (staticcheck)", "lint: modules checked: 2,"},
			wantFail: true,
		},
		"caches, testdata and foreign modules are skipped": {
			files: map[string]string{
				"go.mod":                       goMod("github.com/kcache/cache"),
				"p.go":                         usedFunc,
				"kas/.cache/m/go.mod":          goMod("github.com/kcache/cache/cached"),
				"kas/.cache/m/p.go":            unusedFunc,
				"testdata/m/go.mod":            goMod("github.com/kcache/cache/fixture"),
				"testdata/m/p.go":              unusedFunc,
				"third_party/client-go/go.mod": goMod("k8s.io/client-go"),
				"third_party/client-go/p.go":   unusedFunc,
			},
			want:     []string{"lint: skip ./third_party/client-go (module k8s.io/client-go is not under github.com/kcache/cache)", "lint: modules checked: 1,"},
			wantFail: false,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			for path, content := range tc.files {
				full := filepath.Join(root, path)
				if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			cmd := exec.Command("bash", "lint.sh", root)
			cmd.Env = append(os.Environ(), "STATICCHECK="+staticcheck, "GOWORK=off", "GOPROXY=off")
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			switch {
			case err == nil && tc.wantFail:
				t.Errorf("lint.sh passed, want a failure; output:\n%s", out)
			case err != nil && !errors.As(err, &exit):
				t.Fatalf("running lint.sh: %v", err)
			case err != nil && !tc.wantFail:
				t.Errorf("lint.sh failed (%v), want a pass; output:\n%s", err, out)
			case err != nil && exit.ExitCode() != 1:
				t.Errorf("lint.sh exit code %d, want 1 for findings; output:\n%s", exit.ExitCode(), out)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("output lacks %q; output:\n%s", w, out)
				}
			}
		})
	}
}
