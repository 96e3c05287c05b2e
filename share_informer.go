package cache

import (
	"os"
	"strconv"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
)

// shareValuesEnv switches on, when set to a true value, the sharing of
// equal parts of cached objects (share.go) for every informer of the
// process. It is off by default: it roughly halves the heap of a large
// cache of similar objects, but walking each object as it arrives costs
// CPU per event (tens of microseconds for a pod), which a controller
// should choose. The objects a ListerWatcher or transform returned are
// never written (shareCopy).
const shareValuesEnv = "KCACHE_SHARE_VALUES"

// shareValuesEnabled reads shareValuesEnv once.
var shareValuesEnabled = sync.OnceValue(func() bool {
	raw, set := os.LookupEnv(shareValuesEnv)
	if !set || raw == "" {
		return false
	}
	on, err := strconv.ParseBool(raw)
	if err != nil {
		klog.Background().Error(err, "Ignoring a setting that is not a boolean; sharing stays off", "variable", shareValuesEnv, "value", raw)
		return false
	}
	return on
})

// withValueSharing returns the transform an informer's queue applies:
// transform (which may be nil), then the sharing of the result's parts with
// the objects already cached, when sharing is on.
func withValueSharing(transform TransformFunc, sharer *valueSharer) TransformFunc {
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
		return shareCopy(sharer, obj), nil
	}
}

// shareCopy returns the object the cache keeps for obj: obj with its parts
// pointing at equal values of the objects already cached. obj itself is
// never written (the walk copies the path to each replaced part): the
// source (a fake clientset, a transform returning its input) may hand the
// same object to others, who may be reading it now. Values that are not
// runtime.Objects are kept as they are, unshared.
func shareCopy(sharer *valueSharer, obj interface{}) interface{} {
	ro, ok := obj.(runtime.Object)
	if !ok || ro == nil {
		return obj
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
