package cache

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"strings"
	"sync"
	"time"

	"k8s.io/klog/v2"

	"github.com/kcache/cache/internal/dedup"
)

// This file is the root's glue to value sharing, whose engine is the
// package internal/dedup: the switch that turns it on or off, and what
// ties one informer's table to its queue, its store and its metrics. No
// other file of the package imports the engine.

// dedupEnv switches off, when set to a false value, the sharing of
// equal parts of cached objects (internal/dedup) for every informer of the
// process; it is on by default. A value that is not one of the usual
// boolean spellings turns sharing off too, and says why: a switch meant to
// turn a feature off must not leave it on by a typo. With sharing off, each
// cached object is the very one its source returned, as in client-go. The
// objects a ListerWatcher or transform returned are never written
// (dedup.Table.Share). SetValueSharing turns it off for one informer.
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

// SharedValueMetricsProvider is an optional extension of an
// InformerMetricsProvider (SetInformerMetricsProvider): an informer whose
// provider implements it counts there the shared values its guard found
// changed (see docs/design.md, "Sharing equal values").
type SharedValueMetricsProvider interface {
	// NewSharedValueChangedMetric returns the counter of shared values
	// found changed in the cache of the informer id.
	NewSharedValueChangedMetric(id InformerNameAndResource) CounterMetric
}

// dedupOptions are the options of every table made for an informer; only
// tests change them, before the informers they concern are built.
var dedupOptions dedup.Options

// valueSharing is one informer's value sharing: the table its queue's
// transform shares through, the guard that re-checks the table's values,
// and the compactor that shares updates once they are quiet. A nil
// *valueSharing is sharing turned off; its methods then do nothing.
type valueSharing struct {
	table *dedup.Table
	// guard and compactor are set by attach; compactor stays nil for a
	// store that cannot swap objects (a store of the caller's making):
	// updates are then shared as they arrive.
	guard     *dedup.Guard
	compactor *dedup.Compactor
}

// informerSharing returns a new, unattached valueSharing for one
// informer's queue, or nil when sharing is off for the process or, by
// choice (SetValueSharing), for that informer. Each informer has its own
// table: no value is ever shared between two informers.
func informerSharing(enabled bool) *valueSharing {
	if !enabled || !dedupEnabled() {
		return nil
	}
	return &valueSharing{table: dedup.New(dedupOptions)}
}

// attach ties s to the informer's store cache (which the guard lists and
// the compactor swaps in), the type of its objects, its name and its
// metrics.
func (s *valueSharing) attach(cache Store, objectType any, id InformerNameAndResource, metrics InformerMetricsProvider) {
	if s == nil {
		return
	}
	in := dedup.Informer{Objects: cache.List, Key: DeletionHandlingMetaNamespaceKeyFunc, Type: fmt.Sprintf("%T", objectType)}
	if mp, ok := informerMetricsProviderOr(metrics).(SharedValueMetricsProvider); ok && id.Reserved() {
		in.Changed = mp.NewSharedValueChangedMetric(id)
	}
	s.guard = dedup.NewGuard(s.table, in)
	if hs, ok := cache.(heldSwapper); ok {
		s.compactor = dedup.NewCompactor(s.table, swappingStore{hs})
	}
}

// heldSwapper is a store that can replace the object it holds under a key
// with an equal one (the informer's own indexer, *cache).
type heldSwapper interface {
	KeyGetter
	// swapIfHeld puts equal under key if the store holds held there, and
	// reports whether it did.
	swapIfHeld(key string, held, equal interface{}) bool
}

// swappingStore presents a heldSwapper as the compactor's dedup.Store.
type swappingStore struct{ heldSwapper }

func (s swappingStore) SwapIfHeld(key string, held, equal interface{}) bool {
	return s.swapIfHeld(key, held, equal)
}

// transform returns the transform an informer's queue applies:
// transform (which may be nil), then, with sharing on, the sharing of the
// result's parts with the objects already cached. cached, if not nil, is
// the informer's store: an object that replaces one cached under its key
// is shared beside that one, later by the compactor when there is one
// (the object is then cached as it is for now), at once otherwise or once
// the compactor found the informer's handlers keeping what they are given
// (internal/dedup/retention.go).
func (s *valueSharing) transform(transform TransformFunc, cached KeyGetter) TransformFunc {
	if s == nil {
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
		if twin != nil && s.compactor != nil && !s.compactor.ShareOnArrival() {
			s.compactor.Note(key, twin, time.Now())
			return obj, nil
		}
		return s.table.ShareUpdate(obj, twin), nil
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

// suspect reports whether the object listed under key shares a value the
// guard found changed, so that the list must not keep its cached copy
// (dedup.Guard.Suspect); false without sharing.
func (s *valueSharing) suspect(key string) bool {
	return s != nil && s.guard != nil && s.guard.Suspect(key)
}

// relists delivers the guard's requests for a relist; nil (no request
// ever comes) without sharing.
func (s *valueSharing) relists() <-chan struct{} {
	if s == nil || s.guard == nil {
		return nil
	}
	return s.guard.Relists()
}

// Test seams: how an informer runs its guard and its compactor. Tests
// replace them, before the informers they concern run, to run rounds and
// compactions on demand.
var (
	runGuard     = (*dedup.Guard).Run
	runCompactor = (*dedup.Compactor).Run
)

// run runs the guard and the compactor until ctx ends; without sharing
// it returns at once.
func (s *valueSharing) run(ctx context.Context) {
	if s == nil {
		return
	}
	var wg sync.WaitGroup
	if s.compactor != nil {
		wg.Go(func() { runCompactor(s.compactor, ctx) })
	}
	if s.guard != nil {
		runGuard(s.guard, ctx)
	}
	wg.Wait()
}
