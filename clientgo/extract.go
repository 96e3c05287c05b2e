package clientgo

import (
	"errors"
	"fmt"
	"reflect"
	"unsafe"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/informers/internalinterfaces"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
)

// This file is the one place that reads client-go's unexported state. The
// generated informer factory builds each informer inside client-go, from a
// ListerWatcher that closes over the client, namespace and list-options
// tweak, and offers no exported way to get either back. The field names and
// types below are those of client-go v0.35 to v0.38; each read checks the field's
// type before it reads, so a client-go that changed them yields an error,
// never a wrong value.

// Import paths and type names of the client-go structs read here.
const (
	clientGoCachePkg     = "k8s.io/client-go/tools/cache"
	clientGoInformersPkg = "k8s.io/client-go/informers"
)

// errNotClientGo says a value is not the client-go type a read expects.
var errNotClientGo = errors.New("not client-go's implementation")

// clientGoInformerParts returns the ListerWatcher and the example object a
// client-go shared informer was built with, looking through struct adapters
// that embed it (client-go's typed informer adapter).
func clientGoInformerParts(inf toolscache.SharedIndexInformer) (toolscache.ListerWatcher, runtime.Object, error) {
	s, err := clientGoStruct(inf, clientGoCachePkg, "sharedIndexInformer")
	if err != nil {
		return nil, nil, fmt.Errorf("reading the informer: %w", err)
	}
	lw, err := readField[toolscache.ListerWatcher](s, "listerWatcher")
	if err != nil {
		return nil, nil, fmt.Errorf("reading the informer's ListerWatcher: %w", err)
	}
	obj, err := readField[runtime.Object](s, "objectType")
	if err != nil {
		return nil, nil, fmt.Errorf("reading the informer's object type: %w", err)
	}
	if lw == nil || obj == nil {
		return nil, nil, errors.New("reading the informer: it has no ListerWatcher or object type")
	}
	return lw, obj, nil
}

// factorySettings are what a generated factory passes to every informer it
// builds and does not export.
type factorySettings struct {
	client    kubernetes.Interface
	namespace string
	tweak     internalinterfaces.TweakListOptionsFunc
}

// clientGoFactorySettings reads the settings of a factory made by
// informers.NewSharedInformerFactory and its variants.
func clientGoFactorySettings(f informers.SharedInformerFactory) (factorySettings, error) {
	s, err := clientGoStruct(f, clientGoInformersPkg, "sharedInformerFactory")
	if err != nil {
		return factorySettings{}, fmt.Errorf("reading the factory: %w", err)
	}
	var out factorySettings
	if out.client, err = readField[kubernetes.Interface](s, "client"); err != nil {
		return factorySettings{}, fmt.Errorf("reading the factory's client: %w", err)
	}
	if out.namespace, err = readField[string](s, "namespace"); err != nil {
		return factorySettings{}, fmt.Errorf("reading the factory's namespace: %w", err)
	}
	if out.tweak, err = readField[internalinterfaces.TweakListOptionsFunc](s, "tweakListOptions"); err != nil {
		return factorySettings{}, fmt.Errorf("reading the factory's list options tweak: %w", err)
	}
	return out, nil
}

// clientGoStruct finds, behind v and any struct adapters embedding it
// through an exported interface field, the addressable struct of the
// client-go type pkg.name.
func clientGoStruct(v any, pkg, name string) (reflect.Value, error) {
	rv := reflect.ValueOf(v)
	for range maxAdapterDepth {
		switch rv.Kind() {
		case reflect.Interface, reflect.Pointer:
			if rv.IsNil() {
				return reflect.Value{}, fmt.Errorf("want %s.%s, got a nil %s", pkg, name, rv.Type())
			}
			rv = rv.Elem()
			continue
		case reflect.Struct:
			t := rv.Type()
			if t.PkgPath() == pkg && t.Name() == name {
				if !rv.CanAddr() {
					return reflect.Value{}, fmt.Errorf("%s.%s held by value: %w", pkg, name, errNotClientGo)
				}
				return rv, nil
			}
			f, ok := t.FieldByName("SharedIndexInformer")
			if !ok || !f.IsExported() || f.Type.Kind() != reflect.Interface {
				return reflect.Value{}, fmt.Errorf("want %s.%s, got %s: %w", pkg, name, t, errNotClientGo)
			}
			rv = rv.FieldByIndex(f.Index)
			continue
		case reflect.Invalid:
			return reflect.Value{}, fmt.Errorf("want %s.%s, got nil", pkg, name)
		}
		return reflect.Value{}, fmt.Errorf("want %s.%s, got %s: %w", pkg, name, rv.Type(), errNotClientGo)
	}
	return reflect.Value{}, fmt.Errorf("want %s.%s: more than %d adapters deep", pkg, name, maxAdapterDepth)
}

// readField reads the field called name of the addressable struct s, which
// must have type T exactly; unexported fields are read through their
// address.
func readField[T any](s reflect.Value, name string) (T, error) {
	var zero T
	f := s.FieldByName(name)
	if !f.IsValid() {
		return zero, fmt.Errorf("%s has no field %s: %w", s.Type(), name, errNotClientGo)
	}
	if want := reflect.TypeFor[T](); f.Type() != want {
		return zero, fmt.Errorf("%s.%s is a %s, want %s: %w", s.Type(), name, f.Type(), want, errNotClientGo)
	}
	return *(*T)(unsafe.Pointer(f.UnsafeAddr())), nil
}

// Where client-go's informer keeps the selector SetShardSelector stores
// (client-go v0.38 on).
const (
	shardingPkg           = "k8s.io/apimachinery/pkg/sharding"
	shardSelectorField    = "shardSelector"
	shardSelectorTypeName = "Selector"
)

// clientGoShardSelector returns the shard selector a client-go shared
// informer holds (nil if none): the value SetShardSelector stored, or
// SharedIndexInformerOptions.ShardSelector. The field's type is
// apimachinery's sharding.Selector, which this package cannot name, so the
// read checks the type by its package and name, and the value by the
// methods the bridge calls.
func clientGoShardSelector(inf toolscache.SharedIndexInformer) (shardSelector, error) {
	s, err := clientGoStruct(inf, clientGoCachePkg, "sharedIndexInformer")
	if err != nil {
		return nil, fmt.Errorf("reading the informer: %w", err)
	}
	f := s.FieldByName(shardSelectorField)
	if !f.IsValid() {
		return nil, fmt.Errorf("%s has no field %s: %w", s.Type(), shardSelectorField, errNotClientGo)
	}
	if t := f.Type(); t.Kind() != reflect.Interface || t.PkgPath() != shardingPkg || t.Name() != shardSelectorTypeName {
		return nil, fmt.Errorf("%s.%s is a %s, want %s.%s: %w", s.Type(), shardSelectorField, t, shardingPkg, shardSelectorTypeName, errNotClientGo)
	}
	v := reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem()
	if v.IsNil() {
		return nil, nil
	}
	sel, ok := v.Interface().(shardSelector)
	if !ok {
		return nil, fmt.Errorf("the informer's shard selector, a %s, lacks Matches, Empty or String", v.Elem().Type())
	}
	return sel, nil
}
