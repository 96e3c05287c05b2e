package main

import (
	"context"
	"os"
	"path/filepath"
	"runtime/pprof"
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
