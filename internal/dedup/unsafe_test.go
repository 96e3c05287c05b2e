package dedup

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	v1 "k8s.io/api/core/v1"
)

// These tests pin what unsafe.go assumes of Go's memory layout: on a
// Go release that changes one of them, a test here fails before sharing
// misreads an object.

// Only this package's unsafe.go imports unsafe among the non-test files of
// the module (the root package and every package under it, nested modules
// left out: they are modules of their own).
func TestUnsafe_OnlyHere(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("the module root is not two folders up: %v", err)
	}
	here := filepath.Join(root, "internal", "dedup", "unsafe.go")
	fset := token.NewFileSet()
	checked := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path == root {
				return nil
			}
			name := d.Name()
			if name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir // a nested module
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || path == here {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		checked++
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == "unsafe" {
				rel, _ := filepath.Rel(root, path)
				t.Errorf("%s imports unsafe; unsafe operations belong in internal/dedup/unsafe.go", rel)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 40 {
		t.Errorf("only %d files checked: the walk missed the module", checked)
	}
}

// A slice is its array, length and capacity, in sliceHeader's order, for
// slices of any element type.
func TestUnsafe_SliceLayout(t *testing.T) {
	if unsafe.Sizeof(sliceHeader{}) != unsafe.Sizeof([]byte(nil)) {
		t.Fatalf("sliceHeader is %d bytes, a slice %d", unsafe.Sizeof(sliceHeader{}), unsafe.Sizeof([]byte(nil)))
	}
	check := func(name string, a addr, data addr, n, c int) {
		h := loadSlice(a)
		if h.data != data || h.len != n || h.cap != c {
			t.Errorf("%s: read %+v, want data %p len %d cap %d", name, h, data, n, c)
		}
	}
	ints := make([]int64, 3, 7)
	check("[]int64", addr(&ints), addr(unsafe.SliceData(ints)), 3, 7)
	envs := make([]v1.EnvVar, 2, 5)
	check("[]EnvVar", addr(&envs), addr(unsafe.SliceData(envs)), 2, 5)
	var written []string
	storeSlice(addr(&written), sliceHeader{data: addr(unsafe.SliceData([]string{"a", "b"})), len: 2, cap: 2})
	if len(written) != 2 || written[1] != "b" {
		t.Errorf("storeSlice wrote %q", written)
	}
}

// A value of a named string type has a string's layout.
func TestUnsafe_NamedStringLayout(t *testing.T) {
	type named string
	v := named("value")
	if got := loadString(addr(&v)); got != "value" {
		t.Errorf("loadString read %q", got)
	}
	storeString(addr(&v), "other")
	if v != "other" {
		t.Errorf("storeString wrote %q", v)
	}
	if unsafe.Sizeof(v) != unsafe.Sizeof("") {
		t.Error("a named string differs in size from a string")
	}
}

// A pointer and a map are one word: for a map, the word reflect's
// UnsafePointer gives; stringMapOf reads such a word back as the map.
func TestUnsafe_WordLayout(t *testing.T) {
	m := map[string]string{"k": "v"}
	w := loadWord(addr(&m))
	if w != reflect.ValueOf(m).UnsafePointer() || w != mapWord(m) {
		t.Fatal("a map's word is not what reflect says it is")
	}
	if got := stringMapOf(w); got["k"] != "v" || len(got) != 1 {
		t.Errorf("stringMapOf read %v", got)
	}
	x := 5
	p := &x
	if loadWord(addr(&p)) != addr(p) {
		t.Error("a pointer's word is not its address")
	}
	for _, size := range []uintptr{unsafe.Sizeof(m), unsafe.Sizeof(p), unsafe.Sizeof(func() {}), unsafe.Sizeof(make(chan int))} {
		if size != unsafe.Sizeof(uintptr(0)) {
			t.Errorf("a reference is %d bytes, a word %d", size, unsafe.Sizeof(uintptr(0)))
		}
	}
}

// Only map[string]string is read as one: a map of named strings has a plan
// of its own, walked through reflect.
func TestUnsafe_NoMapReadAsAnother(t *testing.T) {
	s := eagerDeduper()
	if !s.planOf(reflect.TypeFor[map[string]string]()).strMap {
		t.Error("map[string]string is not read directly")
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[v1.ResourceList](), reflect.TypeFor[map[v1.ResourceName]string](), reflect.TypeFor[map[string]v1.ResourceName]()} {
		if s.planOf(typ).strMap {
			t.Errorf("%v would be read as a map[string]string", typ)
		}
	}
}

// Flat values read back as written.
func TestUnsafe_FlatLoads(t *testing.T) {
	b, u8, u16, u32, u64 := true, uint8(0xab), uint16(0xabcd), uint32(0xabcdef01), uint64(0xabcdef0123456789)
	f32, f64, c64, c128 := float32(1.5), 2.5, complex64(1+2i), complex128(3+4i)
	if !loadBool(addr(&b)) || loadUint8(addr(&u8)) != u8 || loadUint16(addr(&u16)) != u16 || loadUint32(addr(&u32)) != u32 || loadUint64(addr(&u64)) != u64 {
		t.Error("integers read back differ")
	}
	if loadFloat32(addr(&f32)) != f32 || loadFloat64(addr(&f64)) != f64 || loadComplex64(addr(&c64)) != c64 || loadComplex128(addr(&c128)) != c128 {
		t.Error("floats read back differ")
	}
	type pair struct {
		A int8
		B int64
	}
	v := pair{A: 1, B: 2}
	f, _ := reflect.TypeFor[pair]().FieldByName("B")
	if got := loadUint64(offset(addr(&v), f.Offset)); got != 2 || distance(addr(&v), offset(addr(&v), f.Offset)) != f.Offset {
		t.Errorf("field B read as %d", got)
	}
	if s := "text"; stringAt(stringData(s), len(s)) != s {
		t.Error("stringAt(stringData(s)) is not s")
	}
}
