package overlay

// adapterV038 adds what client-go v0.38 declares beyond v0.37, which
// kcache follows: sharding under client-go's names, on kcache's sharded
// ListerWatcher in strict mode (shard_listwatch.go), and GVRSyncResult.
var adapterV038 = adapter{
	members: []typeMember{
		{typeName: "SharedInformer", text: `// SetShardSelector restricts the informer, before it runs, to the shard
// selector picks (NewShardedListWatch around its ListerWatcher); a nil or
// empty selector means no restriction. After the start it fails.
SetShardSelector(selector sharding.Selector) error`},
		{typeName: "SharedIndexInformerOptions", text: `// ShardSelector, if not empty, restricts the informer to a shard, as
// SetShardSelector does.
ShardSelector sharding.Selector`},
	},
	imports: []string{"k8s.io/apimachinery/pkg/sharding", "k8s.io/apimachinery/pkg/runtime/schema"},
	files:   map[string]string{"overlay_v0_38.go": v038Source},
}

func init() { adapters["v0.38"] = adapterV038 }

const v038Source = `package cache

// This file adapts kcache to the tools/cache API of client-go v0.38: the
// declarations below are that release's additions, each on kcache's own
// engine.

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/sharding"
)

// NewShardedListWatch returns lw itself when selector is nil or empty, and
// otherwise a ListerWatcher that sends selector with every list and watch
// and keeps only the objects it matches: the API server filters when it
// has the ShardedListAndWatch feature (its list names the selector in
// ListMeta.ShardInfo); otherwise the items and watch events are matched
// here, and the first time that happens is logged at V(2). A caller's
// ListOptions.ShardSelector naming another selector, a list the server
// filtered with another selector, and a list type without ShardInfo are
// errors.
//
// The result is a *ShardedListerWatcher: its SetShard moves it (and the
// informer it serves) to another shard, which client-go does not offer.
func NewShardedListWatch(lw ListerWatcher, selector sharding.Selector) ListerWatcher {
	if selector == nil || selector.Empty() {
		return lw
	}
	return newStrictShardedListerWatcher(lw, selector.String(), selector.Matches)
}

// SetShardSelector restricts the informer, before it runs, to the shard
// selector picks: its ListerWatcher is wrapped by NewShardedListWatch when
// it starts. After the start it fails and changes nothing.
func (s *sharedIndexInformer) SetShardSelector(selector sharding.Selector) error {
	return s.setListerWatcherWrapper(shardWrapper(selector))
}

// shardWrapper returns what puts NewShardedListWatch with selector around
// a ListerWatcher, or nil when there is no selector.
func shardWrapper(selector sharding.Selector) func(ListerWatcher) ListerWatcher {
	if selector == nil {
		return nil
	}
	return func(lw ListerWatcher) ListerWatcher { return NewShardedListWatch(lw, selector) }
}

func init() {
	applyReleaseOptions = func(s *sharedIndexInformer, options SharedIndexInformerOptions) {
		s.wrapListerWatcher = shardWrapper(options.ShardSelector)
	}
	// What v0.38 does differently from v0.37, which kcache follows: the
	// store's resource-version gauge is asked of the metrics provider at
	// its first Set, MutationCache.ByIndex does not count a key whose
	// object was deleted meanwhile as indexed, and RealFIFO.Resync wraps the
	// KeyError of a known object it cannot key.
	releaseBehaviour.lazyStoreRVMetric = true
	releaseBehaviour.mutationCacheSkipsVanished = true
	releaseBehaviour.resyncQueueErrorWrapsKeyError = true
}

// GVRSyncResult reports how waiting for the informers of a factory keyed
// by resource (the dynamic and metadata informer factories) ended, as
// SyncResult does for factories keyed by type.
type GVRSyncResult struct {
	// Err is nil when every informer synced; otherwise the cause that
	// ended the wait (context.Cause of its context).
	Err error

	// Synced tells, for each informer of the factory, whether it synced.
	Synced map[schema.GroupVersionResource]bool
}

// AsError returns nil when every informer synced. Otherwise it returns an
// error naming the unsynced resources in sorted order and wrapping Err.
func (r GVRSyncResult) AsError() error {
	if r.Err == nil {
		return nil
	}
	return unsyncedError(r.Err, r.Synced, schema.GroupVersionResource.String)
}
`
