package cache

import (
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
)

// nameRegistry records the InformerNames currently reserved in the process,
// so that two informers never publish metrics under the same identity.
var nameRegistry = struct {
	// mu guards names.
	mu    sync.Mutex
	names map[string]*InformerName
}{names: map[string]*InformerName{}}

// InformerName is a process-unique name for a group of informers, used to
// label their metrics. Create it with NewInformerName and give it back with
// Release. A nil *InformerName is valid and reserves nothing.
type InformerName struct {
	name string
	// active is true from NewInformerName until Release.
	active atomic.Bool

	// mu guards resources.
	mu sync.Mutex
	// resources holds the reservation flag handed out for each resource.
	resources map[schema.GroupVersionResource]*atomic.Bool
}

// NewInformerName reserves name for this process. An empty name, or one that
// is reserved and not yet released, is an error.
func NewInformerName(name string) (*InformerName, error) {
	if name == "" {
		return nil, errors.New("informer name cannot be empty")
	}
	nameRegistry.mu.Lock()
	defer nameRegistry.mu.Unlock()
	if old, ok := nameRegistry.names[name]; ok && old.active.Load() {
		return nil, fmt.Errorf("informer name %q is already registered", name)
	}
	n := &InformerName{name: name, resources: map[schema.GroupVersionResource]*atomic.Bool{}}
	n.active.Store(true)
	nameRegistry.names[name] = n
	return n, nil
}

// Name returns the reserved name, or "" for a nil receiver.
func (n *InformerName) Name() string {
	if n == nil {
		return ""
	}
	return n.name
}

// WithResource returns the identity of one informer: this name and a
// resource. The first request for a resource is Reserved; a second request
// for the same resource is logged and returns an identity that is not
// Reserved, so its metrics are not published twice.
func (n *InformerName) WithResource(gvr schema.GroupVersionResource) InformerNameAndResource {
	if n == nil {
		return InformerNameAndResource{gvr: gvr}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	id := InformerNameAndResource{name: n.name, gvr: gvr, reserved: &atomic.Bool{}}
	if !n.active.Load() {
		return id
	}
	if _, taken := n.resources[gvr]; taken {
		klog.Background().Error(nil, "Duplicate informer registration - metrics will not be published",
			"informerName", n.name, "group", gvr.Group, "version", gvr.Version, "resource", gvr.Resource)
		return id
	}
	id.reserved.Store(true)
	n.resources[gvr] = id.reserved
	return id
}

// Release gives the name and every identity made from it back: they stop
// being Reserved and the name may be registered again.
func (n *InformerName) Release() {
	if n == nil {
		return
	}
	n.mu.Lock()
	for _, flag := range n.resources {
		flag.Store(false)
	}
	n.resources = map[schema.GroupVersionResource]*atomic.Bool{}
	n.active.Store(false)
	n.mu.Unlock()

	nameRegistry.mu.Lock()
	defer nameRegistry.mu.Unlock()
	if nameRegistry.names[n.name] == n {
		delete(nameRegistry.names, n.name)
	}
}

// InformerNameAndResource identifies one informer for its metrics. The zero
// value is valid and not Reserved.
type InformerNameAndResource struct {
	name     string
	gvr      schema.GroupVersionResource
	reserved *atomic.Bool
}

// Name returns the informer name part.
func (n InformerNameAndResource) Name() string { return n.name }

// GroupVersionResource returns the resource part.
func (n InformerNameAndResource) GroupVersionResource() schema.GroupVersionResource { return n.gvr }

// Reserved reports whether this identity is unique in the process and not
// released; only reserved identities publish metrics.
func (n InformerNameAndResource) Reserved() bool {
	return n.reserved != nil && n.reserved.Load()
}

// ResetInformerNamesForTesting releases every registered name. Tests only.
func ResetInformerNamesForTesting() {
	nameRegistry.mu.Lock()
	all := make([]*InformerName, 0, len(nameRegistry.names))
	for _, n := range nameRegistry.names {
		all = append(all, n)
	}
	nameRegistry.mu.Unlock()
	for _, n := range all {
		n.Release()
	}
}

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
