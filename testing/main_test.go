package framework_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine, a broadcaster's
// among them, outlives them.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
