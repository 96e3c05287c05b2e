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
	want := `cluster: 3 pods; the reflector lists them, then watches from the list's resource version
    store.Replace 3 pods at resource version 3 (a LIST): [shop/api-1 shop/web-1 shop/web-2]
cluster: create shop/web-3
    store.Add     shop/web-3 Pending rv=4   (watch event ADDED)
cluster: shop/web-1 starts running
    store.Update  shop/web-1 Running rv=5   (watch event MODIFIED)
cluster: drop every watch; shop/web-3 starts running meanwhile
    (the reflector watches again from the last resource version it saw: nothing is missed)
    store.Update  shop/web-3 Running rv=6   (watch event MODIFIED)
cluster: delete shop/api-1
    store.Delete  shop/api-1 Pending rv=7   (watch event DELETED)
cluster: compact the history (watchers get 410 Gone) after deleting shop/web-2 unseen
    (the reflector cannot resume its watch: it lists again)
    store.Replace 2 pods at resource version 9 (a LIST): [shop/web-1 shop/web-3]
store now: [shop/web-1 shop/web-3]
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
}
