package overlay

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const apiBase = `package cache

// Store holds objects.
type Store interface {
	Add(obj interface{}) error
	lockLocked()
}

type Reflector struct {
	Name string
	mu   int
}

func (r *Reflector) Run(stop <-chan struct{}) { r.mu++ }

func (r *Reflector) helper() {}

func NewStore(keyFunc KeyFunc) Store { return nil }

type KeyFunc func(obj interface{}) (string, error)

const DefaultLimit = 10

var ErrClosed error

func unexported() {}
`

// apiOfSource type-checks one file as package cache and returns its API.
func apiOfSource(t *testing.T, src string) map[string]string {
	t.Helper()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"a.go": src, "a_test.go": "package cache\n\nfunc TestOnly() {}\n"})
	cp, err := checkSource(dir, cachePath, nil)
	if err != nil || len(cp.errors) > 0 {
		t.Fatalf("checking %s: %v %v", filepath.Base(dir), err, cp.errors)
	}
	return packageAPI(cp.pkg)
}

func TestPackageAPI_SeesOnlyWhatImportersSee(t *testing.T) {
	tests := []struct {
		name string
		edit func(string) string
		want []string
	}{
		{name: "same file", edit: func(s string) string { return s }},
		{
			name: "comments, bodies, values and unexported parts change",
			edit: func(s string) string {
				s = strings.Replace(s, "// Store holds objects.", "// Store keeps things.", 1)
				s = strings.Replace(s, "{ r.mu++ }", "{}", 1)
				s = strings.Replace(s, "DefaultLimit = 10", "DefaultLimit = 20", 1)
				s = strings.Replace(s, "mu   int", "mu   string\n\tlock bool", 1)
				s = strings.Replace(s, "lockLocked()", "lockLocked(int)", 1)
				return s + "\nfunc another() {}\n"
			},
		},
		{
			name: "signature changes",
			edit: func(s string) string {
				return strings.Replace(s, "Run(stop <-chan struct{})", "Run(ctx interface{})", 1)
			},
			want: []string{"changed: func (*Reflector) Run(ctx interface{})\n    was: func (*Reflector) Run(stop <-chan struct{})"},
		},
		{
			name: "exported field and promoted method added",
			edit: func(s string) string {
				s = strings.Replace(s, "Name string", "Name string\n\tAge int\n\tembedded", 1)
				return s + "\ntype embedded struct{}\n\nfunc (embedded) Stop() {}\n"
			},
			want: []string{
				"added: func (Reflector) Stop()",
				"changed: type Reflector struct{Name string; Age int}\n    was: type Reflector struct{Name string}",
			},
		},
		{
			name: "function removed",
			edit: func(s string) string {
				return strings.Replace(s, "func NewStore(keyFunc KeyFunc) Store { return nil }", "", 1)
			},
			want: []string{"missing: func NewStore(keyFunc KeyFunc) Store"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want, got := apiOfSource(t, apiBase), apiOfSource(t, tc.edit(apiBase))
			var diff []string
			for key, w := range want {
				if g, ok := got[key]; !ok {
					diff = append(diff, "missing: "+w)
				} else if g != w {
					diff = append(diff, "changed: "+g+"\n    was: "+w)
				}
			}
			for key, g := range got {
				if _, ok := want[key]; !ok {
					diff = append(diff, "added: "+g)
				}
			}
			if diff := cmp.Diff(tc.want, sortedCopy(diff)); diff != "" {
				t.Fatalf("API difference (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSameAPI_AllowsOnlyKcachesOwnAdditions(t *testing.T) {
	release := map[string]string{"A": "func A()", "B": "type B int"}
	newest := map[string]string{"A": "func A()", "B": "type B int", "C": "func C()"}
	tests := []struct {
		name    string
		got     map[string]string
		wantErr []string
	}{
		{name: "same", got: map[string]string{"A": "func A()", "B": "type B int"}},
		{name: "kcache's own addition", got: map[string]string{"A": "func A()", "B": "type B int", "K": "func K()"}},
		{name: "newer release's addition", got: map[string]string{"A": "func A()", "B": "type B int", "C": "func C()"}, wantErr: []string{"added (from a newer release): func C()"}},
		{name: "missing and changed", got: map[string]string{"B": "type B string"}, wantErr: []string{"missing: func A()", "changed: type B string\n    was: type B int"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := sameAPI(cacheDir, tc.got, release, newest, "v0.1.0")
			if len(tc.wantErr) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
		})
	}
}

// sortedCopy returns s sorted, nil when empty.
func sortedCopy(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	out := append([]string{}, s...)
	slices.Sort(out)
	return out
}
