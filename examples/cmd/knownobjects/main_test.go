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
	want := `== without KnownObjects
cluster: shop/web-1, shop/web-2, shop/web-3; the reflector lists them into the queue
  pop: Replaced shop/web-1
  pop: Replaced shop/web-2
  pop: Replaced shop/web-3
consumer's cache: [shop/web-1 shop/web-2 shop/web-3]
cluster: shop/web-2 is deleted while the watch is down, and the history is compacted (410 Gone)
reflector: lists again and calls queue.Replace([shop/web-1 shop/web-3])
  pop: Replaced shop/web-1
  pop: Replaced shop/web-3
cluster:          [shop/web-1 shop/web-3]
consumer's cache: [shop/web-1 shop/web-2 shop/web-3]
=> the cache is stale: it keeps a Pod the cluster deleted, and no event will ever remove it

== with KnownObjects: the queue checks the consumer's cache
cluster: shop/web-1, shop/web-2, shop/web-3; the reflector lists them into the queue
  pop: Replaced shop/web-1
  pop: Replaced shop/web-2
  pop: Replaced shop/web-3
consumer's cache: [shop/web-1 shop/web-2 shop/web-3]
cluster: shop/web-2 is deleted while the watch is down, and the history is compacted (410 Gone)
reflector: lists again and calls queue.Replace([shop/web-1 shop/web-3])
  pop: Deleted shop/web-2 (DeletedFinalStateUnknown: the queue inferred the deletion)
  pop: Replaced shop/web-1
  pop: Replaced shop/web-3
cluster:          [shop/web-1 shop/web-3]
consumer's cache: [shop/web-1 shop/web-3]
=> the cache is in step with the cluster
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
}
