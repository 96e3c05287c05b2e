package main

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRun(t *testing.T) {
	var out strings.Builder
	if err := run(context.Background(), &out); err != nil {
		t.Fatalf("%v; output so far:\n%s", err, out.String())
	}
	want := `two consumers asked the factory for pods
  same cache for both: true
  ListerWatchers made: 1
  LIST requests the cluster served: 1
  [namespace-report] shop: 2 of 3 pods running
  [namespace-report] blog: 0 of 1 pods running
cluster: shop/web-2 starts running
  [namespace-report] shop: 3 of 3 pods running
  [phase-watcher] shop/web-2 Pending -> Running
  WATCH requests the cluster served: 1
factory shut down: informer stopped: true
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
}
