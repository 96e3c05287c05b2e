package main

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/kcache/cache/bench/internal/harness"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestRun_OneRoundAtTinySizes runs every bridge workload once on each
// informer and checks the table has a row with a ratio for each.
func TestRun_OneRoundAtTinySizes(t *testing.T) {
	var out bytes.Buffer
	if err := run(&out, io.Discard, harness.TinySizes, 1); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"Fanout/1handler", "Fanout/10handlers", "Informer/List"} {
		if !strings.Contains(out.String(), "| "+name+" |") {
			t.Errorf("no row for %s in:\n%s", name, out.String())
		}
	}
}
