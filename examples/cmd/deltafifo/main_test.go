package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRun(t *testing.T) {
	var out strings.Builder
	if err := run(&out); err != nil {
		t.Fatal(err)
	}
	want := `queue: add shop/web-1 (Pending)
queue: add shop/web-2 (Pending)
queue: update shop/web-1 (Running)
queue: update shop/web-1 (Succeeded)
queue: delete shop/web-1
queue: delete shop/web-1 again (merged with the first delete)

pop shop/web-1: Added(Pending) Updated(Running) Updated(Succeeded) Deleted(Succeeded)
pop shop/web-2: Added(Pending)

queue: replace with [shop/web-2 (Running), shop/web-3 (Pending)]
pop shop/web-2: Replaced(Running)
pop shop/web-3: Replaced(Pending)
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
}
