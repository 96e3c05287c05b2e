package cache

import (
	"fmt"
	"reflect"
	"runtime"
	"strings"
)

// eventFuncsHolder is implemented by the *Funcs handler adapters. They have
// no meaningful type name of their own, so they are named after the
// functions they hold.
type eventFuncsHolder interface {
	eventFuncs() []any
}

// handlerWrapper is implemented by adapters that only forward events to
// another handler (filtering and typed adapters). They are named after the
// handler they wrap.
type handlerWrapper interface {
	wrappedHandler() any
}

// maxHandlerWrapping bounds how many wrappers nameForHandler looks through,
// so that a wrapper that (absurdly) wraps itself cannot loop forever.
const maxHandlerWrapping = 16

// nameForHandler returns a name for handler in logs and traces, telling the
// reader where the handler was written:
//
//   - an adapter that only wraps another handler is named after it;
//   - a *Funcs adapter is named after its non-nil functions (see
//     nameForFunctions);
//   - anything else is named "import/path.TypeName", pointers dereferenced;
//   - nil is "<nil>", and a nil pointer or an unnamed type falls back to %T.
//
// handler may be a ResourceEventHandler or a TypedResourceEventHandler. The
// name is computed with reflection: call this once per registration, not
// per event.
func nameForHandler(handler any) string {
	for range maxHandlerWrapping {
		if isNilHandler(handler) {
			break
		}
		wrapper, ok := handler.(handlerWrapper)
		if !ok {
			break
		}
		inner := wrapper.wrappedHandler()
		if isNilHandler(inner) {
			break
		}
		handler = inner
	}
	if isNilHandler(handler) {
		return fmt.Sprintf("%T", handler)
	}
	if holder, ok := handler.(eventFuncsHolder); ok {
		if name := nameForFunctions(holder.eventFuncs()...); name != "" {
			return name
		}
	}
	return qualifiedTypeName(handler)
}

// isNilHandler reports whether handler is nil or a nil pointer, on which no
// method may be called.
func isNilHandler(handler any) bool {
	if handler == nil {
		return true
	}
	value := reflect.ValueOf(handler)
	return value.Kind() == reflect.Pointer && value.IsNil()
}

// qualifiedTypeName returns "import/path.TypeName" for the type of v, or of
// what v points to; an unnamed type yields its %T form.
func qualifiedTypeName(v any) string {
	typ := reflect.TypeOf(v)
	if typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	if typ.Name() == "" {
		return fmt.Sprintf("%T", v)
	}
	if typ.PkgPath() == "" {
		return typ.Name()
	}
	return typ.PkgPath() + "." + typ.Name()
}

// nameForFunctions names a set of functions, skipping nil ones. When they
// were all written inside the same function or type (closures of one
// function, methods of one type), that common scope names them all, e.g.
// "example.com/ctrl.(*Controller)" or "example.com/ctrl.NewController".
// Otherwise, including when their only common scope is a whole package,
// their full names are joined with "+". No functions yield "".
func nameForFunctions(funcs ...any) string {
	var names []string
	scope, sameScope := "", true
	for _, f := range funcs {
		name := functionName(f)
		if name == "" {
			continue
		}
		names = append(names, name)
		s := enclosingScope(name)
		switch {
		case len(names) == 1:
			scope = s
		case s != scope:
			sameScope = false
		}
	}
	if len(names) == 0 {
		return ""
	}
	if sameScope && scopeIsNarrowerThanPackage(scope) {
		return scope
	}
	return strings.Join(names, "+")
}

// functionName returns the runtime's name for the function in f, or "" if
// f is not a non-nil function.
func functionName(f any) string {
	value := reflect.ValueOf(f)
	if value.Kind() != reflect.Func || value.IsNil() {
		return ""
	}
	fn := runtime.FuncForPC(value.Pointer())
	if fn == nil {
		return ""
	}
	return fn.Name()
}

// enclosingScope drops the last element of a runtime function name:
// "pkg.F.func1" becomes "pkg.F", "pkg.T.M-fm" becomes "pkg.T" and "pkg.F"
// becomes "pkg". Dots inside the "[...]" of generic instantiations are not
// separators.
func enclosingScope(name string) string {
	depth := 0
	for i := len(name) - 1; i > 0; i-- {
		switch name[i] {
		case ']':
			depth++
		case '[':
			depth--
		case '.':
			if depth == 0 {
				return name[:i]
			}
		case '/':
			if depth == 0 {
				return name
			}
		}
	}
	return name
}

// scopeIsNarrowerThanPackage reports whether scope names something inside a
// package (its last path element contains a dot) rather than a package
// alone, which would say too little about where a handler was written.
func scopeIsNarrowerThanPackage(scope string) bool {
	lastElement := scope[strings.LastIndexByte(scope, '/')+1:]
	return strings.Contains(lastElement, ".")
}
