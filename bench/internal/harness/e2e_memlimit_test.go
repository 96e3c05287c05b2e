package harness

import (
	"math"
	"runtime/debug"
	"testing"
)

// TestLimitMemory checks that LimitMemory sets the runtime's memory limit
// to the factor times the runtime's memory, and that lifting restores the
// limit there was before.
func TestLimitMemory(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	limit, from, lift := LimitMemory(1.5)
	if from == 0 {
		t.Fatal("the runtime holds no memory, by RuntimeMemory")
	}
	if want := uint64(1.5 * float64(from)); limit != want {
		t.Errorf("limit %d, want 1.5 x %d = %d", limit, from, want)
	}
	if got := debug.SetMemoryLimit(-1); got != int64(limit) {
		t.Errorf("the runtime's limit is %d, want %d", got, limit)
	}
	lift()
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Errorf("after lift the limit is %d, want the earlier %d", got, before)
	}
	if before != math.MaxInt64 {
		t.Logf("the test ran under a memory limit already: %d", before)
	}
}
