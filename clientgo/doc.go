// Package clientgo runs client-go code on kcache without touching go.mod:
// it presents kcache informers through k8s.io/client-go/tools/cache's
// interfaces.
//
// Two entry points cover most controllers:
//
//   - NewSharedIndexInformer has the signature of controller-runtime's
//     cache.Options.NewInformer (and of client-go's constructor), so a
//     controller-runtime manager builds every informer on kcache with
//     cache.Options{NewInformer: clientgo.NewSharedIndexInformer}.
//   - NewSharedInformerFactory (and its Filtered and WithOptions forms, and
//     WrapFactory) returns client-go's generated informers.SharedInformerFactory
//     whose informers and listers, factory.Core().V1().Pods().Informer() and
//     .Lister() included, run on kcache.
//
// What crosses the seam: the ListerWatcher is passed as it is (its method
// sets are the same in both packages); the store and indexer are views of
// kcache's, nothing is copied; handlers are wrapped once, at registration,
// and the only per-event work is turning kcache's DeletedFinalStateUnknown
// into client-go's on OnDelete; registrations, DoneCheckers, the Controller,
// index and transform functions are converted at the call that passes them.
// A client-go watch error handler gets a client-go *Reflector that names
// the same resource (see SetWatchErrorHandler on the returned informer).
//
// The generated factory builds informers inside client-go, so the factory
// wrapper takes the ListerWatcher out of the informer client-go's generated
// code built (never started) and builds the kcache one from it. client-go
// has no exported way to do that: it reads two unexported fields through
// reflection, checked against client-go v0.35, v0.36, v0.37 and v0.38 by
// this package's tests (tools/minors.sh). If
// a client-go version changes them, the factory logs an error and keeps
// client-go's informer for that type, so a program still works, on
// client-go; Unwrap tells which informers run on kcache.
//
// One source serves client-go v0.35, v0.36, v0.37 and v0.38.0-beta.0, and
// the module requires v0.35.0, so that it never raises a program's
// client-go. What a minor lacks, the bridge lacks there too: HasSyncedChecker
// exists from v0.36 on (checker.go says how the bridge provides it without
// naming v0.36's DoneChecker type), typed informers and ShutDownEventHandler
// from v0.37, SetShardSelector from v0.38 (shard.go says how the bridge
// provides it without naming apimachinery v0.38's sharding.Selector). One gap is the bridge's own: on v0.37 a wrapped factory's
// Lifecycle() group, whose package v0.35 lacks, stays on client-go; reach
// those informers through ForResource. README.md has the table per minor.
package clientgo
