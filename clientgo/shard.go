package clientgo

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	kcache "github.com/kcache/cache"
	"github.com/kcache/cache/internal/shardfilter"
)

// This file gives the bridge's informer client-go's SetShardSelector on the
// client-go minors whose SharedIndexInformer has it (v0.38 on), while the
// package is compiled against every supported minor: the method's parameter
// type, k8s.io/apimachinery/pkg/sharding.Selector, does not exist before
// apimachinery v0.38, so the method cannot be written here.
//
// It is promoted instead, as checker.go promotes HasSyncedChecker: each
// informer holds a client-go SharedIndexInformer (shardLatch), built over a
// ListerWatcher that refuses every call and never run for real. Every method
// of client-go's interface but two is declared by the bridge's informer
// itself, which hides the held informer's; HasSyncedChecker comes from the
// syncedChecker, one embedding level shallower than the held informer, and
// wins; so SetShardSelector is the one method the held informer adds, with
// client-go's own code: it stores the selector, or fails with "informer has
// already started". checker_test.go and shard_test.go pin the method set on
// every minor, and fail on a client-go whose interface gains a method the
// bridge does not know (it would otherwise be promoted from the held
// informer).
//
// When the bridge's informer starts, it runs the held informer with an
// already cancelled context and a discarding logger: client-go then counts
// it as started, so a later SetShardSelector fails as client-go's does, and
// its run returns at once without calling the ListerWatcher (shard_test.go
// checks both, and goleak that no goroutine stays). The selector it stored
// is read from its unexported field (extract.go) and, if not empty, handed
// to the ListerWatcher in front of the kcache informer (shardableLW), which
// from then on treats lists and watches as client-go's NewShardedListWatch
// does. Before v0.38 there is no held informer and no shardableLW: the
// kcache informer gets the caller's ListerWatcher as it is.

// clientGoHasShardSelector reports whether this build's client-go informers
// have SetShardSelector (v0.38 on).
var clientGoHasShardSelector = func() bool {
	_, ok := reflect.TypeFor[toolscache.SharedIndexInformer]().MethodByName("SetShardSelector")
	return ok
}()

// clientGoInformer names client-go's interface for embedding under a name
// of its own: an embedded field called SharedIndexInformer would be taken
// for an adapter's inner informer by Unwrap and the factory.
type clientGoInformer = toolscache.SharedIndexInformer

// selectorSlot puts the held informer's methods two embedding levels below
// shardLatch, three below the bridge's informer: deeper than the
// syncedChecker's HasSyncedChecker (two below), which must win.
type selectorSlot struct {
	clientGoInformer
}

// shardLatch holds the selector client-go's SetShardSelector stores, and
// applies it when the informer starts (see the file comment). Make it with
// newShardLatch.
type shardLatch struct {
	selectorSlot
	// lw is the ListerWatcher in front of the kcache informer; nil when the
	// bridge could not put one there (Wrap, or a kcache ShardedListerWatcher
	// that kcache must see as it is).
	lw *shardableLW
	// refusals is the held informer's ListerWatcher.
	refusals refusingLW
	// startOnce runs the first start, which sets ok.
	startOnce sync.Once
	ok        bool
}

// newShardLatch returns the latch of a bridge informer of exampleObject
// whose kcache informer lists and watches through lw (nil if none).
func newShardLatch(exampleObject runtime.Object, lw *shardableLW) *shardLatch {
	l := &shardLatch{lw: lw}
	if clientGoHasShardSelector {
		l.clientGoInformer = toolscache.NewSharedIndexInformer(&l.refusals, exampleObject, 0, nil)
	}
	return l
}

// start marks the held informer started, so that SetShardSelector refuses
// from now on, and applies the selector it stored. It reports false when a
// selector was set that this informer cannot apply (its ListerWatcher was
// not the bridge's to wrap): the informer must then not run, for it would
// hold objects outside its shard. Only the first call does anything; later
// ones report what it did.
func (l *shardLatch) start(logger klog.Logger) bool {
	l.startOnce.Do(func() { l.ok = l.apply(logger) })
	return l.ok
}

// apply does the work of start's first call.
func (l *shardLatch) apply(logger klog.Logger) bool {
	if l.clientGoInformer == nil {
		return true
	}
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logr.Discard()))
	cancel()
	l.clientGoInformer.RunWithContext(ctx)
	sel, err := clientGoShardSelector(l.clientGoInformer)
	if err != nil {
		logger.Error(err, "Cannot read the informer's shard selector; a selector set with SetShardSelector is not applied")
		return true
	}
	if sel == nil || sel.Empty() {
		return true
	}
	if l.lw == nil {
		logger.Error(errors.New("informer not started"), "A shard selector was set on an informer whose ListerWatcher the bridge did not wrap (made by Wrap, or over a kcache ShardedListerWatcher); build it with NewSharedIndexInformer over a client-go ListerWatcher, or shard it with kcache", "selector", sel.String())
		return false
	}
	l.lw.restrict(sel)
	return true
}

// carryFrom gives the held informer the shard selector the client-go
// informer ci holds (SharedIndexInformerOptions.ShardSelector, or an
// earlier SetShardSelector), through client-go's own SetShardSelector, so
// that a later call replaces it as on ci. Before v0.38 there is nothing to
// carry.
func (l *shardLatch) carryFrom(ci toolscache.SharedIndexInformer) error {
	if l.clientGoInformer == nil {
		return nil
	}
	sel, err := clientGoShardSelector(ci)
	if err != nil || sel == nil {
		return err
	}
	set := reflect.ValueOf(l.clientGoInformer).MethodByName("SetShardSelector")
	if errs := set.Call([]reflect.Value{reflect.ValueOf(sel)}); !errs[0].IsNil() {
		return fmt.Errorf("carrying the shard selector over: %w", errs[0].Interface().(error))
	}
	return nil
}

// refusingLW is the held informer's ListerWatcher: that informer's run is
// over before it could list, so a call is a bug; calls counts them.
type refusingLW struct {
	calls atomic.Int32
}

var errHeldInformerListed = errors.New("the bridge's held client-go informer is never run; it lists and watches nothing")

func (r *refusingLW) List(metav1.ListOptions) (runtime.Object, error) {
	r.calls.Add(1)
	return nil, errHeldInformerListed
}

func (r *refusingLW) Watch(metav1.ListOptions) (watch.Interface, error) {
	r.calls.Add(1)
	return nil, errHeldInformerListed
}

// shardSelector is the part of apimachinery's sharding.Selector (v0.38) the
// bridge calls, named by its methods so that it compiles on every minor.
type shardSelector interface {
	Matches(obj runtime.Object) (bool, error)
	Empty() bool
	String() string
}

// shardableLW stands between the kcache informer and the caller's
// ListerWatcher. Until restrict, it passes every call through unchanged;
// after, it restricts lists and watches to a shard selector as client-go's
// NewShardedListWatch does, with the code kcache's strict mode uses
// (internal/shardfilter): the selector goes out in ListOptions.ShardSelector
// (a different one already there is an error); a list whose
// ListMeta.ShardInfo echoes it is kept, one that echoes another is an
// error, and one without ShardInfo is filtered here with the selector's
// Matches; watch events are filtered here always (bookmarks and errors
// pass). The first time the client filters, it logs so once at V(2).
type shardableLW struct {
	base    toolscache.ListerWatcher
	withCtx kcache.ListerWatcherWithContext
	// shard is nil until restrict, then fixed.
	shard atomic.Pointer[shardRestriction]
}

var (
	_ toolscache.ListerWatcher            = (*shardableLW)(nil)
	_ toolscache.ListerWatcherWithContext = (*shardableLW)(nil)
)

// shardRestriction is a selector in force, with its once-only log.
type shardRestriction struct {
	fallback shardfilter.Fallback
	filter   shardfilter.Shard
}

// newShardableLW returns a pass-through stand-in for lw.
func newShardableLW(lw toolscache.ListerWatcher) *shardableLW {
	return &shardableLW{base: lw, withCtx: kcache.ToListerWatcherWithContext(lw)}
}

// restrict puts sel in force for every later list and watch.
func (s *shardableLW) restrict(sel shardSelector) {
	r := &shardRestriction{}
	r.filter = shardfilter.Shard{Text: sel.String(), Matches: sel.Matches, Fallback: &r.fallback}
	s.shard.Store(r)
}

// List lists; see ListWithContext.
func (s *shardableLW) List(options metav1.ListOptions) (runtime.Object, error) {
	return s.ListWithContext(context.Background(), options)
}

// Watch watches; see WatchWithContext.
func (s *shardableLW) Watch(options metav1.ListOptions) (watch.Interface, error) {
	return s.WatchWithContext(context.Background(), options)
}

// ListWithContext lists through the caller's ListerWatcher, restricted to
// the shard once one is in force.
func (s *shardableLW) ListWithContext(ctx context.Context, options metav1.ListOptions) (runtime.Object, error) {
	shard := s.shard.Load()
	if shard == nil {
		return s.withCtx.ListWithContext(ctx, options)
	}
	if err := shard.ask(&options); err != nil {
		return nil, err
	}
	list, err := s.withCtx.ListWithContext(ctx, options)
	if err != nil {
		return nil, err
	}
	if _, err := shard.filter.FilterList(ctx, list); err != nil {
		return nil, err
	}
	return list, nil
}

// WatchWithContext watches through the caller's ListerWatcher, restricted
// to the shard once one is in force: the events of objects outside it are
// dropped, as are those the selector cannot judge (reported to
// utilruntime's error handlers).
func (s *shardableLW) WatchWithContext(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
	shard := s.shard.Load()
	if shard == nil {
		return s.withCtx.WatchWithContext(ctx, options)
	}
	if err := shard.ask(&options); err != nil {
		return nil, err
	}
	w, err := s.withCtx.WatchWithContext(ctx, options)
	if err != nil {
		return nil, err
	}
	return watch.Filter(w, func(e watch.Event) (watch.Event, bool) {
		return e, shard.filter.Admit(ctx, e)
	}), nil
}

// IsWatchListSemanticsUnSupported answers the streaming-list capability
// probe as the caller's ListerWatcher does (false if it has no answer).
func (s *shardableLW) IsWatchListSemanticsUnSupported() bool {
	r, ok := s.base.(interface{ IsWatchListSemanticsUnSupported() bool })
	return ok && r.IsWatchListSemanticsUnSupported()
}

// ask puts the selector into options; a caller's different selector
// already there is an error.
func (r *shardRestriction) ask(options *metav1.ListOptions) error {
	sent, err := r.filter.Ask(options)
	if err == nil && !sent {
		// Unreachable: only a client-go with SetShardSelector (v0.38)
		// restricts, and its apimachinery has the field.
		return errors.New("this build's metav1.ListOptions has no ShardSelector")
	}
	return err
}
