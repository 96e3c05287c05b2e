package clientgo

import (
	"fmt"
	"reflect"
	"runtime"
	"strings"

	toolscache "k8s.io/client-go/tools/cache"

	kcache "github.com/kcache/cache"
)

// handler delivers kcache's notifications to a client-go handler. The only
// translation is the tombstone: kcache's DeletedFinalStateUnknown becomes
// client-go's, so that user type switches (and client-go's typed handler
// adapters, which build DeletedObject from it) match.
type handler struct {
	h toolscache.ResourceEventHandler
}

var _ kcache.ResourceEventHandler = handler{}

func (a handler) OnAdd(obj interface{}, isInInitialList bool) { a.h.OnAdd(obj, isInInitialList) }
func (a handler) OnUpdate(oldObj, newObj interface{})         { a.h.OnUpdate(oldObj, newObj) }
func (a handler) OnDelete(obj interface{})                    { a.h.OnDelete(toClientGoObject(obj)) }

// toKcacheHandler wraps h for kcache. A nil handler, or a nil pointer, is
// passed on as nil: kcache accepts it, as client-go does, and its first
// notification panics.
func toKcacheHandler(h toolscache.ResourceEventHandler) kcache.ResourceEventHandler {
	if h == nil {
		return nil
	}
	if v := reflect.ValueOf(h); v.Kind() == reflect.Pointer && v.IsNil() {
		return nil
	}
	return handler{h: h}
}

// registration is the client-go handle of one handler added to a kcache
// informer. RemoveEventHandler recognises it and hands kcache its own
// handle back.
type registration struct {
	// inner is kcache's handle. Invariant: not nil.
	inner kcache.ResourceEventHandlerRegistration
	// syncedChecker gives the handle client-go's HasSyncedChecker where
	// client-go has it (v0.36 on): the handler's sync, under client-go's
	// name for it (see checker.go).
	*syncedChecker
	// shutdown is closed once the handler returned from its last call.
	shutdown <-chan struct{}
}

var _ toolscache.ResourceEventHandlerRegistration = (*registration)(nil)

// newRegistration wraps kcache's handle of h. upstream is the informer's
// checker name; the handle's checker is named "<upstream> + event handler
// <handler name>", as client-go names it.
func newRegistration(inner kcache.ResourceEventHandlerRegistration, upstream string, h toolscache.ResourceEventHandler, signals *syncSignals) (*registration, error) {
	sc, ok := inner.(interface{ ShutdownChan() <-chan struct{} })
	if !ok {
		return nil, fmt.Errorf("adding event handler: kcache returned a %T, which cannot report its shutdown", inner)
	}
	r := &registration{
		inner:         inner,
		syncedChecker: newSyncedChecker(upstream + " + event handler " + handlerName(h)),
		shutdown:      sc.ShutdownChan(),
	}
	signals.add(inner.HasSyncedChecker(), r.syncedChecker)
	return r, nil
}

// HasSynced reports whether the informer synced and the handler processed
// every object of its initial list.
func (r *registration) HasSynced() bool { return r.inner.HasSynced() }

// ShutdownChan is closed once the handler returned from its last call after
// removal; client-go's ShutDownEventHandler waits on it.
func (r *registration) ShutdownChan() <-chan struct{} { return r.shutdown }

// handlerName names h the way client-go v0.37 names handlers in sync
// checkers and logs: a ResourceEventHandlerFuncs (value or pointer) after
// its functions, anything else as "import/path.TypeName" of the value
// behind it, and "%T" when that gives nothing.
func handlerName(h toolscache.ResourceEventHandler) string {
	name := ""
	switch f := h.(type) {
	case toolscache.ResourceEventHandlerFuncs:
		name = funcsName(f.AddFunc, f.UpdateFunc, f.DeleteFunc)
	case *toolscache.ResourceEventHandlerFuncs:
		if f != nil {
			name = funcsName(f.AddFunc, f.UpdateFunc, f.DeleteFunc)
		}
	case nil:
	default:
		t := reflect.TypeOf(h)
		if v := reflect.ValueOf(h); t.Kind() == reflect.Pointer && !v.IsNil() {
			t = t.Elem()
		}
		name = t.PkgPath()
		if name != "" {
			name += "."
		}
		name += t.Name()
	}
	if name == "" {
		name = fmt.Sprintf("%T", h)
	}
	return name
}

// funcsName names a set of functions, skipping nil ones: by what qualifies
// them all ("pkg.Func" for closures written in pkg.Func) when they share
// it, otherwise by their full names joined with "+".
func funcsName(fs ...any) string {
	var names []string
	qualifier, shared := "", true
	for _, f := range fs {
		v := reflect.ValueOf(f)
		if !v.IsValid() || v.IsNil() {
			continue
		}
		fn := runtime.FuncForPC(v.Pointer())
		if fn == nil || fn.Name() == "" {
			continue
		}
		name := fn.Name()
		names = append(names, name)
		q := name
		if dot := strings.LastIndexByte(q, '.'); dot > 0 {
			q = q[:dot]
		}
		switch qualifier {
		case "":
			qualifier = q
		case q:
		default:
			shared = false
		}
	}
	if shared {
		return qualifier
	}
	return strings.Join(names, "+")
}
