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
	want := `start: the informer lists shop/web-1 and queues its key
    reconcile shop/web-1     Pending: nothing to do
cluster: shop/web-1 starts running
    reconcile shop/web-1     Running: annotated (this write comes back as an update)
    reconcile shop/web-1     Running, already annotated: nothing to do
cluster: create shop/flaky-1, running (its first two reconciles fail)
    reconcile shop/flaky-1   error: the server says: conflict, try again (attempt 1; requeued with backoff)
    reconcile shop/flaky-1   error: the server says: conflict, try again (attempt 2; requeued with backoff)
    reconcile shop/flaky-1   Running: annotated (this write comes back as an update)
    reconcile shop/flaky-1   Running, already annotated: nothing to do
cluster: relabel shop/web-1 three times while the worker is idle
    queue length after 3 updates of one Pod: 1 (one key, queued once)
worker: one reconcile sees the newest state
    reconcile shop/web-1     Running, already annotated: nothing to do [rev=3]
cluster: delete shop/web-1
    reconcile shop/web-1     gone: nothing left to do (a real controller would clean up here)
done: queue length 0
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
}
