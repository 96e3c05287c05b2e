package cache

import (
	"os"
	"strconv"
	"sync"

	"k8s.io/klog/v2"
)

// shareValuesEnv switches on the sharing of equal parts of cached objects
// (share.go) for every informer of the process when set to a true value.
// It is off by default: the walk writes into the objects the ListerWatcher
// returned, which a fake source may hand to several informers at once
// (README, "Memory on a real kube-apiserver"). End to end it costs about 5%
// of an initial sync's CPU time and saves 40% of the heap.
const shareValuesEnv = "KCACHE_SHARE_VALUES"

// shareValuesEnabled reads shareValuesEnv once.
var shareValuesEnabled = sync.OnceValue(func() bool {
	raw, set := os.LookupEnv(shareValuesEnv)
	if !set {
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
		sharer.share(obj)
		return obj, nil
	}
}

// informerSharer is the sharer informers use: the process-wide one, or nil
// when sharing is switched off.
func informerSharer() *valueSharer {
	if !shareValuesEnabled() {
		return nil
	}
	return defaultSharer
}
