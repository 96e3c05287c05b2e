package clientgo

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"

	kcache "github.com/kcache/cache"
)

// reflectorNames gives client-go watch error handlers a client-go
// *Reflector standing for the kcache Reflector that hit the error.
//
// client-go's Reflector has no exported fields to fill and its methods read
// unexported state, so the stand-in is a real client-go Reflector, built
// with NewReflectorWithOptions under the kcache Reflector's name and type
// description and over the same ListerWatcher, and never run: Name and
// TypeDescription answer as the kcache Reflector's do (what
// DefaultWatchErrorHandler and most handlers log); LastSyncResourceVersion
// is empty, the informer's own LastSyncResourceVersion is the one to ask.
// One stand-in is built per kcache Reflector and reused for its errors.
type reflectorNames struct {
	lw      toolscache.ListerWatcher // may be nil
	objType runtime.Object

	// mu guards from and to, the last pair translated.
	mu   sync.Mutex
	from *kcache.Reflector
	to   *toolscache.Reflector
}

// forKcache returns the client-go stand-in for r; nil for nil.
func (n *reflectorNames) forKcache(r *kcache.Reflector) *toolscache.Reflector {
	if r == nil {
		return nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.from != r {
		n.to = toolscache.NewReflectorWithOptions(n.lw, n.objType, toolscache.NewStore(toolscache.MetaNamespaceKeyFunc),
			toolscache.ReflectorOptions{Name: r.Name(), TypeDescription: r.TypeDescription()})
		n.from = r
	}
	return n.to
}

// withContext adapts a client-go context-aware watch error handler; nil
// stays nil.
func (n *reflectorNames) withContext(h toolscache.WatchErrorHandlerWithContext) kcache.WatchErrorHandlerWithContext {
	if h == nil {
		return nil
	}
	return func(ctx context.Context, r *kcache.Reflector, err error) {
		h(ctx, n.forKcache(r), err)
	}
}

// plain adapts a client-go watch error handler; nil stays nil.
func (n *reflectorNames) plain(h toolscache.WatchErrorHandler) kcache.WatchErrorHandlerWithContext {
	if h == nil {
		return nil
	}
	return func(_ context.Context, r *kcache.Reflector, err error) {
		h(n.forKcache(r), err)
	}
}
