// Package dedup makes equal parts of an informer's cached objects one in
// memory: kcache's value sharing, the engine behind the root package's
// SetValueSharing and KCACHE_SHARE_VALUES. It works on values and types
// only; it knows nothing of stores, queues or informers beyond the small
// interfaces below, and nothing in it imports the root package.
//
// # API
//
//   - New makes one informer's Table.
//   - Table.Share shares a decoded object as it enters the cache;
//     Table.ShareUpdate shares an update beside its twin, the object it
//     replaces. Neither writes the object it is given.
//   - NewCompactor makes a Compactor, which shares an update later, once
//     it is quiet (Note, then Run), through the store's swap (Store).
//   - NewGuard makes a Guard, which re-checks the table's values in the
//     background (Run) or once (Round), reports each changed value to its
//     Counter, and asks for a relist (Relists) that takes the objects
//     sharing it from the server again (Suspect).
//
// # Files
//
//	table.go       the table, its stripes and entries, the trial of each
//	               position and the filter of values seen once
//	plan.go        what the walk knows of each type
//	walk.go        the walk of a new object
//	firsts.go      strings repeated within one object, told from shared ones
//	update.go      the walk of an update beside its twin; Share, ShareUpdate
//	compare.go     content hash and exact equality
//	unsafe.go      every unsafe operation of the module
//	compactor.go   updates shared after the fact
//	guard.go       the background re-check of shared values
//	tuning.go      the tuning constants
//
// # How it works
//
// Objects of one kind repeat themselves: the pods of a ReplicaSet carry the
// same labels, containers' env, resources and probes, the same
// ownerReference and the same managedFields entry of their applier, yet each
// decoded pod holds its own copy of all of it. A table walks an object
// once, bottom-up, when it enters the cache, and points every pointer, slice,
// map and string field whose content equals a value already cached at the
// same position at that one value. Nothing is removed or changed: the
// object stays byte for byte what was decoded, only its parts are no
// longer private to it.
//
// Scope. Each informer has its own Table, and a value is shared only
// with values at the same position: the same field path from the
// object's root (walk.go's position), the same type. Nothing joins two informers, two types or two fields.
//
// Exactness. Values are found by a content hash computed during the walk
// and confirmed by an exact comparison (compare.go: floats by their
// bits, NaN never), so a hash collision costs sharing, never correctness.
//
// Reads never write shared memory. A struct with unexported state (such as
// resource.Quantity, whose String fills a cached string) is never shared
// whole, nor is a pointer, slice or map through which a reader could reach
// one by address (plan.go's hidden and exposes).
//
// Memory. The table holds weak pointers, and each value it holds carries a
// cleanup that drops its entry when the last object using it goes.
// Positions whose values are rarely equal to another (names, UIDs, IPs,
// container IDs) stop being looked up after a trial, so per-object unique
// content costs no table entries.
//
// A pointer or slice at a position still looked up is looked up whole,
// by a hash of its content, before its parts are walked: when it equals a
// shared value, it is replaced at once and nothing is copied for its
// parts. Only values that end up in the cache are ever copied.
//
// Hazard: a caller that modifies a cached object (against the contract,
// caught by KUBE_CACHE_MUTATION_DETECTOR) now modifies every object of the
// same informer sharing the modified part. Shared slices are handed out with
// their capacity cut to their length, so an append never writes into
// another object's backing array. A DeepCopy is as independent as ever.
package dedup
