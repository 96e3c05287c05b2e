package racesafe

import (
	"runtime"
	"testing"
)

// TestGOMAXPROCS checks that a binary built with -race on a Go older than
// 1.27 runs its tests on one processor.
func TestGOMAXPROCS(t *testing.T) {
	if !limited {
		t.Skipf("%s without the limit: built without -race or on Go 1.27 or later", runtime.Version())
	}
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Fatalf("GOMAXPROCS = %d under -race on %s, want 1", got, runtime.Version())
	}
}
