package main

import (
	"context"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"testing"
)

// A variant's run profile is summarized under its name; a variant without
// one is left out.
func TestWriteProfileSummaries(t *testing.T) {
	prefix := filepath.Join(t.TempDir(), "cpu")
	f, err := os.Create(prefix + ".kcache.run")
	if err != nil {
		t.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		t.Fatal(err)
	}
	pprof.StopCPUProfile()
	f.Close()
	var b strings.Builder
	vs := []variant{{Lib: "client-go"}, {Lib: "kcache"}}
	if err := writeProfileSummaries(context.Background(), &b, prefix, vs); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.Contains(out, "cpu-profile kcache.run: go tool pprof -top -cum") {
		t.Errorf("no summary of kcache's profile in:\n%s", out)
	}
	if strings.Contains(out, "cpu-profile client-go") {
		t.Errorf("a summary for a variant without a profile:\n%s", out)
	}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if !strings.HasPrefix(l, "cpu-profile kcache.run: ") {
			t.Errorf("line without its prefix: %q", l)
		}
	}
}

// The summary keeps the header, the first functions, and further ones of
// this repository only.
func TestTopAndOwn(t *testing.T) {
	listing := `File: e2e
Type: cpu

      flat  flat%   sum%        cum   cum%
     1s 10% 10%  5s 50%  runtime.a
     1s 10% 20%  4s 40%  github.com/kcache/cache.b
     1s 10% 30%  3s 30%  k8s.io/api/core/v1.c
     1s 10% 40%  2s 20%  github.com/kcache/cache/internal/dedup.d
     1s 10% 50%  1s 10%  runtime.e
`
	got := topAndOwn(listing, 2, ownPackage)
	want := []string{"File: e2e", "Type: cpu", "flat  flat%   sum%        cum   cum%",
		"1s 10% 10%  5s 50%  runtime.a", "1s 10% 20%  4s 40%  github.com/kcache/cache.b",
		"1s 10% 40%  2s 20%  github.com/kcache/cache/internal/dedup.d"}
	if !slices.Equal(got, want) {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
}
