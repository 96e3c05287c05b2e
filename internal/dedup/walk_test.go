package dedup

import (
	"math"
	"reflect"
	"slices"
	"sync"
	"testing"
	"unsafe"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// references lists every address obj refers to (pointers, slices' and
// strings' data, maps), sorted: if a walk replaced any reference inside
// obj, even by an equal value, the list changes.
func references(obj interface{}) []uintptr {
	var out []uintptr
	var visit func(v reflect.Value, depth int)
	visit = func(v reflect.Value, depth int) {
		if depth > 100 {
			return
		}
		switch v.Kind() {
		case reflect.String:
			out = append(out, uintptr(unsafe.Pointer(unsafe.StringData(v.String()))))
		case reflect.Pointer:
			out = append(out, uintptr(v.UnsafePointer()))
			if !v.IsNil() {
				visit(v.Elem(), depth+1)
			}
		case reflect.Slice:
			out = append(out, uintptr(v.UnsafePointer()), uintptr(v.Cap()))
			for i := range v.Len() {
				visit(v.Index(i), depth+1)
			}
		case reflect.Array:
			for i := range v.Len() {
				visit(v.Index(i), depth+1)
			}
		case reflect.Map:
			out = append(out, uintptr(v.UnsafePointer()))
			for it := v.MapRange(); it.Next(); {
				visit(it.Key(), depth+1)
				visit(it.Value(), depth+1)
			}
		case reflect.Interface:
			if !v.IsNil() {
				visit(v.Elem(), depth+1)
			}
		case reflect.Struct:
			for i := range v.NumField() {
				visit(v.Field(i), depth+1)
			}
		}
	}
	visit(reflect.ValueOf(obj), 0)
	slices.Sort(out)
	return out
}

// walkNode is a type of this test's own, with parts of every kind the walk
// replaces and an unexported one it must leave alone.
type walkNode struct {
	Ptr    *walkLeaf
	Slice  []walkLeaf
	Map    map[string]walkLeaf
	Str    string
	Arr    [2]*walkLeaf
	Any    interface{}
	Bytes  []byte
	hidden *walkLeaf
	secret map[int]walkLeaf
}

type walkLeaf struct {
	N    int
	Name string
	Tags []string
}

func newWalkNode(n int) *walkNode {
	leaf := func() *walkLeaf { return &walkLeaf{N: n, Name: string([]byte("leaf")), Tags: []string{"a", "b"}} }
	return &walkNode{
		Ptr:    leaf(),
		Slice:  []walkLeaf{*leaf(), *leaf()},
		Map:    map[string]walkLeaf{string([]byte("k")): *leaf()},
		Str:    string([]byte("str")),
		Arr:    [2]*walkLeaf{leaf(), nil},
		Any:    map[string]interface{}{"x": []interface{}{string([]byte("y")), int64(n)}},
		Bytes:  []byte("bytes"),
		hidden: leaf(),
		secret: map[int]walkLeaf{n: *leaf()},
	}
}

// The walk never writes into its input, whatever it replaces: the input
// refers to the very memory it did before, and both input and result are
// deep-equal to what was given.
func TestDeduper_NeverWritesInput(t *testing.T) {
	tests := []struct {
		name string
		make func(i int) interface{}
	}{
		{"pods of one ReplicaSet", func(i int) interface{} { return dedupPod(1, i) }},
		{"pods of several ReplicaSets", func(i int) interface{} { return dedupPod(i%3, i) }},
		{"nodes of every kind", func(int) interface{} { return newWalkNode(1) }},
		{"nodes that differ", func(i int) interface{} { return newWalkNode(i % 2) }},
		{"unstructured", func(i int) interface{} {
			return &unstructured.Unstructured{Object: map[string]interface{}{
				"metadata": map[string]interface{}{"name": "x", "labels": map[string]interface{}{"a": "b"}},
				"spec":     map[string]interface{}{"n": int64(i % 2), "list": []interface{}{"p", "q"}},
			}}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := eagerDeduper()
			for i := range 5 {
				in := tt.make(i)
				want := tt.make(i)
				refs := references(in)
				out := s.dedup(in)
				if !slices.Equal(references(in), refs) {
					t.Fatalf("object %d: the walk replaced a reference inside its input", i)
				}
				if !reflect.DeepEqual(in, want) || !reflect.DeepEqual(out, want) {
					t.Fatalf("object %d: input or result differs from what was given", i)
				}
			}
		})
	}
}

// Equal parts of two walked objects are one in memory; parts at positions
// no longer looked up, and the unexported ones, stay the input's memory.
func TestDeduper_PathCopy(t *testing.T) {
	s := eagerDeduper()
	plan := s.planOf(reflect.TypeFor[walkNode]())
	plan.fields[1].site.off.Store(true) // Slice: as after a failed trial
	a := dedupObj(s, newWalkNode(1))
	in := newWalkNode(1)
	b := dedupObj(s, in)
	tests := []struct {
		name string
		got  bool
	}{
		{"pointer shared", a.Ptr == b.Ptr},
		{"pointer in an array shared", a.Arr[0] == b.Arr[0]},
		{"map shared", sameMap(a.Map, b.Map)},
		{"bytes shared", sameSlice(a.Bytes, b.Bytes)},
		{"string shared", unsafe.StringData(a.Str) == unsafe.StringData(b.Str)},
		{"map in an interface shared", sameMap(a.Any.(map[string]interface{}), b.Any.(map[string]interface{}))},
		{"unlooked-up slice copied, its elements' parts shared", !sameSlice(a.Slice, b.Slice) && sameSlice(a.Slice[0].Tags, b.Slice[0].Tags)},
		{"unlooked-up slice is a new array, not the input's", !sameSlice(b.Slice, in.Slice)},
		{"unexported field kept as given", b.hidden == in.hidden},
		{"unexported map kept as given", sameMap(b.secret, in.secret)},
	}
	for _, tt := range tests {
		if !tt.got {
			t.Errorf("%s: no", tt.name)
		}
	}
}

// An object whose parts are all shared already is returned as it is: the
// walk copies nothing.
func TestDeduper_SharedObjectIsKept(t *testing.T) {
	s := eagerDeduper()
	dedupObj(s, dedupPod(1, 1))
	b := dedupObj(s, dedupPod(1, 2))
	if again := dedupObj(s, b); again != b {
		t.Error("walking an object made of shared parts made a new one")
	}
}

// Objects are read while others are walked and shared with them: the race
// detector sees any write into memory a reader can reach.
func TestDeduper_ConcurrentReaders(t *testing.T) {
	s := eagerDeduper()
	first := make([]*v1.Pod, 20)
	for i := range first {
		first[i] = dedupObj(s, dedupPod(i%4, i))
	}
	var wg sync.WaitGroup
	for g := range 2 {
		wg.Go(func() {
			for i := range 100 {
				p := dedupPod(i%4, 1000*(g+1)+i)
				if got := dedupObj(s, p); !reflect.DeepEqual(got, p) {
					t.Errorf("shared pod %d differs from its input", i)
				}
			}
		})
	}
	for range 2 {
		wg.Go(func() {
			for i, p := range first {
				if !reflect.DeepEqual(p, dedupPod(i%4, i)) {
					t.Errorf("cached pod %d changed while others were shared", i)
				}
			}
		})
	}
	wg.Wait()
}

// A value equal to one shared already is found whole, before its parts are
// walked: none of them is looked up again and nothing is copied for it.
func TestDeduper_EqualValueFoundWhole(t *testing.T) {
	s := eagerDeduper()
	envName := s.planOf(reflect.TypeFor[v1.EnvVar]()).fields[0].site
	a := dedupObj(s, dedupPod(1, 1))
	before := envName.lookups.Load()
	if before == 0 {
		t.Fatal("the first pod's env names were not looked up")
	}
	b := dedupObj(s, dedupPod(1, 2))
	if got := envName.lookups.Load(); got != before {
		t.Errorf("env names looked up %d more times for a pod whose containers equal shared ones", got-before)
	}
	if !sameSlice(a.Spec.Containers, b.Spec.Containers) {
		t.Error("equal containers were not shared")
	}
}

// walkHash walks obj (a pointer to a struct) as share does, asking for
// its hash, and returns the hash with what the walk made of obj.
func walkHash(s *Table, obj interface{}) (uint64, interface{}) {
	v := reflect.ValueOf(obj)
	t := v.Type().Elem()
	w := &walker{s: s}
	root := w.push(v.UnsafePointer(), t, -1)
	h := w.walkValue(s.planOf(t), v.UnsafePointer(), position{path: pathRoot}, 0, true, root, true)
	if c := w.pop(root); c != nil {
		return h, reflect.NewAt(t, c).Interface()
	}
	return h, obj
}

// The hash a walk computes while it shares is the hash of the content
// alone: the one a lookup computes for an equal value, whether the walk
// replaced parts of it or found them shared already.
func TestDeduper_HashMatchesWalk(t *testing.T) {
	tests := []struct {
		name string
		make func(i int) interface{}
	}{
		{"pod", func(i int) interface{} { return dedupPod(i%2, i) }},
		{"nodes of every kind", func(i int) interface{} { return newWalkNode(i % 2) }},
		{"empty node", func(int) interface{} { return &walkNode{} }},
		{"unstructured", func(i int) interface{} {
			return &unstructured.Unstructured{Object: map[string]interface{}{
				"spec": map[string]interface{}{"n": int64(i % 2), "f": 1.5, "ok": true, "list": []interface{}{"p", map[string]interface{}{"q": "r"}}},
			}}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := eagerDeduper()
			for i := range 4 {
				in := tt.make(i)
				plan := s.planOf(reflect.TypeOf(in).Elem())
				want := s.hashValue(plan, reflect.ValueOf(in).UnsafePointer(), 0, true)
				got, out := walkHash(s, in)
				if got != want {
					t.Fatalf("object %d: walk hash %x, content hash %x", i, got, want)
				}
				if again := s.hashValue(plan, reflect.ValueOf(out).UnsafePointer(), 0, true); again != want {
					t.Fatalf("object %d: the shared result hashes to %x, its input to %x", i, again, want)
				}
			}
		})
	}
}

// Values that differ only in padding, or in a float's sign of zero, are
// equal; NaN never is, as reflect.DeepEqual has it.
func TestDeduper_EqualAtMatchesDeepEqual(t *testing.T) {
	type padded struct {
		A int8
		B int64
	}
	type holder struct {
		P  padded
		F  float64
		Fs []float32
		M  map[string]padded
		I  interface{}
		Fn func()
	}
	nan := math.NaN()
	tests := []struct {
		name string
		a, b holder
	}{
		{"equal", holder{P: padded{1, 2}, F: 1}, holder{P: padded{1, 2}, F: 1}},
		{"padding differs", holder{P: padded{1, 2}}, holder{P: padded{1, 2}}},
		{"field differs", holder{P: padded{1, 2}}, holder{P: padded{1, 3}}},
		{"zero signs", holder{F: 0}, holder{F: math.Copysign(0, -1)}},
		{"NaN", holder{F: nan}, holder{F: nan}},
		{"floats in slices", holder{Fs: []float32{1, 2}}, holder{Fs: []float32{1, 2}}},
		{"nil and empty slice", holder{Fs: nil}, holder{Fs: []float32{}}},
		{"maps", holder{M: map[string]padded{"a": {1, 2}}}, holder{M: map[string]padded{"a": {1, 2}}}},
		{"maps differ", holder{M: map[string]padded{"a": {1, 2}}}, holder{M: map[string]padded{"b": {1, 2}}}},
		{"held values", holder{I: int64(3)}, holder{I: int64(3)}},
		{"held types differ", holder{I: int64(3)}, holder{I: int32(3)}},
		{"funcs", holder{Fn: func() {}}, holder{Fn: func() {}}},
	}
	s := eagerDeduper()
	plan := s.planOf(reflect.TypeFor[holder]())
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := tt.a, tt.b
			if tt.name == "padding differs" {
				// Write into the padding byte after A.
				*(*byte)(unsafe.Add(unsafe.Pointer(&b.P), 1)) = 0xff
			}
			// Exact: as reflect.DeepEqual, except that -0 is not +0 (their
			// JSON differs).
			want := reflect.DeepEqual(a, b) && tt.name != "zero signs"
			if got := s.equalAt(plan, unsafe.Pointer(&a), unsafe.Pointer(&b), 0); got != want {
				t.Errorf("equalAt = %v, reflect.DeepEqual = %v", got, want)
			}
			if want && s.hashValue(plan, unsafe.Pointer(&a), 0, true) != s.hashValue(plan, unsafe.Pointer(&b), 0, true) {
				t.Error("equal values hash apart")
			}
		})
	}
}
