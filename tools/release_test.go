package tools

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/semver"
)

// readmeMaxLines is the front page's budget: what an adopter reads before
// deciding, with the reference material in docs/.
const readmeMaxLines = 250

// releaseVersion reads VERSION, the one place the release version is
// recorded, and checks it is a canonical semantic version.
func releaseVersion(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	v := strings.TrimSpace(string(b))
	if !semver.IsValid(v) || semver.Canonical(v) != v {
		t.Fatalf("VERSION holds %q, not a canonical semantic version such as v0.38.0", v)
	}
	return v
}

func readRepoFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(name)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestReadme_FitsTheFrontPageBudget(t *testing.T) {
	if n := strings.Count(readRepoFile(t, "README.md"), "\n"); n > readmeMaxLines {
		t.Errorf("README.md has %d lines, more than the front page's %d: move reference material to docs/", n, readmeMaxLines)
	}
}

// TestRelease_VersionIsTheSameEverywhere holds every mention of the release
// to VERSION: the install commands of README.md, the CHANGELOG's newest
// release, and each go.mod's requirement of a module of this repository.
func TestRelease_VersionIsTheSameEverywhere(t *testing.T) {
	v := releaseVersion(t)

	readme := readRepoFile(t, "README.md")
	for _, cmd := range []string{
		"go get github.com/kcache/cache@" + v,
		"go get github.com/kcache/cache/clientgo@" + v,
		"go run github.com/kcache/cache/overlay/cmd/kcache-overlay@" + v + " ",
	} {
		if !strings.Contains(readme, cmd) {
			t.Errorf("README.md lacks the install command %q", cmd)
		}
	}
	versionRE := regexp.MustCompile(`github\.com/kcache/cache[\w/.-]*@(v[0-9][\w.+-]*)`)
	for _, page := range []string{"README.md", "overlay/README.md", "clientgo/README.md", "membership/README.md", "docs/versions.md"} {
		for _, m := range versionRE.FindAllStringSubmatch(readRepoFile(t, page), -1) {
			if m[1] != v {
				t.Errorf("%s names %s, want the release %s", page, m[0], v)
			}
		}
	}

	changelog := readRepoFile(t, "CHANGELOG.md")
	releaseRE := regexp.MustCompile(`(?m)^## (\d+\.\d+\.\d+\S*) - `)
	first := releaseRE.FindStringSubmatch(changelog)
	if first == nil || "v"+first[1] != v {
		t.Errorf("CHANGELOG.md's newest release is %v, want %s", first, strings.TrimPrefix(v, "v"))
	}

	gomods, err := filepath.Glob(filepath.Join(repoRoot, "*", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	more, _ := filepath.Glob(filepath.Join(repoRoot, "*", "*", "go.mod"))
	checked := 0
	for _, name := range append(gomods, more...) {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := modfile.ParseLax(name, b, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range f.Require {
			if r.Mod.Path == "github.com/kcache/cache" || strings.HasPrefix(r.Mod.Path, "github.com/kcache/cache/") {
				checked++
				if r.Mod.Version != v {
					t.Errorf("%s requires %s %s, want the release %s", name, r.Mod.Path, r.Mod.Version, v)
				}
			}
		}
	}
	if checked == 0 {
		t.Error("no go.mod of the repository requires one of its modules: the check found nothing")
	}
}
