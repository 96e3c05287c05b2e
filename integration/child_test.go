package integration

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// childEnv is set in the environment of a test binary re-executed by
// runChild; tests that only make sense there skip without it.
const childEnv = "KCACHE_INTEGRATION_CHILD"

// needChild skips t unless this process is a child started by runChild.
func needChild(t *testing.T, parent string) {
	t.Helper()
	if os.Getenv(childEnv) == "" {
		t.Skipf("runs only in a child process started by %s, with feature gates set in its environment", parent)
	}
}

// runChild re-executes this test binary to run the named top-level tests
// with extra environment variables (feature gates are read once per
// process, so a different setting needs a new process). It fails t if the
// child fails or does not pass every test, and adds the child's tally to
// this process's.
func runChild(t *testing.T, names []string, env ...string) {
	t.Helper()
	name := strings.Join(names, "|")
	args := []string{"-test.run", "^(" + name + ")$", "-test.count", "1", "-test.v", "-test.timeout", "8m"}
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(append(os.Environ(), childEnv+"=1"), env...)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	began := time.Now()
	err := cmd.Run()
	output := out.String()
	if err != nil {
		t.Fatalf("child %s with %v failed after %s: %v\n%s", name, env, time.Since(began).Round(time.Millisecond), err, output)
	}
	for _, n := range names {
		if !strings.Contains(output, "--- PASS: "+n+" ") {
			t.Fatalf("child with %v did not pass %s (skipped?):\n%s", env, n, output)
		}
	}
	for _, line := range strings.Split(output, "\n") {
		if strings.Contains(line, "--- PASS") || strings.Contains(line, ": ") && strings.Contains(line, "_test.go:") {
			t.Log("child: " + strings.TrimSpace(line))
		}
	}
	if err := addChildTally(output); err != nil {
		t.Errorf("child %s: %v", name, err)
	}
}

var tallyLine = regexp.MustCompile(regexp.QuoteMeta(tallyPrefix) + ` scenarios=(\d+) objects=(\d+) writes=(\d+) events=(\d+)`)

// addChildTally adds the figures of a child's summary line to the tally.
func addChildTally(output string) error {
	m := tallyLine.FindStringSubmatch(output)
	if m == nil {
		return fmt.Errorf("no %q line in the output", tallyPrefix)
	}
	for i, counter := range []interface{ Add(int64) int64 }{&tally.scenarios, &tally.objects, &tally.writes, &tally.events} {
		n, err := strconv.ParseInt(m[i+1], 10, 64)
		if err != nil {
			return fmt.Errorf("tally line %q: %w", m[0], err)
		}
		counter.Add(n)
	}
	return nil
}
