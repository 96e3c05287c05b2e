package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// stream builds a test2json stream from "action test" pairs; an output
// event is written as "output test text".
func stream(events ...string) string {
	var b strings.Builder
	for _, e := range events {
		action, rest, _ := strings.Cut(e, " ")
		test, text, _ := strings.Cut(rest, " ")
		b.WriteString(`{"Action":"` + action + `","Package":"p","Test":"` + test + `"`)
		if text != "" {
			b.WriteString(`,"Output":"    ` + text + `\n"`)
		}
		b.WriteString("}\n")
	}
	b.WriteString(`{"Action":"fail","Package":"p"}` + "\n")
	return b.String()
}

func writeRun(t *testing.T, dir, variant, name string, run int, events ...string) {
	t.Helper()
	path := filepath.Join(dir, variant, name+"."+string(rune('0'+run))+".json")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(stream(events...)), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestParseRun_CountsTopLevelTestsAndQuotesFailureLines(t *testing.T) {
	r, err := parseRun(strings.NewReader(stream(
		"run TestA", "run TestA/sub", "output TestA/sub a_test.go:12: want 1, got 2",
		"fail TestA/sub", "fail TestA",
		"run TestB", "pass TestB",
		"run TestC", "skip TestC",
		"run TestD", // never finishes: the binary died
	)))
	if err != nil {
		t.Fatal(err)
	}
	if p, f, s := counts(r); p != 1 || f != 2 || s != 1 {
		t.Errorf("counts = %d/%d/%d, want 1/2/1", p, f, s)
	}
	if got := r.tests["TestA"].lines; len(got) != 1 || got[0] != "a_test.go:12: want 1, got 2" {
		t.Errorf("TestA lines = %q", got)
	}
	if len(r.incomplete) != 1 || r.incomplete[0] != "TestD" {
		t.Errorf("incomplete = %q, want [TestD]", r.incomplete)
	}
}

func TestWrite_ClassifiesFailuresAcrossReruns(t *testing.T) {
	dir := t.TempDir()
	// TestOnly fails on kcache every time and passes on stock every time;
	// TestFlaky fails once on stock and passes in the re-runs; TestBoth
	// fails everywhere.
	writeRun(t, dir, "stock", "rs", 1, "run TestOnly", "pass TestOnly", "run TestFlaky", "fail TestFlaky",
		"run TestBoth", "fail TestBoth", "run TestOK", "pass TestOK")
	writeRun(t, dir, "kcache", "rs", 1, "run TestOnly", "output TestOnly x_test.go:1: boom", "fail TestOnly",
		"run TestFlaky", "pass TestFlaky", "run TestBoth", "fail TestBoth", "run TestOK", "pass TestOK")
	for run := 2; run <= 3; run++ {
		writeRun(t, dir, "stock", "rs", run, "run TestOnly", "pass TestOnly", "run TestFlaky", "pass TestFlaky",
			"run TestBoth", "fail TestBoth")
		writeRun(t, dir, "kcache", "rs", run, "run TestOnly", "fail TestOnly", "run TestFlaky", "pass TestFlaky",
			"run TestBoth", "fail TestBoth")
	}
	pkgs, err := load(dir, []string{"rs", "gc"})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	s := write(&b, pkgs)
	out := b.String()
	for _, want := range []string{
		"| rs | 4 | 2/2/0 | 2/2/0 | **no** |",
		"- rs TestOnly: KCACHE-ONLY; passed stock 3/3 runs, kcache 0/3 runs",
		"kcache: x_test.go:1: boom",
		"- rs TestFlaky: flaky; passed stock 2/3 runs, kcache 3/3 runs",
		"- rs TestBoth: fails on both; passed stock 0/3 runs, kcache 0/3 runs",
		"Not run (yet): gc",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if last, want := lines[len(lines)-1], "k8s-suites: packages=1 identical=0 stock=2/2 kcache=2/2 kcache-only-failures=1"; last != want {
		t.Errorf("last line = %q, want %q", last, want)
	}
	if len(s.unexplained) != 1 || s.unexplained[0] != "rs.TestOnly" {
		t.Errorf("unexplained = %q, want [rs.TestOnly]", s.unexplained)
	}
}
