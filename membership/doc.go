// Package membership shares one hash space out among the live replicas of
// a controller, so that each replica's sharded informers (kcache's
// NewShardedListerWatcher) hold an equal part of the objects and the parts
// follow replicas as they come and go.
//
// Each replica runs a Member. It keeps one coordination.k8s.io/v1 Lease in
// a namespace the user names, called Group-Identity and labelled
// GroupLabel=Group, and renews it every RetryPeriod. Every round it lists
// the group's Leases; a Lease is live while renewTime + leaseDurationSeconds
// is later than the local clock's now. The live identities, sorted, give
// each replica its index i and the count n, and cache.EvenShardSelector(i, n)
// its range. When that range changes the Member calls its Resharder's
// SetShard (anything with that method fits; ResharderFunc adapts a function)
// and an OnChange hook for logs and metrics. The knobs are those of
// client-go's leader election: LeaseDuration, RenewDeadline, RetryPeriod and
// Identity.
//
// # Joining, leaving, failing
//
//   - A joining replica creates its Lease, lists the group and takes its
//     range in the same round; the others shrink theirs at their next round
//     (within RetryPeriod). A replica claims nothing before its first list
//     succeeds: it cannot know its place before.
//   - A replica that stops cleanly (Run's context done) deletes its Lease;
//     the others grow into its range at their next round.
//   - A replica that stops renewing (crash, partition) stays a member in
//     the others' eyes until its Lease expires; each member also wakes at
//     the moment a peer's Lease is due to expire, lists again and, if the
//     Lease was not renewed meanwhile, drops it.
//   - A replica that fails to renew its own Lease keeps its range until
//     RenewDeadline has passed since its last successful renewal, then
//     claims no range: Assignment().Claiming() is false and OnChange gets
//     ("", -1, others). Because RenewDeadline < LeaseDuration it lets go
//     before the others take over. The Resharder is not called (a selector
//     cannot name an empty range, and the informer's cache stays warm for
//     the moment the Lease is renewed again); a controller must stop acting
//     on objects while its member claims nothing. Once a renewal succeeds,
//     the replica claims its range again in that round.
//
// # The guarantee
//
// Members compute their ranges from their own recent lists, so during a
// change they may briefly disagree. Then an object may belong to two
// replicas at once (one has already grown into a range another has not
// yet left), and a part of the space may belong to none. No object is
// left to no replica for longer than one lease duration plus one relist:
//   - a replica that crashed or was cut off is dropped when its Lease
//     expires, at most LeaseDuration after its last renewal (a cut-off
//     replica itself lets go RenewDeadline after it, so its range has no
//     owner for LeaseDuration - RenewDeadline);
//   - after a clean stop, or while members disagree about a join, every
//     member catches up at its next round, within RetryPeriod;
//   - the new owner's informer then holds the objects after one relist
//     under the new selector.
//
// The bound assumes that the members still in the group can reach the API
// server (replicas that cannot renew claim nothing on purpose), and that
// the replicas' clocks agree to well within LeaseDuration - RenewDeadline,
// since each judges the others' renewTime by its own clock. An object's
// changes during a gap are not lost, only delivered late, by the new
// owner's relist.
//
// A controller should therefore treat its range as a hint, not a lock:
//   - Reconciles must be idempotent and based on the object's current
//     state (level-triggered), so that two replicas reconciling the same
//     object converge, and conflicts on writes (resourceVersion
//     preconditions) are retried as usual.
//   - Work that must never run twice at once for one object needs a lock
//     of its own, e.g. a leader-election Lease per object or per key.
//   - An object that leaves the range is gone from the cache but not from
//     the cluster: a controller must not run deletion logic for it (an
//     informer moved by SetShard reports it to OnDelete as a move, not as
//     a deletion).
//   - While the member claims nothing, the controller pauses its work.
//
// The replicas of one controller must use the same Namespace and Group,
// and each a unique Identity (its pod name, say); two replicas with one
// Identity would write one Lease and claim one range.
package membership
