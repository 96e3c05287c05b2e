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
	want := `start: the informer lists shop/web-1 and shop/web-2
    OnAdd    shop/web-1 Pending (from the initial list)
    OnAdd    shop/web-2 Pending (from the initial list)
synced
cluster: create shop/web-3
    OnAdd    shop/web-3 Pending (from the watch)
cluster: shop/web-1 starts running
    OnUpdate shop/web-1 Pending -> Running
cluster: delete shop/web-3
    OnDelete shop/web-3
cluster: delete shop/web-2 while the watch is down, then compact the history (410 Gone)
    OnDelete shop/web-2 (a DeletedFinalStateUnknown: deleted while the watch was down)
    OnUpdate shop/web-1 Running -> Running
    (the relist hands every object over again: shop/web-1, unchanged, comes as an update with old == new)
store: [shop/web-1]
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
}
