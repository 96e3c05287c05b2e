package dedup

import (
	"reflect"
	"unsafe"
)

// This file holds every unsafe operation of value sharing (table.go): the
// walk reads and writes cached objects by address, which is what makes it
// a few nanoseconds per field instead of tens through reflect.Value. No
// other file of the package imports unsafe (TestUnsafe_OnlyHere); they use
// these helpers and the addr alias. Each helper says what it assumes, and
// unsafe_test.go has a test that fails if a Go release breaks the
// assumption.

// addr is the address of a value the walk reads or writes, or a pointer,
// map or slice array the walk replaces.
type addr = unsafe.Pointer

// offset returns the address off bytes past a: a struct's field or an
// array's element, in the same allocation (the offsets come from reflect).
func offset(a addr, off uintptr) addr { return unsafe.Add(a, off) }

// distance returns how many bytes b lies past a, both in one allocation.
func distance(a, b addr) uintptr { return uintptr(b) - uintptr(a) }

// Assumption: a value whose kind is String, of whatever named type, has
// the layout of a string (TestUnsafe_NamedStringLayout).

func loadString(a addr) string     { return *(*string)(a) }
func storeString(a addr, s string) { *(*string)(a) = s }

// stringData returns the address of s's bytes (nil when s is empty).
func stringData(s string) addr { return addr(unsafe.StringData(s)) }

// stringAt returns the string of the n bytes at p, which nothing writes.
func stringAt(p addr, n int) string { return unsafe.String((*byte)(p), n) }

// Assumption: a pointer, a map, a channel, a func and an unsafe.Pointer are
// each one machine word, the address of what they refer to; for a map,
// the word reflect's UnsafePointer returns (TestUnsafe_WordLayout).

func loadWord(a addr) addr     { return *(*addr)(a) }
func storeWord(a addr, p addr) { *(*addr)(a) = p }

// boxWord returns the address of a new variable holding the word p.
func boxWord(p addr) addr { return addr(&p) }

// sliceHeader is the layout of every slice value: its array, length and
// capacity, in that order (TestUnsafe_SliceLayout).
type sliceHeader struct {
	data     addr
	len, cap int
}

func loadSlice(a addr) sliceHeader     { return *(*sliceHeader)(a) }
func storeSlice(a addr, h sliceHeader) { *(*sliceHeader)(a) = h }

// boxSlice returns the address of a new variable holding the slice h.
func boxSlice(h sliceHeader) addr { return addr(&h) }

// bytesAt returns the n bytes at a as a slice, to read only.
func bytesAt(a addr, n uintptr) []byte { return unsafe.Slice((*byte)(a), n) }

// Flat values: a bool, integer, float or complex value at a has its kind's
// Go layout.

func loadBool(a addr) bool             { return *(*bool)(a) }
func loadUint8(a addr) uint8           { return *(*uint8)(a) }
func loadUint16(a addr) uint16         { return *(*uint16)(a) }
func loadUint32(a addr) uint32         { return *(*uint32)(a) }
func loadUint64(a addr) uint64         { return *(*uint64)(a) }
func loadFloat32(a addr) float32       { return *(*float32)(a) }
func loadFloat64(a addr) float64       { return *(*float64)(a) }
func loadComplex64(a addr) complex64   { return *(*complex64)(a) }
func loadComplex128(a addr) complex128 { return *(*complex128)(a) }

// stringMapOf returns the map m, a map[string]string (its plan's type is
// exactly that type: no other map type is read as one).
func stringMapOf(m addr) map[string]string { return *(*map[string]string)(boxWord(m)) }

// mapWord returns the word of the map m.
func mapWord(m map[string]string) addr { return reflect.ValueOf(m).UnsafePointer() }

// addressBits returns the address p as a number, to hash by identity.
func addressBits(p addr) uint64 { return uint64(uintptr(p)) }
