package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// The test binary plays the measured program when this variable is set:
// it collects garbage three times, prints a line and exits with 3.
const childEnv = "MEASURE_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		keep := make([][]byte, 0, 64)
		for range 3 {
			keep = append(keep, make([]byte, 8<<20))
			runtime.GC()
		}
		println("child done", len(keep))
		os.Exit(3)
	}
	os.Exit(m.Run())
}

func TestRun_RecordsTheChild(t *testing.T) {
	t.Setenv(childEnv, "1")
	logPath := filepath.Join(t.TempDir(), "child.log")
	p, err := run([]string{os.Args[0]}, logPath)
	if err != nil {
		t.Fatal(err)
	}
	if p.ExitCode != 3 {
		t.Errorf("exit code %d, want the child's 3", p.ExitCode)
	}
	if len(p.GCs) < 3 {
		t.Errorf("%d collections read, want at least the child's 3", len(p.GCs))
	}
	if p.PeakHeapMB() < 8 {
		t.Errorf("peak heap %v MB, want at least the 8 MB the child keeps", p.PeakHeapMB())
	}
	if p.MaxRSSMB <= 0 || p.Wall <= 0 {
		t.Errorf("max RSS %v MB, wall %v: want both above 0", p.MaxRSSMB, p.Wall)
	}
	log, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), "child done") || !strings.Contains(string(log), "gc 1 @") {
		t.Errorf("the log lacks the child's output or its GC trace:\n%s", log)
	}
}

func TestRun_MissingProgramIsAnError(t *testing.T) {
	if _, err := run([]string{filepath.Join(t.TempDir(), "nothing")}, filepath.Join(t.TempDir(), "log")); err == nil {
		t.Errorf("no error for a program that does not exist")
	}
}
