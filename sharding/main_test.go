package sharding

import (
	"testing"

	"github.com/go-logr/logr"
	"go.uber.org/goleak"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

func TestMain(m *testing.M) {
	// Managers log through their own loggers; this silences the rest of
	// controller-runtime, which would otherwise warn that it has none.
	ctrllog.SetLogger(logr.Discard())
	goleak.VerifyTestMain(m)
}
