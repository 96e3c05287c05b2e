package harness

import (
	"reflect"
	"sort"
	"unsafe"
)

// Where the bytes of cached objects go: every block of memory the objects
// reach (a pointer's target, a slice's array, a string's bytes, a map) is
// counted once, rounded up to the allocator's size class, and charged to
// the field path it was first reached at. A block that many objects share
// is charged once, to whichever object reached it first, so the figures per
// object are what each object holds on its own plus its part of what is
// shared. Maps are estimates (the runtime's layout is not visible); two
// strings sliced from one allocation count twice.

// Attribution is what Attribute found: the objects walked, their bytes per
// object in all, and the paths holding the most.
type Attribution struct {
	Objects        int
	BytesPerObject float64
	Rows           []AttributionRow
}

// AttributionRow is one field path: "Pod.Spec.Containers[]" is the array
// of a pod's containers, a trailing "*" a pointer's target, "$" a string's
// bytes, "{}" a map.
type AttributionRow struct {
	Path                            string
	BytesPerObject, BlocksPerObject float64
}

// Attribute walks objs and returns the top paths by bytes. It allocates
// a set of every block reached: call it after measuring.
func Attribute(objs []any, top int) Attribution {
	a := attributor{seen: map[uintptr]bool{}, bytes: map[string]uintptr{}, blocks: map[string]int{}}
	for _, o := range objs {
		v := reflect.ValueOf(o)
		name := "nil"
		if v.IsValid() {
			name = reflect.Indirect(v).Type().Name()
		}
		a.walk(v, name, 0)
	}
	n := float64(max(len(objs), 1))
	out := Attribution{Objects: len(objs)}
	for p, b := range a.bytes {
		out.BytesPerObject += float64(b) / n
		out.Rows = append(out.Rows, AttributionRow{Path: p, BytesPerObject: float64(b) / n, BlocksPerObject: float64(a.blocks[p]) / n})
	}
	sort.Slice(out.Rows, func(i, j int) bool {
		if out.Rows[i].BytesPerObject != out.Rows[j].BytesPerObject {
			return out.Rows[i].BytesPerObject > out.Rows[j].BytesPerObject
		}
		return out.Rows[i].Path < out.Rows[j].Path
	})
	if len(out.Rows) > top {
		out.Rows = out.Rows[:top]
	}
	return out
}

type attributor struct {
	seen   map[uintptr]bool
	bytes  map[string]uintptr
	blocks map[string]int
}

// maxAttributionDepth bounds the walk (API objects are far from it).
const maxAttributionDepth = 64

// charge counts the block of n bytes at p against path, once; it reports
// whether the block was new.
func (a *attributor) charge(p, n uintptr, path string) bool {
	if p == 0 || n == 0 || a.seen[p] {
		return false
	}
	a.seen[p] = true
	a.bytes[path] += sizeClass(n)
	a.blocks[path]++
	return true
}

func (a *attributor) walk(v reflect.Value, path string, depth int) {
	if depth > maxAttributionDepth {
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() && a.charge(v.Pointer(), v.Type().Elem().Size(), path+"*") {
			a.walk(v.Elem(), path, depth+1)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			a.walk(v.Field(i), path+"."+v.Type().Field(i).Name, depth+1)
		}
	case reflect.Array:
		for i := range v.Len() {
			a.walk(v.Index(i), path+"[]", depth+1)
		}
	case reflect.Slice:
		if v.Cap() > 0 && a.charge(v.Pointer(), uintptr(v.Cap())*v.Type().Elem().Size(), path+"[]") {
			for i := range v.Len() {
				a.walk(v.Index(i), path+"[]", depth+1)
			}
		}
	case reflect.String:
		if s := v.String(); s != "" {
			a.charge(uintptr(unsafe.Pointer(unsafe.StringData(s))), uintptr(len(s)), path+"$")
		}
	case reflect.Map:
		if !v.IsNil() && a.charge(v.Pointer(), mapBytes(v), path+"{}") {
			for it := v.MapRange(); it.Next(); {
				a.walk(it.Key(), path+"{k}", depth+1)
				a.walk(it.Value(), path+"{v}", depth+1)
			}
		}
	case reflect.Interface:
		if !v.IsNil() {
			a.walk(v.Elem(), path, depth+1)
		}
	}
}

// mapBytes estimates the memory of map v: groups of eight slots, each a
// key and a value, behind a word of control bytes, filled to at most
// seven eighths.
func mapBytes(v reflect.Value) uintptr {
	slot := v.Type().Key().Size() + v.Type().Elem().Size()
	groups := uintptr((v.Len()*8/7)/8 + 1)
	return groups * (8 + 8*slot)
}

// sizeClasses are the Go allocator's object sizes up to 32 KiB; a larger
// object takes whole pages.
var sizeClasses = [...]uintptr{8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256,
	288, 320, 352, 384, 416, 448, 480, 512, 576, 640, 704, 768, 896, 1024, 1152, 1280, 1408, 1536, 1792, 2048,
	2304, 2688, 3072, 3200, 3456, 4096, 4864, 5376, 6144, 6528, 6784, 6912, 8192, 9472, 9728, 10240, 10880,
	12288, 13568, 14336, 16384, 18432, 19072, 20480, 21760, 24576, 27264, 28672, 32768}

// sizeClass is the memory the allocator gives a request of n bytes.
func sizeClass(n uintptr) uintptr {
	i := sort.Search(len(sizeClasses), func(i int) bool { return sizeClasses[i] >= n })
	if i < len(sizeClasses) {
		return sizeClasses[i]
	}
	const page = 8192
	return (n + page - 1) / page * page
}
