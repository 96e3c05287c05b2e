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
	want := `start: one informer, two handlers (audit, running)
    [audit] ADDED    shop/api-1
    [audit] ADDED    shop/web-1
    [audit] ADDED    shop/web-2
    [running] 2 pods running
cluster: shop/web-2 starts running
    [audit] MODIFIED shop/web-2 Pending -> Running
    [running] 3 pods running
add a third handler (late) to the running informer: it gets the cached objects first
    [late] ADDED    shop/api-1
    [late] ADDED    shop/web-1
    [late] ADDED    shop/web-2
remove the audit handler; cluster: delete shop/api-1
    [late] DELETED  shop/api-1
    [running] 2 pods running
    [audit] (removed: nothing)
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
}
