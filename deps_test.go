package cache

// The test-only and library dependencies listed in go.mod are pinned here so
// that `go mod tidy` keeps them while files that use them are being written
// in parallel branches.
import (
	_ "github.com/google/go-cmp/cmp"
	_ "k8s.io/api/core/v1"
	_ "k8s.io/utils/clock"
	_ "k8s.io/utils/clock/testing"
)
