package cache

import (
	"os"
	"reflect"
	"strconv"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
)

// shareValuesEnv switches off, when set to a false value, the sharing of
// equal parts of cached objects (share.go) for every informer of the
// process; it is on by default. Sharing roughly halves the heap of a large
// cache of similar objects and leaves every object deep-equal to what was
// decoded; its walk costs CPU per event (about as much as decoding the
// object, a fraction of what receiving it costs), and a caller that
// modifies a cached object against the contract modifies every object
// sharing the part it changed. KCACHE_SHARE_VALUES=false gives client-go's
// layout: each cached object the very one its source returned. The
// objects a ListerWatcher or transform returned are never written
// (shareCopy).
const shareValuesEnv = "KCACHE_SHARE_VALUES"

// shareValuesEnabled reads shareValuesEnv once.
var shareValuesEnabled = sync.OnceValue(func() bool {
	raw, set := os.LookupEnv(shareValuesEnv)
	if !set || raw == "" {
		return true
	}
	on, err := strconv.ParseBool(raw)
	if err != nil {
		klog.Background().Error(err, "Ignoring a setting that is not a boolean; sharing stays on", "variable", shareValuesEnv, "value", raw)
		return true
	}
	return on
})

// withValueSharing returns the transform an informer's queue applies:
// transform (which may be nil), then the sharing of the result's parts with
// the objects already cached, when sharing is on. cached, if not nil, is
// the informer's store: an object that replaces one cached under its key
// is compared with that one first (share_twin.go).
func withValueSharing(transform TransformFunc, sharer *valueSharer, cached KeyGetter) TransformFunc {
	if sharer == nil {
		return transform
	}
	return func(obj interface{}) (interface{}, error) {
		if transform != nil {
			out, err := transform(obj)
			if err != nil {
				return nil, err
			}
			obj = out
		}
		return shareCopyLike(sharer, obj, cachedTwin(cached, obj)), nil
	}
}

// cachedTwin returns the object cached under obj's key, or nil.
func cachedTwin(cached KeyGetter, obj interface{}) interface{} {
	if cached == nil {
		return nil
	}
	// A nil pointer is left to panic where client-go's would, later.
	if v := reflect.ValueOf(obj); v.Kind() != reflect.Pointer || v.IsNil() {
		return nil
	}
	key, err := MetaNamespaceKeyFunc(obj)
	if err != nil {
		return nil
	}
	twin, exists, err := cached.GetByKey(key)
	if err != nil || !exists {
		return nil
	}
	return twin
}

// shareCopy returns the object the cache keeps for obj: obj with its parts
// pointing at equal values of the objects already cached. obj itself is
// never written (the walk copies the path to each replaced part): the
// source (a fake clientset, a transform returning its input) may hand the
// same object to others, who may be reading it now. Values that are not
// runtime.Objects are kept as they are, unshared.
func shareCopy(sharer *valueSharer, obj interface{}) interface{} {
	return shareCopyLike(sharer, obj, nil)
}

// shareCopyLike is shareCopy for an object that replaces twin (nil: none)
// in the cache.
func shareCopyLike(sharer *valueSharer, obj, twin interface{}) interface{} {
	ro, ok := obj.(runtime.Object)
	if !ok || ro == nil {
		return obj
	}
	if twin != nil {
		return sharer.shareLike(ro, twin)
	}
	return sharer.share(ro)
}

// informerSharer is the sharer informers use: the process-wide one, or nil
// when sharing is switched off.
func informerSharer() *valueSharer {
	if !shareValuesEnabled() {
		return nil
	}
	return defaultSharer
}
