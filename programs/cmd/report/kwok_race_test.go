package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// raceLog is a KWOK debug log: node n1's Lease is created at .100; a pod
// on n0 is dropped before n0 has a Lease, pods on n1 are dropped 20 ms and
// 250 ms after n1's; a "not managed" skip and the GC trace do not count.
func raceLog(dropsAfter int) string {
	lines := []string{
		"gc 1 @0.044s 7%: 0.27+11+1.4 ms clock, 3->4->2 MB, 4 MB goal, 2 P",
		`{"time":"2026-11-29T22:00:00.050Z","msg":"Skip pod","reason":"read only","event":"SYNC","pod":"p/a","node":"n0"}`,
		`{"time":"2026-11-29T22:00:00.100Z","msg":"Creating lease","node":"n1"}`,
		`{"time":"2026-11-29T22:00:00.110Z","msg":"Skip pod","reason":"not managed","event":"ADDED","pod":"p/b","node":"n1"}`,
	}
	for i := 0; i < dropsAfter; i++ {
		lines = append(lines, fmt.Sprintf(`{"time":"2026-11-29T22:00:00.%03dZ","msg":"Skip pod","reason":"read only","event":"ADDED","pod":"p/c%d","node":"n1"}`, 120+230*i, i))
	}
	return strings.Join(lines, "\n") + "\n"
}

func TestReportRace(t *testing.T) {
	runs := t.TempDir()
	write := func(name, file, content string) {
		t.Helper()
		dir := filepath.Join(runs, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, file), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	running := "node n1 ready=true\npod p/a node=n0 phase=Running ready=true ip=true\npod p/b node=n1 phase=Running ready=true ip=true\n"
	stuck := "node n1 ready=true\npod p/a node=n0 phase=Pending ready=false ip=false\npod p/b node=n1 phase=Running ready=true ip=true\n"
	for r := 1; r <= 2; r++ {
		write(fmt.Sprintf("kwok-race-%d-stock", r), "kwok.log", raceLog(2))
		write(fmt.Sprintf("kwok-race-%d-stock", r), "endstate.txt", map[int]string{1: stuck, 2: running}[r])
		write(fmt.Sprintf("kwok-race-%d-kcache", r), "kwok.log", raceLog(0))
		write(fmt.Sprintf("kwok-race-%d-kcache", r), "endstate.txt", running)
	}
	header := filepath.Join(runs, "header.txt")
	if err := os.WriteFile(header, []byte("# header\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := reportRace(&b, runs, header, 2); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"  kwok-race-1-stock: pod events dropped as read only: ADDED 2, SYNC 1 (1 before the node had a Lease); longest drop after the Lease's creation 250 ms; pods not running at the end 1 of 2\n",
		"  kwok-race-2-kcache: pod events dropped as read only: ADDED 0, SYNC 1 (1 before the node had a Lease); longest drop after the Lease's creation 0 ms; pods not running at the end 0 of 2\n",
		"| pod events dropped as read only, all runs | 6 | 2 |\n",
		"| runs that left a pod not running | 1 | 0 |\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("no line %q in\n%s", want, b.String())
		}
	}
	if got, want := lastLine(b.String()), "kwok-race: runs=2 dropped stock = 6 kcache = 2, runs with pods stuck stock = 1 kcache = 0"; got != want {
		t.Errorf("last line %q, want %q", got, want)
	}
}

func TestReportRace_EmptyEndState(t *testing.T) {
	runs := t.TempDir()
	for _, v := range variants {
		dir := filepath.Join(runs, "kwok-race-1-"+v)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for file, content := range map[string]string{"kwok.log": raceLog(1), "endstate.txt": "node n1 ready=true\n"} {
			if err := os.WriteFile(filepath.Join(dir, file), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	header := filepath.Join(runs, "header.txt")
	if err := os.WriteFile(header, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := reportRace(&b, runs, header, 1); err == nil || !strings.Contains(err.Error(), "no pod in the end state") {
		t.Errorf("reportRace with no pod: %v, want an error", err)
	}
}
