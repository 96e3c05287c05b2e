package cache

import (
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/sharding"
	"k8s.io/klog/v2"
)

// This file moves a running ShardedListerWatcher to another shard.
//
// A move is a relist under the new selector, nothing more: SetShard swaps
// the selector and ends every live watch with an expired resource version,
// as an API server does when it no longer has the requested history. The
// Reflector reading the watch then lists again, through the same
// ShardedListerWatcher, now with the new selector, and replaces its store's
// content with the result. Objects that entered the shard arrive as adds;
// objects that left it are missing from the list and become deletions,
// which the informer hands to its handlers as MovedOutOfShard (see
// shard_moved.go) instead of DeletedFinalStateUnknown.
//
// The relist must come from the new selector alone. A list that was under
// way when the selector changed would mix both shards, and a watch opened
// without listing first would miss the objects that entered. So each list
// page and each watch is checked against the generation of the selector: a
// page read across a move, a continued list begun before it, and a plain
// watch opened before a list under the new selector all fail with the same
// expired-resource-version error, which the Reflector answers by listing
// again from the newest state.

// firstShardGen is the generation of the selector a ShardedListerWatcher is
// built with; each move adds one.
const firstShardGen = 1

// shardSpec is one selector a ShardedListerWatcher holds: parsed, in the
// canonical form a server echoes, and numbered. It never changes.
type shardSpec struct {
	selector sharding.Selector
	text     string
	gen      uint64
}

func newShardSpec(sel sharding.Selector, gen uint64) *shardSpec {
	return &shardSpec{selector: sel, text: sel.String(), gen: gen}
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

// SetShard moves the ShardedListerWatcher to the shard selector names (see
// ParseShardSelector for the form). A selector that does not parse is an
// error wrapping ErrInvalidShardSelector and changes nothing; the same
// selector as now changes nothing either.
//
// Otherwise every later list and watch carries the new selector, and the
// Reflector using this ListerWatcher lists again at once: its live watch
// ends with an expired resource version (as does a list in progress). An
// informer built on it then holds the new shard: handlers get an add for
// each object that entered it, a delete carrying MovedOutOfShard for each
// object that left it, and, with the informer's default (atomic) queue,
// nothing for the objects that stayed. HasSynced stays true, and at no
// moment does the informer's store hold an object of neither shard.
//
// SetShard expects the ShardedListerWatcher to serve one Reflector, as an
// informer's does; several Reflectors sharing it may skip the relist.
// It is safe to call from any goroutine, also before the informer runs.
func (s *ShardedListerWatcher) SetShard(selector string) error {
	sel, err := ParseShardSelector(selector)
	if err != nil {
		return err
	}
	s.moveMu.Lock()
	old := s.spec.Load()
	if sel.String() == old.text {
		s.moveMu.Unlock()
		return nil
	}
	s.spec.Store(newShardSpec(sel, old.gen+1))
	live := make([]*shardWatch, 0, len(s.watches))
	for w := range s.watches {
		live = append(live, w)
	}
	s.moveMu.Unlock()
	klog.Background().V(1).Info("Moving to another shard; the reflector lists again", "from", old.text, "to", sel.String(), "watches", len(live))
	for _, w := range live {
		w.expire()
	}
	return nil
}

// beginListPage returns the shard a list page is read for. A page that
// continues a list begun under another shard is refused.
func (s *ShardedListerWatcher) beginListPage(options metav1.ListOptions) (*shardSpec, error) {
	spec := s.spec.Load()
	if options.Continue == "" {
		s.listGen.Store(spec.gen)
		return spec, nil
	}
	if s.listGen.Load() != spec.gen {
		return nil, errShardMoved("the shard selector changed during a paginated list")
	}
	return spec, nil
}

// endListPage records, after the last page of a list, that spec's shard was
// listed whole.
func (s *ShardedListerWatcher) endListPage(list runtime.Object, spec *shardSpec) {
	if lm, err := meta.ListAccessor(list); err == nil && lm.GetContinue() != "" {
		return
	}
	s.markListed(spec)
}

// markListed records that spec's shard was listed whole, unless a newer
// one was already.
func (s *ShardedListerWatcher) markListed(spec *shardSpec) {
	for {
		listed := s.listedGen.Load()
		if listed >= spec.gen || s.listedGen.CompareAndSwap(listed, spec.gen) {
			return
		}
	}
}

// track registers a live watch for moves to end; a watch opened for a
// shard that was already left is ended at once.
func (s *ShardedListerWatcher) track(w *shardWatch) {
	s.moveMu.Lock()
	defer s.moveMu.Unlock()
	if s.spec.Load() != w.spec {
		w.expire()
		return
	}
	s.watches[w] = struct{}{}
}

// untrack forgets a watch that ended.
func (s *ShardedListerWatcher) untrack(w *shardWatch) {
	s.moveMu.Lock()
	defer s.moveMu.Unlock()
	delete(s.watches, w)
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
