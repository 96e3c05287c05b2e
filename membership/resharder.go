package membership

// Resharder moves something that holds one shard, typically the
// ListerWatcher of a sharded informer, to another shard selector. Anything
// with a SetShard(selector string) error method fits, such as a
// ShardedListerWatcher that can move between shards.
type Resharder interface {
	// SetShard moves to selector, a selector of cache.EvenShardSelector.
	// An error leaves the member retrying at its next round.
	SetShard(selector string) error
}

// ResharderFunc adapts a function to a Resharder.
type ResharderFunc func(selector string) error

// SetShard calls f(selector).
func (f ResharderFunc) SetShard(selector string) error {
	return f(selector)
}

var _ Resharder = ResharderFunc(nil)
