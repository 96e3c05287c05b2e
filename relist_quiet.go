package cache

import (
	"fmt"
	"os"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/klog/v2"
)

// This file is the switch of quiet relists and their one rule. A relist
// (a full list that replaces the cache, after a watch could not resume)
// hands client-go's handlers an update for every listed object that was
// cached already, changed or not: after an API server restart, one update
// per object of the resource (kubernetes/kubernetes#119646). Under quiet
// relists, an opt-in, a listed object whose resource version equals the
// cached object's reaches no handler; everything else a relist delivers
// (updates of changed objects, adds, deletions with their tombstones) is
// delivered as before, and the store still ends equal to the list.
//
// Who applies the rule: an informer's controller, as it turns a relist
// into notifications (controller.go's quietRelistSink), for every queue
// an informer uses; and a DeltaFIFO with KnownObjects, which under the
// switch does not queue such objects at all (delta_fifo.go), since its
// consumer is the caller's own code.

// quietRelistEnv turns quiet relists on for every informer of the process,
// and for every DeltaFIFO that has KnownObjects, when set to a true value;
// unset or false keeps client-go's behaviour. A value that is not one of
// the usual boolean spellings keeps it too, and says why: a switch must
// not turn on by a typo. SetQuietRelist chooses for one informer.
const quietRelistEnv = "KCACHE_QUIET_RELIST"

// quietRelistEnabled reads quietRelistEnv once. Tests replace it before
// building what they test.
var quietRelistEnabled = sync.OnceValue(func() bool {
	on, err := parseQuietRelistSwitch(os.Getenv(quietRelistEnv))
	if err != nil {
		klog.Background().Error(err, "Leaving quiet relists off", "variable", quietRelistEnv)
	}
	return on
})

// parseQuietRelistSwitch reads the value of quietRelistEnv: empty (unset)
// is off; true/false, 1/0, on/off and yes/no, in any case and with spaces
// around, say it; anything else is off, with an error saying why.
func parseQuietRelistSwitch(raw string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(raw)) {
	case "true", "1", "on", "yes":
		return true, nil
	case "", "false", "0", "off", "no":
		return false, nil
	}
	return false, fmt.Errorf("%q is not one of true, false, 1, 0, on, off, yes, no", raw)
}

// sameListedVersion reports whether listed, found by a relist, is the
// version of the object held that the cache already has: both have
// metadata and the same resource version, which is not empty. An object
// without a resource version, or without metadata, counts as changed.
func sameListedVersion(held, listed interface{}) bool {
	if isNilPointer(held) || isNilPointer(listed) {
		return false
	}
	l, err := meta.Accessor(listed)
	if err != nil {
		return false
	}
	h, err := meta.Accessor(held)
	if err != nil {
		return false
	}
	rv := l.GetResourceVersion()
	return rv != "" && rv == h.GetResourceVersion()
}
