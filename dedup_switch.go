package cache

import (
	"fmt"
	"os"
	"reflect"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
)

// shareValuesEnv switches off, when set to a false value, the sharing of
// equal parts of cached objects (share.go) for every informer of the
// process; it is on by default. A value that is not one of the usual
// boolean spellings turns sharing off too, and says why: a switch meant to
// turn a feature off must not leave it on by a typo. With sharing off, each
// cached object is the very one its source returned, as in client-go. The
// objects a ListerWatcher or transform returned are never written
// (shareCopy). SetValueSharing turns it off for one informer.
const shareValuesEnv = "KCACHE_SHARE_VALUES"

// shareValuesEnabled reads shareValuesEnv once.
var shareValuesEnabled = sync.OnceValue(func() bool {
	on, err := parseShareSwitch(os.Getenv(shareValuesEnv))
	if err != nil {
		klog.Background().Error(err, "Turning value sharing off", "variable", shareValuesEnv)
	}
	return on
})

// parseShareSwitch reads the value of shareValuesEnv: empty (unset) is on;
// true/false, 1/0, on/off and yes/no, in any case and with spaces around,
// say it; anything else is off, with an error saying why.
func parseShareSwitch(raw string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(raw)) {
	case "", "true", "1", "on", "yes":
		return true, nil
	case "false", "0", "off", "no":
		return false, nil
	}
	return false, fmt.Errorf("%q is not one of true, false, 1, 0, on, off, yes, no", raw)
}

// withValueSharing returns the transform an informer's queue applies:
// transform (which may be nil), then the sharing of the result's parts with
// the objects already cached, when sharing is on. cached, if not nil, is
// the informer's store: an object that replaces one cached under its key
// is compared with that one (share_twin.go), later by compactor when there
// is one (share_compact.go; the object is then cached as it is for now),
// at once otherwise.
func withValueSharing(transform TransformFunc, sharer *valueSharer, cached KeyGetter, compactor *updateCompactor) TransformFunc {
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
		key, twin := cachedTwin(cached, obj)
		if twin != nil && compactor != nil {
			compactor.note(key, twin, time.Now())
			return obj, nil
		}
		return shareCopyLike(sharer, obj, twin), nil
	}
}

// cachedTwin returns obj's key and the object cached under it, or nil.
func cachedTwin(cached KeyGetter, obj interface{}) (string, interface{}) {
	if cached == nil {
		return "", nil
	}
	// A nil pointer is left to panic where client-go's would, later.
	if v := reflect.ValueOf(obj); v.Kind() != reflect.Pointer || v.IsNil() {
		return "", nil
	}
	key, err := MetaNamespaceKeyFunc(obj)
	if err != nil {
		return "", nil
	}
	twin, exists, err := cached.GetByKey(key)
	if err != nil || !exists {
		return "", nil
	}
	return key, twin
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

// informerSharer returns a new sharer for one informer's queue, or nil
// when sharing is off for the process or, by choice (SetValueSharing),
// for that informer. Each informer has its own: no value is ever shared
// between two informers.
func informerSharer(enabled bool) *valueSharer {
	if !enabled || !shareValuesEnabled() {
		return nil
	}
	return newValueSharer()
}
