package cache

import (
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// fnValues is what one index function said of one object. A single value
// is held inline, so the namespace index costs no allocation.
type fnValues struct {
	// one is the value when many is nil and count is 1.
	one string
	// many holds the values when the function returned several; it is the
	// function's own slice, never modified.
	many  []string
	count int
	// err is the function's failure; the object then has no value in
	// that index.
	err error
}

// at returns the i-th value, 0 <= i < count.
func (v *fnValues) at(i int) string {
	if v.many != nil {
		return v.many[i]
	}
	return v.one
}

// setAll records the values a function returned.
func (v *fnValues) setAll(vals []string) {
	switch len(vals) {
	case 0:
	case 1:
		v.one, v.count = vals[0], 1
	default:
		v.many, v.count = vals, len(vals)
	}
}

// indexValues is what every function of one indexFuncs said of one object,
// aligned with its names. The slice may live in a caller's buffer.
type indexValues struct {
	funcs  *indexFuncs
	values []fnValues
}

// computeIndexValues runs every function of f on obj, appending to buf
// (which may be a caller's stack array) so a write needs no allocation of
// its own. It needs no lock: f is immutable. A nil obj has no values.
func computeIndexValues(f *indexFuncs, obj interface{}, buf []fnValues) indexValues {
	out := indexValues{funcs: f, values: buf[:0]}
	if obj == nil {
		return out
	}
	for i, fn := range f.fns {
		out.values = append(out.values, runIndexFunc(f, i, fn, obj))
	}
	return out
}

// runIndexFunc runs the i-th function of f on obj. A failure leaves no
// value, only the error.
func runIndexFunc(f *indexFuncs, i int, fn IndexFunc, obj interface{}) fnValues {
	if f.byNamespace[i] {
		if m, ok := obj.(metav1.Object); ok {
			ns, err := namespaceOf(m)
			if err != nil {
				return fnValues{err: err}
			}
			return fnValues{one: ns, count: 1}
		}
	}
	vals, err := callIndexFunc(fn, obj)
	if err != nil {
		return fnValues{err: err}
	}
	var v fnValues
	v.setAll(vals)
	return v
}

// namespaceOf is MetaNamespaceIndexFunc's single value without the slice:
// the store's fast path for the namespace index. A typed nil object fails
// as it does through the function.
func namespaceOf(m metav1.Object) (ns string, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("index function panicked: %v", r)
		}
	}()
	return m.GetNamespace(), nil
}

// of returns what the i-th function said; an object without values (nil,
// or computed for a nil object) has none.
func (v *indexValues) of(i int) *fnValues {
	if i >= len(v.values) {
		return &noValues
	}
	return &v.values[i]
}

// noValues is the empty result.
var noValues fnValues

// err joins every failure, naming the index and the key, as an
// indexFailure; nil if none.
func (v *indexValues) err(key string) error {
	var all []error
	for i := range v.values {
		if e := v.values[i].err; e != nil {
			all = append(all, fmt.Errorf("index %q of key %q: %w", v.funcs.names[i], key, e))
		}
	}
	if len(all) == 0 {
		return nil
	}
	return indexFailure{errors.Join(all...)}
}

// indexFailure is the error of a write that stored its object but left it
// out of the indexes whose function failed. The write happened: callers
// that notify others about changes must still do so.
type indexFailure struct{ err error }

func (f indexFailure) Error() string {
	return "object stored without some index values: " + f.err.Error()
}
func (f indexFailure) Unwrap() error { return f.err }

// callIndexFunc runs user code and turns a panic into an error.
func callIndexFunc(fn IndexFunc, obj interface{}) (vals []string, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("index function panicked: %v", r)
		}
	}()
	return fn(obj)
}
