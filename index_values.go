package cache

import (
	"fmt"
	"slices"

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
	// err is the function's failure; a write panics with it (see
	// indexValues.failure), a query returns it.
	err error
	// panicked is what the function panicked with while a write computed
	// it; the write panics with it again once the object is stored.
	panicked interface{}
}

// failed reports whether the function failed or panicked.
func (v *fnValues) failed() bool { return v.err != nil || v.panicked != nil }

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
		out.values = append(out.values, runIndexFuncForWrite(f, i, fn, obj))
	}
	return out
}

// runIndexFuncForWrite is runIndexFunc for a write: a panic of the function
// is kept in the result, so that the write can store the object first and
// panic with it afterwards, as client-go's store does.
func runIndexFuncForWrite(f *indexFuncs, i int, fn IndexFunc, obj interface{}) (v fnValues) {
	defer func() {
		if p := recover(); p != nil {
			v = fnValues{panicked: p}
		}
	}()
	return runIndexFunc(f, i, fn, obj)
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
// the store's fast path for the namespace index. A typed nil object panics
// as it does through the function.
func namespaceOf(m metav1.Object) (ns string, err error) {
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

// failure is what a write panics with, as client-go's store does, when an
// index function failed on the object stored under key: the function's own
// panic, or an error naming the key and the failing index. It is nil when
// every function succeeded. The first failing function decides. A store
// cannot file an object where it cannot index it, and its write methods
// have no error to return.
func (v *indexValues) failure(key string) interface{} {
	for i := range v.values {
		if p := v.values[i].panicked; p != nil {
			return p
		}
		if e := v.values[i].err; e != nil {
			return fmt.Errorf("unable to calculate an index entry for key %q on index %q: %v", key, v.funcs.names[i], e)
		}
	}
	return nil
}

// cleared is v with no values at all: filing under it files a slot
// nowhere.
func (v indexValues) cleared() indexValues { return indexValues{funcs: v.funcs} }

// unfilingFailed is v with the results of the failed functions emptied:
// filing under it takes a slot out of those indexes instead of leaving it
// where it was.
func (v indexValues) unfilingFailed() indexValues {
	out := indexValues{funcs: v.funcs, values: slices.Clone(v.values)}
	for i := range out.values {
		if out.values[i].failed() {
			out.values[i] = fnValues{}
		}
	}
	return out
}

// callIndexFunc runs user code. A panic is not recovered: it reaches the
// goroutine that wrote or queried the store, as in client-go.
func callIndexFunc(fn IndexFunc, obj interface{}) (vals []string, err error) {
	return fn(obj)
}
