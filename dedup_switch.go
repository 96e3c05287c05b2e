package cache

import (
	"fmt"
	"os"
	"reflect"
	"strings"
	"sync"
	"time"

	"k8s.io/klog/v2"
)

// dedupEnv switches off, when set to a false value, the sharing of
// equal parts of cached objects (dedup.go) for every informer of the
// process; it is on by default. A value that is not one of the usual
// boolean spellings turns sharing off too, and says why: a switch meant to
// turn a feature off must not leave it on by a typo. With sharing off, each
// cached object is the very one its source returned, as in client-go. The
// objects a ListerWatcher or transform returned are never written
// (dedupCopy). SetValueSharing turns it off for one informer.
const dedupEnv = "KCACHE_SHARE_VALUES"

// dedupEnabled reads dedupEnv once.
var dedupEnabled = sync.OnceValue(func() bool {
	on, err := parseDedupSwitch(os.Getenv(dedupEnv))
	if err != nil {
		klog.Background().Error(err, "Turning value sharing off", "variable", dedupEnv)
	}
	return on
})

// parseDedupSwitch reads the value of dedupEnv: empty (unset) is on;
// true/false, 1/0, on/off and yes/no, in any case and with spaces around,
// say it; anything else is off, with an error saying why.
func parseDedupSwitch(raw string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(raw)) {
	case "", "true", "1", "on", "yes":
		return true, nil
	case "false", "0", "off", "no":
		return false, nil
	}
	return false, fmt.Errorf("%q is not one of true, false, 1, 0, on, off, yes, no", raw)
}

// withDedup returns the transform an informer's queue applies:
// transform (which may be nil), then the sharing of the result's parts with
// the objects already cached, when sharing is on. cached, if not nil, is
// the informer's store: an object that replaces one cached under its key
// is compared with that one (dedup_update.go), later by compactor when there
// is one (dedup_update.go; the object is then cached as it is for now),
// at once otherwise.
func withDedup(transform TransformFunc, dd *deduper, cached KeyGetter, compactor *dedupCompactor) TransformFunc {
	if dd == nil {
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
		return dedupCopyLike(dd, obj, twin), nil
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

// informerDeduper returns a new deduper for one informer's queue, or nil
// when sharing is off for the process or, by choice (SetValueSharing),
// for that informer. Each informer has its own: no value is ever shared
// between two informers.
func informerDeduper(enabled bool) *deduper {
	if !enabled || !dedupEnabled() {
		return nil
	}
	return newDeduper()
}
