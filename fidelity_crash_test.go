package cache

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	framework "github.com/kcache/cache/testing"
)

// crashChildEnv names the case a re-executed test binary runs: an informer
// whose user code panics, left to crash the process.
const crashChildEnv = "KCACHE_CRASH_CHILD"

// crashCases are the user code that panics on an informer's goroutines.
// With utilruntime.ReallyCrash (the default) each must end the process
// after the "Observed a panic" log line, as in client-go.
var crashCases = map[string]struct {
	// setup configures the informer before it runs.
	setup func(inf SharedIndexInformer)
	// handler is registered when not nil.
	handler ResourceEventHandler
	// wantPanic is part of the panic value printed when the process dies.
	wantPanic string
}{
	"handler": {
		handler:   ResourceEventHandlerFuncs{AddFunc: func(interface{}) { panic("handler refuses the object") }},
		wantPanic: "handler refuses the object",
	},
	"index function": {
		setup: func(inf SharedIndexInformer) {
			_ = inf.AddIndexers(Indexers{"refusing": func(interface{}) ([]string, error) {
				return nil, errors.New("index refuses the object")
			}})
		},
		wantPanic: `unable to calculate an index entry for key "ns/a" on index "refusing": index refuses the object`,
	},
	"transform": {
		setup: func(inf SharedIndexInformer) {
			_ = inf.SetTransform(func(interface{}) (interface{}, error) { panic("transform refuses the object") })
		},
		wantPanic: "transform refuses the object",
	},
}

// runCrashChild runs the informer of one crash case and waits for the
// process to die. If it has not died after a minute it returns, and the
// child exits cleanly, which the parent reports as a failure.
func runCrashChild(name string) {
	tc := crashCases[name]
	src := framework.NewFakeControllerSource()
	src.Add(testPod("ns", "a", ""))
	inf := NewSharedIndexInformer(src, &v1.Pod{}, 0, Indexers{})
	if tc.setup != nil {
		tc.setup(inf)
	}
	if tc.handler != nil {
		_, _ = inf.AddEventHandler(tc.handler)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	inf.RunWithContext(ctx)
	src.Shutdown()
}

func TestInformer_PanicsEndTheProcessByDefault(t *testing.T) {
	if name := os.Getenv(crashChildEnv); name != "" {
		runCrashChild(name)
		return
	}
	for name, tc := range crashCases {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestInformer_PanicsEndTheProcessByDefault$", "-test.count=1")
			cmd.Env = append(os.Environ(), crashChildEnv+"="+name)
			out, err := cmd.CombinedOutput()
			var exitErr *exec.ExitError
			if !errors.As(err, &exitErr) || exitErr.ExitCode() == 0 {
				t.Fatalf("the process did not die (err %v); output:\n%s", err, out)
			}
			for _, want := range []string{`"Observed a panic"`, tc.wantPanic, "panic: "} {
				if !strings.Contains(string(out), want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
		})
	}
}
