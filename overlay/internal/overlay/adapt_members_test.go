package overlay

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestAddMembers_AddsAMethodAndAFieldWithTheirImport(t *testing.T) {
	dir := t.TempDir()
	src := `package cache

import "time"

// Informer runs.
type Informer interface {
	Run()
}

// Options configure.
type Options struct {
	Period time.Duration
}
`
	if err := os.WriteFile(filepath.Join(dir, "informer.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	ad := adapter{
		members: []typeMember{
			{typeName: "Informer", text: "// SetShard picks a shard.\nSetShard(s sharding.Selector) error"},
			{typeName: "Options", text: "Shard sharding.Selector"},
		},
		imports: []string{"k8s.io/apimachinery/pkg/sharding", "k8s.io/apimachinery/pkg/runtime/schema"},
	}
	changed, notes, err := addMembers(dir, ad)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"informer.go"}, changed); diff != "" {
		t.Errorf("changed (-want +got):\n%s", diff)
	}
	wantNotes := []string{
		"added: member of Informer: SetShard(s sharding.Selector) error",
		"added: member of Options: Shard sharding.Selector",
	}
	if diff := cmp.Diff(wantNotes, notes); diff != "" {
		t.Errorf("notes (-want +got):\n%s", diff)
	}
	got, err := os.ReadFile(filepath.Join(dir, "informer.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"import \"k8s.io/apimachinery/pkg/sharding\"\n",
		"\tRun()\n\n\t// SetShard picks a shard.\n\tSetShard(s sharding.Selector) error\n}",
		"\tPeriod time.Duration\n\n\tShard sharding.Selector\n}",
	} {
		if !strings.Contains(string(got), want) {
			t.Errorf("result lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(string(got), "runtime/schema") {
		t.Errorf("an import no member uses was added:\n%s", got)
	}
}

func TestAddMembers_FailsForATypeKcacheDoesNotDeclare(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.go"), []byte("package cache\n\ntype A struct{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err := addMembers(dir, adapter{members: []typeMember{{typeName: "Missing", text: "X int"}}})
	if err == nil || !strings.Contains(err.Error(), "kcache declares no struct or interface type Missing") {
		t.Errorf("error %v", err)
	}
}
