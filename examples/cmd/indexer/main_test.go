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
	want := `keys (UIDs): [uid-1 uid-2 uid-3 uid-4]
apps: [api web]
by-app web: [blog/web-1(uid-4,Running) shop/web-1(uid-1,Running) shop/web-2(uid-2,Running)]
by-name shop/web-1 -> keys [uid-1]

shop/web-1 is deleted and recreated under the same name (new UID uid-5)
by-name shop/web-1: [shop/web-1(uid-5,Pending)]

add a by-phase index to the filled store
by-phase Running: [blog/web-1(uid-4,Running) shop/web-2(uid-2,Running)]

update shop/api-1 without its app label: the by-app index function fails
Update panicked: unable to calculate an index entry for key "uid-3" on index "by-app": pod has no app label
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
}
