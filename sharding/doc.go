// Package sharding runs a controller-runtime manager active-active: N
// replicas each cache and reconcile their own part of the sharded kinds,
// and the parts follow the live replicas as they come and go. No leader
// election is involved for those controllers.
//
// A Sharder ties three pieces together:
//
//   - a membership.Member (kcache's membership module) that keeps this
//     replica's Lease, watches its peers' and computes the replica's range
//     of the UID hash space (cache.EvenShardSelector);
//   - NewInformer, for cache.Options.NewInformer: the informers of the
//     sharded kinds list and watch through a kcache ShardedListerWatcher
//     that the Member moves when the range changes, on kcache through the
//     clientgo bridge; every other kind gets a plain bridge informer;
//   - Reconciler, around the reconciler of a sharded kind: it holds
//     requests back while the replica claims no range and drops the
//     requests of objects that moved to another replica, so that a
//     reconciler never takes a move for a deletion.
//
// A move reaches the manager as what it is. On the replica that gains an
// object, the informer's relist adds it: a create event, so a request.
// On the replica that loses it, kcache reports a MovedOutOfShard, which
// the Sharder's informers do not hand to event handlers as a deletion (a
// controller-runtime handler would log it as an undecodable tombstone),
// and a request still queued for it is dropped by Reconciler.
//
// README.md states what is promised (how long an object can be without an
// owner, how long two replicas can both hold it) and how to set a manager
// up.
package sharding
