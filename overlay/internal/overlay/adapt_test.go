package overlay

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// testAdapter replaces New, whose signature differs in the test release.
var testAdapter = adapter{
	replaced: []string{"Batcher", "New", "Queue.PopBatch"},
	files: map[string]string{"adapter.go": `package cache

// New has the release's signature.
func New(s Store, opts Options) *Queue { return overlayNew(s, opts) }

// Batcher has the release's method.
type Batcher interface {
	PopBatch(n int) int
}

// PopBatch has the release's signature.
func (q *Queue) PopBatch(n int) int { return q.overlayPopBatch(n, 0) }
`},
}

// adaptTestdata copies testdata/adapt/kcache into a new package directory
// and adapts it to testdata/adapt/release with ad.
func adaptTestdata(t *testing.T, ad adapter) (string, adaptation, error) {
	t.Helper()
	kc, err := checkSource(filepath.Join("testdata", "adapt", "kcache"), cachePath, nil)
	if err != nil || len(kc.errors) > 0 {
		t.Fatalf("testdata kcache: %v %v", err, kc.errors)
	}
	rel, err := checkSource(filepath.Join("testdata", "adapt", "release"), cachePath, nil)
	if err != nil || len(rel.errors) > 0 {
		t.Fatalf("testdata release: %v %v", err, rel.errors)
	}
	newest := packageAPI(kc.pkg)
	delete(newest, "KcacheOnly") // kcache's own, not the newest release's
	dir := filepath.Join(t.TempDir(), "cache")
	src, err := os.ReadFile(filepath.Join("testdata", "adapt", "kcache", "store.go"))
	if err != nil {
		t.Fatal(err)
	}
	writeFiles(t, dir, map[string]string{"store.go": string(src), "go.mod": "module example.com/cache\n\ngo 1.26\n"})
	res, err := adaptPackage(dir, nil, rel.pkg, newest, ad, "// head\n\n", "v0.1.0")
	return dir, res, err
}

func TestAdaptPackage_PresentsTheReleaseAPIAndKeepsTheLibraryWorking(t *testing.T) {
	dir, res, err := adaptTestdata(t, testAdapter)
	if err != nil {
		t.Fatal(err)
	}
	wantNotes := []string{
		"hidden: Batcher (declared by the adapter)",
		"hidden: Checker (not in this release)",
		"hidden: Fresh (not in this release)",
		"hidden: Journal.Bookmark (not in this release)",
		"hidden: New (declared by the adapter)",
		"hidden: field Options.Name (not in this release)",
		"hidden: Queue.Done (not in this release)",
		"hidden: Queue.Name (not in this release)",
		"hidden: Queue.PopBatch (declared by the adapter)",
		"removed: unexported method Sealed.sealed (the release's interface can be implemented elsewhere)",
		"removed: method Store.Bookmark; the library calls it only if the value has it",
		"added: adapter.go",
	}
	if diff := cmp.Diff(wantNotes, res.notes); diff != "" {
		t.Errorf("notes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"tools/cache/adapter.go", "tools/cache/store.go"}, res.changed); diff != "" {
		t.Errorf("changed files (-want +got):\n%s", diff)
	}
	got, err := os.ReadFile(filepath.Join(dir, "store.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"type Options struct {\n\tSize        int\n\tLogger      string\n\toverlayName string\n}",
		"func (q *Queue) Sync(rv string) { overlayStoreBookmark(q.store)(rv) }",
		"func overlayStoreBookmark(x any) func(rv string) {",
		"// Describe says how the queue was configured.", // comments stay
	} {
		if !strings.Contains(string(got), want) {
			t.Errorf("adapted store.go lacks %q:\n%s", want, got)
		}
	}
	for _, gone := range []string{"var _ overlayChecker", "var _ Named"} {
		if strings.Contains(string(got), gone) {
			t.Errorf("the assertion %q, which no longer holds, stayed:\n%s", gone, got)
		}
	}
	behaviour, err := os.ReadFile(filepath.Join("testdata", "adapt", "behaviour_test.go.txt"))
	if err != nil {
		t.Fatal(err)
	}
	writeFiles(t, dir, map[string]string{"behaviour_test.go": string(behaviour)})
	if out, err := (goTool{bin: "go"}).run(context.Background(), dir, "test", "-count=1", "."); err != nil {
		t.Fatalf("the adapted package does not pass its test: %v\n%s", err, out)
	}
}

func TestAdaptPackage_ReportsWhatTheAdapterMisses(t *testing.T) {
	_, _, err := adaptTestdata(t, adapter{})
	if err == nil {
		t.Fatal("adapting without the adapter succeeded")
	}
	for _, want := range []string{
		"does not present client-go v0.1.0's API",
		"changed: func New(s Store, opts Options, extra ...int) *Queue\n    was: func New(s Store, opts Options) *Queue",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}
