package cache

import (
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// This file holds one shard selector as a ShardedListerWatcher uses it:
// parsed, numbered, and able to tell which objects it holds.

// firstShardGen is the generation of the selector a ShardedListerWatcher is
// built with; each move adds one.
const firstShardGen = 1

// shardSpec is one selector a ShardedListerWatcher holds: parsed, in the
// canonical form a server echoes, and numbered. It never changes.
type shardSpec struct {
	selector *ShardSelector
	text     string
	gen      uint64
}

func newShardSpec(sel *ShardSelector, gen uint64) *shardSpec {
	return &shardSpec{selector: sel, text: sel.String(), gen: gen}
}

// holds reports whether obj belongs to this shard; see inShard.
func (spec *shardSpec) holds(obj runtime.Object) bool {
	ok, err := spec.selector.Matches(obj)
	return ok || err != nil
}

// filterList removes the items of list outside the shard, in place. A list
// whose items cannot be read is left as it is.
func (spec *shardSpec) filterList(list runtime.Object) {
	items, err := meta.ExtractList(list)
	if err != nil {
		return
	}
	kept := items[:0]
	for _, item := range items {
		if spec.holds(item) {
			kept = append(kept, item)
		}
	}
	if len(kept) == len(items) {
		return
	}
	// SetList only fails for what ExtractList already refused.
	_ = meta.SetList(list, kept)
}

// shardMovedCause marks the expired-resource-version errors of a move, so
// that a Reflector lists again at once instead of after its backoff: a
// move is not a failure, and the membership guarantee counts one relist,
// not a backoff that grows with each move.
const shardMovedCause metav1.CauseType = "kcache.io/ShardMoved"

// errShardMoved is the error a list or watch gets when it would cross a
// move to another shard: an expired resource version, so that Reflectors
// list again from the newest state, carrying shardMovedCause.
func errShardMoved(why string) error {
	err := apierrors.NewResourceExpired(why + "; list again under the new shard selector")
	err.ErrStatus.Details = &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: shardMovedCause, Message: why}}}
	return err
}

// isShardMoved reports an error of errShardMoved, also after it travelled
// as the Status of a watch's ERROR event.
func isShardMoved(err error) bool {
	return isExpiredError(err) && apierrors.HasStatusCause(err, shardMovedCause)
}

// endsInitialEvents reports the bookmark that ends a streaming list's
// initial events.
func endsInitialEvents(obj runtime.Object) bool {
	if obj == nil {
		return false
	}
	m, err := meta.Accessor(obj)
	return err == nil && m.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true"
}
