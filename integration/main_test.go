package integration

import (
	"flag"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/klog/v2"
)

// tally counts what the suite checked, for the summary line TestMain
// prints (and child processes report to their parent).
var tally struct {
	scenarios atomic.Int64 // scenarios whose checks all ran
	objects   atomic.Int64 // distinct objects written
	writes    atomic.Int64 // creates, updates and deletes that succeeded
	events    atomic.Int64 // handler calls checked by recorders
}

// tallyPrefix starts the summary line.
const tallyPrefix = "integration tally:"

// klogEnv names a file that receives the client libraries' logs (klog:
// reflector warnings about cut watches and the like) instead of stderr.
const klogEnv = "KCACHE_INTEGRATION_KLOG"

// klogVerbosityEnv sets klog's verbosity (its -v), e.g. 5 to see every
// retry decision of both libraries' reflectors.
const klogVerbosityEnv = "KCACHE_INTEGRATION_KLOG_V"

func TestMain(m *testing.M) { os.Exit(runTests(m)) }

func runTests(m *testing.M) int {
	began := time.Now()
	if v := os.Getenv(klogVerbosityEnv); v != "" {
		fs := flag.NewFlagSet("klog", flag.ContinueOnError)
		klog.InitFlags(fs)
		if err := fs.Set("v", v); err != nil {
			fmt.Fprintf(os.Stderr, "integration: %s=%q: %v\n", klogVerbosityEnv, v, err)
			return 2
		}
	}
	if path := os.Getenv(klogEnv); path != "" {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			fmt.Fprintf(os.Stderr, "integration: %s: %v\n", klogEnv, err)
			return 2
		}
		klog.LogToStderr(false)
		klog.SetOutput(f)
		defer func() {
			klog.Flush()
			f.Close()
		}()
	}
	code := m.Run()
	if os.Getenv("KUBECONFIG") != "" && os.Getenv("KAS_SERVER") != "" {
		fmt.Printf("%s scenarios=%d objects=%d writes=%d events=%d took=%s\n", tallyPrefix,
			tally.scenarios.Load(), tally.objects.Load(), tally.writes.Load(), tally.events.Load(),
			time.Since(began).Round(time.Millisecond))
	}
	return code
}
