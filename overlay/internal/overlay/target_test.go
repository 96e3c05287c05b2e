package overlay

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const validMarker = `{"generator":"kcache-overlay","kcache":"v1.0.0","clientGo":"v0.37.2"}`

func TestInspectTarget_RefusesAnythingItDidNotWrite(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(t *testing.T, target string)
		force   bool
		want    targetState
		wantErr string
	}{
		{name: "absent", setup: func(*testing.T, string) {}, want: targetAbsent},
		{name: "empty directory", setup: func(t *testing.T, target string) { mkdir(t, target) }, want: targetEmpty},
		{name: "regular file", setup: func(t *testing.T, target string) {
			writeFiles(t, filepath.Dir(target), map[string]string{filepath.Base(target): "x"})
		}, wantErr: "not a directory"},
		{name: "foreign directory", setup: func(t *testing.T, target string) {
			writeFiles(t, target, map[string]string{"main.go": "package main"})
		}, force: true, wantErr: "not written by kcache-overlay"},
		{name: "marker of another generator", setup: func(t *testing.T, target string) {
			writeFiles(t, target, map[string]string{MarkerFile: `{"generator":"other"}`})
		}, force: true, wantErr: "not written by kcache-overlay"},
		{name: "corrupt marker", setup: func(t *testing.T, target string) {
			writeFiles(t, target, map[string]string{MarkerFile: `{`})
		}, force: true, wantErr: "not valid"},
		{name: "earlier overlay without force", setup: func(t *testing.T, target string) {
			writeFiles(t, target, map[string]string{MarkerFile: validMarker})
		}, wantErr: "pass -force"},
		{name: "earlier overlay with force", setup: func(t *testing.T, target string) {
			writeFiles(t, target, map[string]string{MarkerFile: validMarker})
		}, force: true, want: targetOverlay},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			target := filepath.Join(t.TempDir(), "client-go")
			tc.setup(t, target)
			before := snapshot(t, filepath.Dir(target))
			got, err := inspectTarget(target, tc.force)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one saying %q", err, tc.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			} else if got != tc.want {
				t.Fatalf("state = %v, want %v", got, tc.want)
			}
			if diff := cmp.Diff(before, snapshot(t, filepath.Dir(target))); diff != "" {
				t.Fatalf("inspectTarget changed the file system (-before +after):\n%s", diff)
			}
		})
	}
}

func TestReplaceTarget_LeavesExactlyTheNewTree(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, target string)
		state targetState
	}{
		{name: "absent", setup: func(*testing.T, string) {}, state: targetAbsent},
		{name: "empty", setup: func(t *testing.T, target string) { mkdir(t, target) }, state: targetEmpty},
		{name: "earlier overlay", setup: func(t *testing.T, target string) {
			writeFiles(t, target, map[string]string{MarkerFile: validMarker, "old/stale.go": "package old"})
		}, state: targetOverlay},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			target := filepath.Join(t.TempDir(), "client-go")
			tc.setup(t, target)
			staging, err := newStagingDir(target)
			if err != nil {
				t.Fatal(err)
			}
			writeFiles(t, staging, map[string]string{MarkerFile: validMarker, "new.go": "package x"})
			want := snapshot(t, staging)
			if err := replaceTarget(staging, target, tc.state); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, snapshot(t, target)); diff != "" {
				t.Fatalf("target (-want +got):\n%s", diff)
			}
			if left := stagingLeftovers(t, filepath.Dir(target)); len(left) != 0 {
				t.Fatalf("left behind: %v", left)
			}
		})
	}
}

func mkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}
