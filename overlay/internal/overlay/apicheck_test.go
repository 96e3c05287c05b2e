package overlay

import (
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

func TestDiffAPI_SeesOnlyExportedChanges(t *testing.T) {
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
			want: []string{"changed: func (r *Reflector) Run(ctx interface{})\n    was: func (r *Reflector) Run(stop <-chan struct{})"},
		},
		{
			name: "exported field and method added",
			edit: func(s string) string {
				s = strings.Replace(s, "Name string", "Name string\n\tAge int", 1)
				return s + "\nfunc (r *Reflector) Stop() {}\n"
			},
			want: []string{
				"added: func (r *Reflector) Stop()",
				"changed: type Reflector struct { Name string Age int }\n    was: type Reflector struct { Name string }",
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
			ref, dir := t.TempDir(), t.TempDir()
			writeFiles(t, ref, map[string]string{"a.go": apiBase, "a_test.go": "package cache\n\nfunc TestOnly() {}\n"})
			writeFiles(t, dir, map[string]string{"a.go": tc.edit(apiBase)})
			want, err := exportedAPI(ref)
			if err != nil {
				t.Fatal(err)
			}
			got, err := exportedAPI(dir)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, diffAPI(want, got)); diff != "" {
				t.Fatalf("diffAPI (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCompareAPIs_NamesTheVersionAndPackage(t *testing.T) {
	ref, dir := t.TempDir(), t.TempDir()
	writeFiles(t, ref, map[string]string{"tools/cache/a.go": apiBase, "tools/cache/testing/f.go": "package testing\n\nfunc NewFake() {}\n"})
	writeFiles(t, dir, map[string]string{"tools/cache/a.go": apiBase, "tools/cache/testing/f.go": "package testing\n\nfunc NewFake(n int) {}\n"})
	if err := compareAPIs(ref, ref, "v0.37.1"); err != nil {
		t.Fatalf("same tree: %v", err)
	}
	err := compareAPIs(ref, dir, "v0.37.1")
	if err == nil {
		t.Fatal("a changed testing API was accepted")
	}
	for _, want := range []string{"client-go v0.37.1 is not supported", "tools/cache/testing", "NewFake(n int)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}
