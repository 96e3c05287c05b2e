package framework_test

import (
	// Under -race on Go 1.26 the tests run on one processor: its race
	// runtime crashes on synctest bubbles otherwise (golang/go#78156).
	_ "github.com/kcache/cache/internal/racesafe"

	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine, a broadcaster's
// among them, outlives them.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
