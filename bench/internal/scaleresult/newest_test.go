package scaleresult

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestNewest(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files []string
		dirs  []string
		want  string // "" for ErrNoResult
	}{
		{name: "empty directory"},
		{name: "other kinds only", files: []string{"e2e-20261127T074248Z.txt", "compare-20261127T082725Z.txt", "README.md"}},
		{name: "names that only look alike", files: []string{"scale-sim-20261129T120000Z.txt", "scale-20261129T120000Z.txt.bak", "scale-2026.txt", "scale-20261129T120000.txt"}},
		{name: "one file", files: []string{"scale-20261129T120000Z.txt", "e2e-20271127T074248Z.txt"}, want: "scale-20261129T120000Z.txt"},
		{name: "the latest date-time wins", files: []string{"scale-20261129T120000Z.txt", "scale-20261130T010203Z.txt", "scale-20261129T235959Z.txt"},
			want: "scale-20261130T010203Z.txt"},
		{name: "a directory of that name is not a file", files: []string{"scale-20261129T120000Z.txt"}, dirs: []string{"scale-20261231T000000Z.txt"},
			want: "scale-20261129T120000Z.txt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range tc.files {
				if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			for _, d := range tc.dirs {
				if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			got, err := Newest(dir)
			if tc.want == "" {
				if !errors.Is(err, ErrNoResult) {
					t.Fatalf("Newest = %q, %v; want ErrNoResult", got, err)
				}
				return
			}
			if err != nil || got != filepath.Join(dir, tc.want) {
				t.Fatalf("Newest = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestNewest_MissingDirectory(t *testing.T) {
	_, err := Newest(filepath.Join(t.TempDir(), "absent"))
	if err == nil || errors.Is(err, ErrNoResult) {
		t.Fatalf("Newest of a missing directory = %v; want an error other than ErrNoResult", err)
	}
}
