package cache

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"
)

// Getter is the REST client through which a ListWatch made by
// NewListWatchFromClient or NewFilteredListWatchFromClient sends its
// requests.
//
// This is the one deliberate departure from client-go's API. There, Getter is
// an interface whose only method is Get() *rest.Request; naming that type would
// make this package import k8s.io/client-go, which it must not. Go has no way
// to name "a method Get returning some type we cannot mention", so Getter is an
// interface without methods, which every value satisfies, and the value's
// shape is checked by reflection when the ListWatch is built. A usable value has a method Get() R, where R is a request builder
// with these methods:
//
//	Namespace(string) R
//	Resource(string) R
//	VersionedParams(runtime.Object, runtime.ParameterCodec) R
//	Do(context.Context) S  // S has Get() (runtime.Object, error)
//	Watch(context.Context) (watch.Interface, error)
//
// *rest.RESTClient, rest.Interface and the clients returned by the RESTClient
// method of every typed clientset group (clientset.CoreV1().RESTClient(), ...)
// all qualify, as does any hand-written value implementing client-go's Getter,
// so code written against client-go compiles and behaves the same. The
// compiler cannot reject a value of another shape; instead the ListWatch built
// from it fails every List and Watch with an error that names the value's type
// and the first missing or mismatched method, and the problem is logged once
// when the ListWatch is made.
type Getter interface{}

// errInvalidGetter marks the errors returned by a ListWatch whose Getter does
// not have the shape Getter's doc comment describes.
var errInvalidGetter = errors.New("invalid Getter")

// Types the request builder's methods are checked against, and the static
// types of the arguments passed to them.
var (
	stringType         = reflect.TypeFor[string]()
	contextType        = reflect.TypeFor[context.Context]()
	listOptionsPtrType = reflect.TypeFor[*metav1.ListOptions]()
	parameterCodecType = reflect.TypeFor[runtime.ParameterCodec]()
	objectType         = reflect.TypeFor[runtime.Object]()
	watchType          = reflect.TypeFor[watch.Interface]()
	errorType          = reflect.TypeFor[error]()
)

// The rest of the package reaches a Getter only through newRESTRequester and
// the requester's list and watch methods. That is the seam the client-go
// overlay (overlay/cmd/kcache-overlay) uses: it replaces this file with one
// declaring client-go's Getter interface and the same three functions
// without reflection. Everything else here serves this file only.

// restRequester sends list and watch requests through a Getter by calling
// its request builder's methods by reflection, in the order client-go's
// ListWatch does: Get, Namespace (only for a non-empty namespace), Resource,
// VersionedParams with metav1.ParameterCodec, then Do(ctx).Get() or
// Watch(ctx).
//
// Invariant: if err is nil, client is a non-nil value whose type has the
// shape checked by checkGetterShape. A restRequester is immutable and safe
// for concurrent use as far as the Getter itself is.
type restRequester struct {
	client reflect.Value
	err    error
}

// newRESTRequester checks c's shape once. A value of the wrong shape yields
// a requester whose every request fails with the reason, and is logged.
func newRESTRequester(c Getter) *restRequester {
	v := reflect.ValueOf(c)
	err := checkGetterShape(v)
	if err != nil {
		err = fmt.Errorf("%w: %T: %w", errInvalidGetter, c, err)
		// The message names the ListWatch the user built; this file
		// refers to nothing of listwatch.go, which stands above it.
		klog.Background().Error(err, "ListWatch built from a client it cannot send requests through; its List and Watch will fail")
	}
	return &restRequester{client: v, err: err}
}

// list performs a LIST of resource in namespace (all namespaces when empty).
// Errors of the request itself are returned as the client made them, so
// callers can still classify API errors (apierrors.IsResourceExpired...).
func (r *restRequester) list(ctx context.Context, namespace, resource string, options *metav1.ListOptions) (obj runtime.Object, err error) {
	if r.err != nil {
		return nil, fmt.Errorf("listing %s: %w", resource, r.err)
	}
	defer recoverToError(&err, "listing "+resource)
	req := r.request(namespace, resource, options)
	return decodeResult(call(req, "Do", contextArg(ctx))[0])
}

// resultDecoder is the Get method of what a request's Do returns
// (*rest.Result's, for client-go's clients).
type resultDecoder interface {
	Get() (runtime.Object, error)
}

// decodeResult calls result's Get. Where result has that method in its
// method set, the call is a plain interface call, as client-go's own
// ListWatch makes it: nothing of ours then holds the result while Get
// decodes it, so the response body it holds can be collected as soon as
// Get itself is done with it. Called by reflection, the result would stay
// referenced from the reflective call's frame until Get returns: a whole
// list response, kept beside the objects decoded from it.
func decodeResult(result reflect.Value) (runtime.Object, error) {
	if result.Kind() == reflect.Interface {
		result = result.Elem()
	}
	if result.IsValid() && result.CanInterface() {
		if d, ok := result.Interface().(resultDecoder); ok {
			return d.Get()
		}
	}
	out := call(result, "Get")
	return asObject(out[0]), asError(out[1])
}

// watch starts a WATCH of resource in namespace (all namespaces when empty).
// Like list, it returns the client's own errors unchanged.
func (r *restRequester) watch(ctx context.Context, namespace, resource string, options *metav1.ListOptions) (w watch.Interface, err error) {
	if r.err != nil {
		return nil, fmt.Errorf("watching %s: %w", resource, r.err)
	}
	defer recoverToError(&err, "watching "+resource)
	out := call(r.request(namespace, resource, options), "Watch", contextArg(ctx))
	w, _ = out[0].Interface().(watch.Interface)
	if err = asError(out[1]); err == nil && w == nil {
		err = fmt.Errorf("watching %s: client returned neither a watch nor an error", resource)
	}
	return w, err
}

// request builds the request up to and including its query parameters.
func (r *restRequester) request(namespace, resource string, options *metav1.ListOptions) reflect.Value {
	req := call(r.client, "Get")[0]
	if namespace != "" {
		req = call(req, "Namespace", reflect.ValueOf(namespace))[0]
	}
	req = call(req, "Resource", reflect.ValueOf(resource))[0]
	codec := metav1.ParameterCodec
	return call(req, "VersionedParams", reflect.ValueOf(options), reflect.ValueOf(&codec).Elem())[0]
}

// call invokes v's method name. The shape check guarantees the method exists
// with fitting types; a method that panics, or a nil value returned midway
// through the chain, panics here and is turned into an error by the caller's
// recoverToError.
func call(v reflect.Value, name string, args ...reflect.Value) []reflect.Value {
	if v.Kind() == reflect.Interface {
		v = v.Elem()
	}
	if !v.IsValid() {
		panic(fmt.Sprintf("cannot call %s on a nil value returned by the previous call", name))
	}
	m := v.MethodByName(name)
	if !m.IsValid() {
		panic(fmt.Sprintf("%s returned by the previous call has no method %s", v.Type(), name))
	}
	return m.Call(args)
}

// contextArg wraps ctx so that even a nil context keeps its static type.
func contextArg(ctx context.Context) reflect.Value {
	return reflect.ValueOf(&ctx).Elem()
}

func asObject(v reflect.Value) runtime.Object {
	obj, _ := v.Interface().(runtime.Object)
	return obj
}

func asError(v reflect.Value) error {
	err, _ := v.Interface().(error)
	return err
}

// recoverToError turns a panic raised by the Getter (or by a nil result
// inside the request chain) into an error naming the operation.
func recoverToError(err *error, operation string) {
	if p := recover(); p != nil {
		*err = fmt.Errorf("%s: client panicked: %v", operation, p)
	}
}

// checkGetterShape reports why v cannot be used as a Getter, or nil if it can.
func checkGetterShape(v reflect.Value) error {
	if !v.IsValid() {
		return errors.New("the client is nil")
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface, reflect.Map, reflect.Func, reflect.Chan, reflect.Slice:
		if v.IsNil() {
			return errors.New("the client is a nil " + v.Type().String())
		}
	}
	get, err := checkMethod(v.Type(), "Get", nil, []reflect.Type{nil})
	if err != nil {
		return err
	}
	req := get.Out(0)
	for _, step := range []struct {
		name string
		in   []reflect.Type
	}{
		{"Namespace", []reflect.Type{stringType}},
		{"Resource", []reflect.Type{stringType}},
		{"VersionedParams", []reflect.Type{listOptionsPtrType, parameterCodecType}},
	} {
		if _, err := checkMethod(req, step.name, step.in, []reflect.Type{req}); err != nil {
			return fmt.Errorf("the request returned by Get: %w", err)
		}
	}
	if _, err := checkMethod(req, "Watch", []reflect.Type{contextType}, []reflect.Type{watchType, errorType}); err != nil {
		return fmt.Errorf("the request returned by Get: %w", err)
	}
	do, err := checkMethod(req, "Do", []reflect.Type{contextType}, []reflect.Type{nil})
	if err != nil {
		return fmt.Errorf("the request returned by Get: %w", err)
	}
	if _, err := checkMethod(do.Out(0), "Get", nil, []reflect.Type{objectType, errorType}); err != nil {
		return fmt.Errorf("the result returned by Do: %w", err)
	}
	return nil
}

// checkMethod checks that t has a method name accepting arguments of the
// types in and returning values assignable to the types in out (nil: any
// type), and returns the method's type without its receiver.
func checkMethod(t reflect.Type, name string, in, out []reflect.Type) (reflect.Type, error) {
	want := describeMethod(name, in, out)
	m, ok := t.MethodByName(name)
	if !ok {
		return nil, fmt.Errorf("%s has no method %s", t, want)
	}
	sig := m.Type
	first := 0
	if t.Kind() != reflect.Interface {
		first = 1 // skip the receiver
	}
	if sig.NumIn()-first != len(in) || sig.NumOut() != len(out) || sig.IsVariadic() {
		return nil, fmt.Errorf("%s.%s is %s, want %s", t, name, sig, want)
	}
	ins := make([]reflect.Type, len(in))
	for i, arg := range in {
		ins[i] = sig.In(first + i)
		if !arg.AssignableTo(ins[i]) {
			return nil, fmt.Errorf("%s.%s is %s, want %s", t, name, sig, want)
		}
	}
	outs := make([]reflect.Type, len(out))
	for i, res := range out {
		outs[i] = sig.Out(i)
		if res != nil && !outs[i].AssignableTo(res) {
			return nil, fmt.Errorf("%s.%s is %s, want %s", t, name, sig, want)
		}
	}
	return reflect.FuncOf(ins, outs, false), nil
}

// describeMethod spells the wanted signature for error messages.
func describeMethod(name string, in, out []reflect.Type) string {
	return fmt.Sprintf("%s%s", name, reflect.FuncOf(in, replaceNil(out), false).String()[len("func"):])
}

// replaceNil stands an empty interface in for "any type" so the wanted
// signature can be printed.
func replaceNil(types []reflect.Type) []reflect.Type {
	out := make([]reflect.Type, len(types))
	for i, t := range types {
		out[i] = t
		if t == nil {
			out[i] = reflect.TypeFor[any]()
		}
	}
	return out
}
