package integration

import (
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"
)

// tally counts what the suite checked, for the summary line TestMain
// prints (and child processes report to their parent).
var tally struct {
	scenarios atomic.Int64 // scenarios whose checks all ran
	objects   atomic.Int64 // distinct objects written
	writes    atomic.Int64 // creates, updates and deletes that succeeded
	events    atomic.Int64 // handler calls checked by recorders
}

func TestMain(m *testing.M) {
	began := time.Now()
	code := m.Run()
	if os.Getenv("KUBECONFIG") != "" && os.Getenv("KAS_SERVER") != "" {
		fmt.Printf("%s scenarios=%d objects=%d writes=%d events=%d took=%s\n", tallyPrefix,
			tally.scenarios.Load(), tally.objects.Load(), tally.writes.Load(), tally.events.Load(),
			time.Since(began).Round(time.Millisecond))
	}
	os.Exit(code)
}

// tallyPrefix starts the summary line.
const tallyPrefix = "integration tally:"
