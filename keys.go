package cache

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// KeyFunc computes the key under which a store files an object. It must be
// deterministic: the same object always yields the same key.
type KeyFunc func(obj interface{}) (string, error)

// KeyError reports that a KeyFunc could not compute a key for Obj. Err is the
// cause and stays reachable through errors.Is and errors.As.
type KeyError struct {
	Obj interface{}
	Err error
}

// Error describes the object whose key could not be computed and why.
func (k KeyError) Error() string {
	return fmt.Sprintf("couldn't create key for object %+v: %v", k.Obj, k.Err)
}

// Unwrap returns the cause, so callers can match it with errors.Is/As.
func (k KeyError) Unwrap() error {
	return k.Err
}

// ExplicitKey is a value that is its own key: MetaNamespaceKeyFunc returns it
// unchanged. Queues use it to carry a bare key where an object is expected.
type ExplicitKey string

// DeletedFinalStateUnknown is what a queue delivers for an object that was
// deleted while the watch was not looking: a relist found it gone. Key is the
// object's store key and Obj the last state the cache knew, which may be
// stale.
type DeletedFinalStateUnknown struct {
	Key string
	Obj interface{}
}

// MetaNamespaceKeyFunc is the default KeyFunc: "namespace/name" for
// namespaced objects, "name" for cluster-scoped ones. An ExplicitKey is
// returned as is. An object without object metadata is an error.
func MetaNamespaceKeyFunc(obj interface{}) (string, error) {
	if key, ok := obj.(ExplicitKey); ok {
		return string(key), nil
	}
	name, err := ObjectToName(obj)
	if err != nil {
		return "", err
	}
	return name.String(), nil
}

// DeletionHandlingMetaNamespaceKeyFunc is MetaNamespaceKeyFunc that also
// understands tombstones: a DeletedFinalStateUnknown yields its recorded Key.
func DeletionHandlingMetaNamespaceKeyFunc(obj interface{}) (string, error) {
	if tombstone, ok := obj.(DeletedFinalStateUnknown); ok {
		return tombstone.Key, nil
	}
	return MetaNamespaceKeyFunc(obj)
}

// SplitMetaNamespaceKey splits a key made by MetaNamespaceKeyFunc. A key
// without a slash is a cluster-scoped name; a key with one slash is
// "namespace/name"; any other shape is an error naming the key.
func SplitMetaNamespaceKey(key string) (namespace, name string, err error) {
	first := strings.IndexByte(key, '/')
	if first < 0 {
		return "", key, nil
	}
	if strings.IndexByte(key[first+1:], '/') >= 0 {
		return "", "", fmt.Errorf("unexpected key format: %q", key)
	}
	return key[:first], key[first+1:], nil
}

// IndexFuncToKeyFuncAdapter turns an IndexFunc that yields exactly one value
// per object into a KeyFunc. Zero or several values are an error.
func IndexFuncToKeyFuncAdapter(indexFunc IndexFunc) KeyFunc {
	return func(obj interface{}) (string, error) {
		values, err := indexFunc(obj)
		if err != nil {
			return "", err
		}
		switch {
		case len(values) > 1:
			return "", fmt.Errorf("too many keys: %v", values)
		case len(values) == 0:
			return "", errors.New("unexpected empty indexKeys")
		}
		return values[0], nil
	}
}

// ObjectName is the namespace and name of an object: the parsed form of a
// MetaNamespaceKeyFunc key. Namespace is empty for cluster-scoped objects.
type ObjectName struct {
	Namespace string
	Name      string
}

// NewObjectName returns the ObjectName with the given parts.
func NewObjectName(namespace, name string) ObjectName {
	return ObjectName{Namespace: namespace, Name: name}
}

// Parts returns the namespace and the name.
func (objName ObjectName) Parts() (namespace, name string) {
	return objName.Namespace, objName.Name
}

// String returns the key form: "namespace/name", or just "name" when the
// namespace is empty.
func (objName ObjectName) String() string {
	if objName.Namespace == "" {
		return objName.Name
	}
	return objName.Namespace + "/" + objName.Name
}

// AsNamespacedName converts to apimachinery's NamespacedName.
func (objName ObjectName) AsNamespacedName() types.NamespacedName {
	return types.NamespacedName{Namespace: objName.Namespace, Name: objName.Name}
}

// ParseObjectName parses the key form produced by ObjectName.String, with
// the same rules as SplitMetaNamespaceKey.
func ParseObjectName(str string) (ObjectName, error) {
	namespace, name, err := SplitMetaNamespaceKey(str)
	if err != nil {
		return ObjectName{}, err
	}
	return ObjectName{Namespace: namespace, Name: name}, nil
}

// NamespacedNameAsObjectName converts from apimachinery's NamespacedName.
func NamespacedNameAsObjectName(nn types.NamespacedName) ObjectName {
	return ObjectName{Namespace: nn.Namespace, Name: nn.Name}
}

// MetaObjectToName returns the namespace and name of obj. Like client-go's,
// it calls obj's methods without checking it first: a nil obj, or a nil
// pointer whose methods dereference it, panics.
func MetaObjectToName(obj metav1.Object) ObjectName {
	return ObjectName{Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

// ObjectToName returns the namespace and name of any object that has object
// metadata; an object without it (including nil) is an error. A nil pointer
// of a type that has metadata passes meta.Accessor and then panics in
// MetaObjectToName, as in client-go.
func ObjectToName(obj interface{}) (ObjectName, error) {
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return ObjectName{}, fmt.Errorf("object has no meta: %v", err)
	}
	return MetaObjectToName(accessor), nil
}

// isNilPointer reports a nil pointer of any type: a value that passes type
// checks but whose methods would dereference nil.
func isNilPointer(obj interface{}) bool {
	v := reflect.ValueOf(obj)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// DeletionHandlingObjectToName is ObjectToName that also understands
// tombstones: a DeletedFinalStateUnknown yields the name parsed from its Key.
func DeletionHandlingObjectToName(obj interface{}) (ObjectName, error) {
	if tombstone, ok := obj.(DeletedFinalStateUnknown); ok {
		return ParseObjectName(tombstone.Key)
	}
	return ObjectToName(obj)
}

// KeyLister lists the keys of a store.
type KeyLister interface {
	ListKeys() []string
}

// KeyGetter looks up objects by key.
type KeyGetter interface {
	// GetByKey returns the object stored under key.
	GetByKey(key string) (value interface{}, exists bool, err error)
}

// KeyListerGetter is what a queue needs of the store it feeds (its
// "known objects"): to list the keys and fetch by key.
type KeyListerGetter interface {
	KeyLister
	KeyGetter
}
