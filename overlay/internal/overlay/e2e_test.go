package overlay

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"go/parser"
	"go/token"
	goversion "go/version"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/semver"
)

// e2eEnv switches on TestOverlayE2E, which builds, vets and tests a real
// overlay (minutes on two cores; `make overlay-test` sets it).
const e2eEnv = "KCACHE_OVERLAY_E2E"

// e2eRaceEnv, when set to 1, runs client-go's package tests with -race.
const e2eRaceEnv = "KCACHE_OVERLAY_E2E_RACE"

// e2eVersionsEnv, if set, lists the client-go releases TestOverlayE2E
// writes overlays for (comma-separated); by default the newest release of
// every supported minor.
const e2eVersionsEnv = "KCACHE_OVERLAY_E2E_VERSIONS"

// TestOverlayE2E generates an overlay from this checkout for each tested
// client-go release (e2eVersions), then, with kcache as its tools/cache:
//   - builds the whole module (go build ./...);
//   - vets every package whose code or tests import tools/cache;
//   - runs the tests of those packages, of informers/... and listers/...,
//     and of packages whose tests use informers or listers, plus test
//     files of ours dropped into tools/cache (gates from client-go's
//     registry; client-go's Getter; an informer syncs and stops; on v0.35
//     a Store without Bookmark),
//     and reports the counts and the time per release.
//
// The go commands run with -trimpath, so the build cache serves the
// packages that did not change since the last run, wherever the checkout
// and so the overlay is (see e2eDir).
func TestOverlayE2E(t *testing.T) {
	if os.Getenv(e2eEnv) != "1" {
		t.Skipf("set %s=1 to build and test a real overlay", e2eEnv)
	}
	for _, version := range e2eVersions() {
		t.Run(version, func(t *testing.T) {
			start := time.Now()
			if tc := ToolchainFor(version); tc != "" && goversion.Compare(runtime.Version(), tc) < 0 {
				rerunOnToolchain(t, version, tc)
				t.Logf("client-go %s: run on %s in %v", version, tc, time.Since(start).Round(time.Second))
				return
			}
			overlayE2E(t, version)
			t.Logf("client-go %s: overlay written, built, vetted and tested in %v", version, time.Since(start).Round(time.Second))
		})
	}
}

// rerunOnToolchain runs TestOverlayE2E for version alone in a test binary
// built by Go toolchain tc: the release needs a newer Go than this one, and
// Generate reads what it compiles. The child's output is logged here.
func rerunOnToolchain(t *testing.T, version, tc string) {
	cmd := exec.Command("go", "test", "-count=1", "-run", "^TestOverlayE2E$", "-v", "-timeout", "50m", ".")
	cmd.Env = append(os.Environ(), "GOTOOLCHAIN="+tc, e2eVersionsEnv+"="+version, e2eEnv+"=1")
	out, err := cmd.CombinedOutput()
	for line := range strings.SplitSeq(strings.TrimRight(string(out), "\n"), "\n") {
		t.Log("| " + line)
	}
	if err != nil {
		t.Fatalf("TestOverlayE2E for %s on %s: %v", version, tc, err)
	}
}

// e2eVersions are the releases TestOverlayE2E tests.
func e2eVersions() []string {
	if v := os.Getenv(e2eVersionsEnv); v != "" {
		return strings.Split(v, ",")
	}
	var out []string
	for _, m := range supportedMinors {
		out = append(out, m.newest)
	}
	return out
}

// e2eTestFiles are our test files dropped into the overlay's tools/cache
// for a release, by testdata name.
func e2eTestFiles(version string) map[string]string {
	files := map[string]string{
		"getter_test.go.txt":        "tools/cache/overlay_getter_test.go",
		"informer_sync_test.go.txt": "tools/cache/overlay_informer_sync_test.go",
	}
	if semver.MajorMinor(version) == "v0.35" {
		files["gates_v035_test.go.txt"] = "tools/cache/overlay_gates_test.go"
		files["narrow_store_v035_test.go.txt"] = "tools/cache/overlay_narrow_store_test.go"
	} else {
		files["gates_test.go.txt"] = "tools/cache/overlay_gates_test.go"
	}
	if semver.Compare(version, "v0.38.0-0") >= 0 {
		files["shard_v038_test.go.txt"] = "tools/cache/overlay_shard_test.go"
	}
	return files
}

// overlayE2E is TestOverlayE2E for one client-go release.
func overlayE2E(t *testing.T, version string) {
	ctx := context.Background()
	dir := e2eDir(t, version)
	start := time.Now()
	res, err := Generate(ctx, Options{Out: dir, ClientGoVersion: version, KcacheDir: repoRoot(t), Force: true, Check: true, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("generated %s (kcache %s, client-go %s, %d adaptations) in %v", dir, res.Marker.Kcache, res.Marker.ClientGo, len(res.Marker.Adapted), time.Since(start).Round(time.Second))
	checkOverlayTree(t, dir, res.Marker)
	for name, dst := range e2eTestFiles(version) {
		data, err := os.ReadFile(filepath.Join("testdata", "e2e", name))
		if err != nil {
			t.Fatal(err)
		}
		writeFiles(t, dir, map[string]string{dst: string(data)})
	}

	if dropped := dropUnservedImporters(t, dir); len(dropped) > 0 {
		t.Logf("left out, as they import %s, which the module proxy does not serve (%d): %s", strings.Join(unservedModules, ", "), len(dropped), strings.Join(dropped, ", "))
	}

	// -trimpath keeps the overlay's directory out of the build cache's
	// keys: a fresh clone (CI's) writes the overlay elsewhere and still
	// reuses every client-go package that kcache's code does not reach.
	g := goTool{bin: "go", env: []string{"GOFLAGS=" + strings.TrimSpace(os.Getenv("GOFLAGS")+" -trimpath")}}
	run := func(args ...string) []byte {
		t.Helper()
		start := time.Now()
		out, err := g.run(ctx, dir, args...)
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		t.Logf("go %s: %v", strings.Join(args[:2], " "), time.Since(start).Round(time.Second))
		return out
	}
	run("build", "./...")

	vetPkgs, testPkgs := selectPackages(t, run("list", "-e", "-f",
		`{{.ImportPath}}|{{join .Imports " "}} {{join .TestImports " "}} {{join .XTestImports " "}}|{{len .TestGoFiles}} {{len .XTestGoFiles}}`, "./..."))
	t.Logf("vetting %d packages that import tools/cache", len(vetPkgs))
	run(append([]string{"vet"}, vetPkgs...)...)

	args := []string{"test", "-count=1", "-json"}
	if os.Getenv(e2eRaceEnv) == "1" {
		args = append(args, "-race")
	}
	start = time.Now()
	out, testErr := g.run(ctx, dir, append(args, testPkgs...)...)
	sum := summarize(out)
	t.Logf("client-go %s tests with the overlay (%d packages with tests): %d passed, %d failed, %d skipped, in %v",
		version, sum.packages, sum.passed, sum.failed, sum.skipped, time.Since(start).Round(time.Second))
	for _, line := range sum.perPackage {
		t.Log("  " + line)
	}
	for _, line := range sum.failureOutput {
		t.Log("  | " + line)
	}
	if testErr != nil || sum.failed > 0 || sum.passed == 0 {
		t.Fatalf("client-go's tests failed with the overlay: %v\nfailed: %s", testErr, strings.Join(sum.failures, ", "))
	}
	want := []string{"TestOverlay_GatesComeFromClientGosRegistry", "TestOverlay_ListWatchFromClientSendsClientGosRequests", "TestOverlay_InformerSyncsAndStops"}
	if semver.MajorMinor(version) == "v0.35" {
		want = append(want, "TestOverlay_NarrowStoreWorksInTheLibrary")
	}
	if semver.Compare(version, "v0.38.0-0") >= 0 {
		want = append(want, "TestOverlay_NewShardedListWatchKeepsClientGosContract", "TestOverlay_SetShardSelectorRestrictsTheInformerBeforeItRuns", "TestOverlay_GVRSyncResultNamesTheUnsyncedResources")
	}
	for _, name := range want {
		if !slices.Contains(sum.passedNames, name) {
			t.Errorf("%s did not run and pass", name)
		}
	}
}

// unservedModules are modules a client-go release imports of which the
// module proxy serves no version: client-go v0.38.0-beta.0's package
// k8s.io/client-go/ktesting and some of its tests (discovery, restmapper,
// openapi, tools/watch, tools/events, metadatainformer) import
// k8s.io/ktesting v0.38.0-beta.0.
var unservedModules = []string{"k8s.io/ktesting"}

// dropUnservedImporters removes from the overlay in dir (a copy written for
// this test) the packages whose code imports an unserved module, then the
// test files that import one of those or an unserved module: they cannot
// build anywhere, with stock client-go neither. It returns what it removed,
// relative to dir.
func dropUnservedImporters(t *testing.T, dir string) []string {
	t.Helper()
	unbuildable := slices.Clone(unservedModules)
	importsAny := func(p string, paths []string) bool {
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			v, _ := strconv.Unquote(imp.Path.Value)
			if slices.ContainsFunc(paths, func(m string) bool { return v == m || strings.HasPrefix(v, m+"/") }) {
				return true
			}
		}
		return false
	}
	var goFiles []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".go") {
			goFiles = append(goFiles, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var dropped []string
	for _, p := range goFiles {
		if _, err := os.Stat(p); err != nil {
			continue // its package was removed
		}
		if !strings.HasSuffix(p, "_test.go") && importsAny(p, unservedModules) {
			pkgDir := filepath.Dir(p)
			rel, _ := filepath.Rel(dir, pkgDir)
			unbuildable = append(unbuildable, ClientGoModule+"/"+filepath.ToSlash(rel))
			if err := os.RemoveAll(pkgDir); err != nil {
				t.Fatal(err)
			}
			dropped = append(dropped, filepath.ToSlash(rel)+"/ (package)")
		}
	}
	for _, p := range goFiles {
		if _, err := os.Stat(p); err != nil || !strings.HasSuffix(p, "_test.go") || !importsAny(p, unbuildable) {
			continue
		}
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(dir, p)
		dropped = append(dropped, filepath.ToSlash(rel))
	}
	slices.Sort(dropped)
	return dropped
}

// e2eDir is where TestOverlayE2E writes its overlay of a release: a fixed
// path per checkout and release under the temporary directory (so build
// results are reused across runs and two checkouts never share it),
// removed after the test.
func e2eDir(t *testing.T, version string) string {
	sum := sha256.Sum256([]byte(repoRoot(t)))
	parent := filepath.Join(os.TempDir(), fmt.Sprintf("kcache-overlay-e2e-%x", sum[:6]), version)
	t.Cleanup(func() {
		if err := os.RemoveAll(parent); err != nil {
			t.Errorf("removing %s: %v", parent, err)
		}
	})
	return filepath.Join(parent, "client-go")
}

// checkOverlayTree checks the layout the issue asks for: kcache's files
// with headers in tools/cache and the packages it carries
// (tools/cache/testing, tools/cache/internal/dedup and shardfilter), no
// test files there,
// synctrack and the rest of client-go byte for byte as published.
func checkOverlayTree(t *testing.T, dir string, m Marker) {
	t.Helper()
	head := header(m.Kcache, m.ClientGo)
	for _, pkg := range []string{cacheDir, testingDir, dedupDir, shardDir} {
		entries, err := os.ReadDir(filepath.Join(dir, filepath.FromSlash(pkg)))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.IsDir() {
				continue
			}
			rel := pkg + "/" + e.Name()
			if strings.HasSuffix(e.Name(), "_test.go") || !slices.Contains(m.Generated, rel) {
				t.Errorf("%s is in the overlay but was not generated from kcache", rel)
			}
			data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(data, []byte(head)) {
				t.Errorf("%s lacks the header %q", rel, head)
			}
		}
	}
	cg, err := goTool{bin: "go"}.download(context.Background(), ClientGoModule, m.ClientGo)
	if err != nil {
		t.Fatal(err)
	}
	same := []string{"tools/cache/synctrack/synctrack.go", "informers/factory.go", "rest/request.go"}
	if len(m.RequirementsChanged) == 0 {
		same = append(same, "go.mod", "go.sum")
	}
	for _, rel := range same {
		want, err := os.ReadFile(filepath.Join(cg.Dir, filepath.FromSlash(rel)))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(want, got) {
			t.Errorf("%s differs from client-go %s's", rel, m.ClientGo)
		}
	}
}

// selectPackages picks, from `go list` lines "path|imports|ntest nxtest":
// to vet, every package whose code or tests import tools/cache (and
// tools/cache itself); to test, those plus informers/..., listers/... and
// packages whose tests import informers, listers or the dynamic and
// metadata informers, keeping only packages with test files.
func selectPackages(t *testing.T, list []byte) (vet, test []string) {
	t.Helper()
	const mod = ClientGoModule + "/"
	uses := []string{mod + "informers", mod + "listers", mod + "dynamic/dynamicinformer", mod + "metadata/metadatainformer", mod + "dynamic/dynamiclister", mod + "metadata/metadatalister"}
	sc := bufio.NewScanner(bytes.NewReader(list))
	for sc.Scan() {
		parts := strings.Split(sc.Text(), "|")
		if len(parts) != 3 {
			t.Fatalf("unexpected go list line %q", sc.Text())
		}
		path, imports := parts[0], strings.Fields(parts[1])
		hasTests := parts[2] != "0 0"
		rel := strings.TrimPrefix(path, mod)
		importsCache := slices.Contains(imports, mod+cacheDir) || rel == cacheDir || strings.HasPrefix(rel, cacheDir+"/")
		if importsCache {
			vet = append(vet, path)
		}
		usesInformers := strings.HasPrefix(rel, "informers/") || strings.HasPrefix(rel, "listers/") ||
			slices.ContainsFunc(imports, func(imp string) bool {
				return slices.ContainsFunc(uses, func(u string) bool { return imp == u || strings.HasPrefix(imp, u+"/") })
			})
		if hasTests && (importsCache || usesInformers) {
			test = append(test, path)
		}
	}
	if len(vet) == 0 || len(test) == 0 {
		t.Fatalf("found %d packages to vet and %d to test; go list output:\n%s", len(vet), len(test), list)
	}
	return vet, test
}

// testSummary counts the events of `go test -json`.
type testSummary struct {
	packages, passed, failed, skipped int
	failures, passedNames             []string
	perPackage                        []string
	// failureOutput holds the last lines each failed test printed.
	failureOutput []string
}

func summarize(out []byte) testSummary {
	type event struct {
		Action, Package, Test, Output string
	}
	var s testSummary
	perPkg := map[string]*[3]int{}
	output := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 1<<20), 1<<24)
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		if e.Test == "" {
			if e.Action == "fail" {
				s.failed++
				s.failures = append(s.failures, e.Package+" (package)")
			}
			continue
		}
		if e.Action == "output" {
			key := e.Package + "." + e.Test
			output[key] = append(output[key], strings.TrimRight(e.Output, "\n"))
			continue
		}
		c := perPkg[e.Package]
		if c == nil {
			c = &[3]int{}
			perPkg[e.Package] = c
		}
		switch e.Action {
		case "pass":
			s.passed++
			c[0]++
			s.passedNames = append(s.passedNames, e.Test)
		case "fail":
			s.failed++
			c[1]++
			s.failures = append(s.failures, e.Package+"."+e.Test)
			lines := output[e.Package+"."+e.Test]
			s.failureOutput = append(s.failureOutput, lines[max(0, len(lines)-20):]...)
		case "skip":
			s.skipped++
			c[2]++
		}
	}
	for pkg, c := range perPkg {
		s.perPackage = append(s.perPackage, fmt.Sprintf("%s: %d passed, %d failed, %d skipped", strings.TrimPrefix(pkg, ClientGoModule+"/"), c[0], c[1], c[2]))
	}
	sort.Strings(s.perPackage)
	s.packages = len(perPkg)
	return s
}
