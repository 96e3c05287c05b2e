package harness

import (
	"strings"
	"testing"
)

type attrLeaf struct {
	Name string
	Tags []string
}

type attrObj struct {
	Name   string
	Leaf   *attrLeaf
	Leaves []attrLeaf
	Labels map[string]string
}

// Each block is charged once, to the path it was first reached at, rounded
// up to its size class; a block two objects share counts for the first.
func TestAttribute(t *testing.T) {
	shared := &attrLeaf{Name: strings.Repeat("s", 20)}
	objs := []any{
		&attrObj{Name: strings.Repeat("a", 9), Leaf: shared, Leaves: make([]attrLeaf, 3)},
		&attrObj{Name: strings.Repeat("b", 9), Leaf: shared, Leaves: make([]attrLeaf, 1, 2)},
	}
	got := Attribute(objs, 100)
	byPath := map[string]AttributionRow{}
	for _, r := range got.Rows {
		byPath[r.Path] = r
	}
	leaf := sizeClass(40) // attrLeaf: a string and a slice header
	tests := []struct {
		path   string
		bytes  uintptr // in all, over both objects
		blocks int
	}{
		{"attrObj*", 2 * sizeClass(56), 2}, // a string, a pointer, a slice, a map
		{"attrObj.Name$", 2 * 16, 2},
		{"attrObj.Leaf*", leaf, 1},
		{"attrObj.Leaf.Name$", 24, 1},
		{"attrObj.Leaves[]", sizeClass(3*40) + sizeClass(2*40), 2},
	}
	var total float64
	for _, tt := range tests {
		r, ok := byPath[tt.path]
		if !ok {
			t.Errorf("%s: no row", tt.path)
			continue
		}
		if r.BytesPerObject != float64(tt.bytes)/2 || r.BlocksPerObject != float64(tt.blocks)/2 {
			t.Errorf("%s: %.1f B and %.1f blocks per object, want %.1f and %.1f", tt.path,
				r.BytesPerObject, r.BlocksPerObject, float64(tt.bytes)/2, float64(tt.blocks)/2)
		}
		total += float64(tt.bytes) / 2
	}
	if got.Objects != 2 || got.BytesPerObject != total || len(got.Rows) != len(tests) {
		t.Errorf("objects %d, %.1f B per object in %d rows; want 2, %.1f in %d", got.Objects, got.BytesPerObject, len(got.Rows), total, len(tests))
	}
}

func TestSizeClass(t *testing.T) {
	for n, want := range map[uintptr]uintptr{1: 8, 8: 8, 9: 16, 1100: 1152, 1281: 1408, 32768: 32768, 32769: 40960} {
		if got := sizeClass(n); got != want {
			t.Errorf("sizeClass(%d) = %d, want %d", n, got, want)
		}
	}
}
