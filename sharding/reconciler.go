package sharding

import (
	"context"
	"fmt"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Reconciler wraps r, the reconciler of the sharded kind of obj, so that
// it acts only on the objects of the replica's range:
//
//   - while the replica claims no range (before its first one, and while
//     its Lease cannot be renewed) every request is held back: requeued
//     after RetryPeriod, never dropped, so a change that arrived meanwhile
//     is reconciled once the replica claims again, or by the replica that
//     took the object over;
//   - a request for an object of the cache outside the range (it moved to
//     another replica, whose relist brings it there as a create) is
//     dropped;
//   - a request for an object the cache does not hold is checked with
//     reader, which must read the API server, not the cache (a manager's
//     GetAPIReader()): only if the object is gone is r called, to handle
//     the deletion; if it exists, it either belongs to another replica or
//     is on its way into this replica's cache, whose add brings a request
//     of its own, so the request is dropped.
//
// Every other request goes to r as it is. Reconciler panics if obj is not of a
// kind the Sharder shards or reader is nil: both are wiring mistakes.
func (s *Sharder) Reconciler(reader client.Reader, obj client.Object, r reconcile.Reconciler) reconcile.Reconciler {
	kind := reflect.TypeOf(obj)
	switch {
	case obj == nil || !s.kinds[kind]:
		panic(fmt.Sprintf("sharding: Reconciler for %T, which is not among Options.Objects", obj))
	case reader == nil:
		panic("sharding: Reconciler needs a reader of the API server, such as the manager's GetAPIReader()")
	case r == nil:
		panic("sharding: Reconciler needs a reconciler to wrap")
	}
	return &gate{s: s, reader: reader, example: obj, kind: kind, next: r}
}

// gate is the Reconciler of one sharded kind.
type gate struct {
	s       *Sharder
	reader  client.Reader
	example client.Object
	kind    reflect.Type
	next    reconcile.Reconciler
}

func (g *gate) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if !g.s.Claiming() {
		log.FromContext(ctx).V(4).Info("Holding the request back: this replica claims no shard range", "retryIn", g.s.retryPeriod)
		return reconcile.Result{RequeueAfter: g.s.retryPeriod}, nil
	}
	if cached, ok := g.s.cached(g.kind, req); ok {
		end, owned := g.s.admit(cached)
		if !owned {
			log.FromContext(ctx).V(4).Info("Dropping the request: the object moved to another replica")
			return reconcile.Result{}, nil
		}
		defer end()
		return g.next.Reconcile(ctx, req)
	}
	live, ok := g.example.DeepCopyObject().(client.Object)
	if !ok {
		return reconcile.Result{}, fmt.Errorf("sharding: copying the example %T gave no client.Object", g.example)
	}
	err := g.reader.Get(ctx, req.NamespacedName, live)
	switch {
	case apierrors.IsNotFound(err):
		return g.next.Reconcile(ctx, req)
	case err != nil:
		return reconcile.Result{}, fmt.Errorf("sharding: reading %s to tell a deletion from a move: %w", req.NamespacedName, err)
	}
	log.FromContext(ctx).V(4).Info("Dropping the request: the object is not in this replica's cache", "inRange", g.s.owns(live))
	return reconcile.Result{}, nil
}

// cached returns the object of req from the caches of kind, if one holds
// it.
func (s *Sharder) cached(kind reflect.Type, req reconcile.Request) (runtime.Object, bool) {
	key := req.Name
	if req.Namespace != "" {
		key = req.Namespace + "/" + req.Name
	}
	s.mu.Lock()
	stores := s.stores[kind]
	s.mu.Unlock()
	for _, store := range stores {
		if obj, ok, err := store.GetByKey(key); err == nil && ok {
			if o, isObj := obj.(runtime.Object); isObj {
				return o, true
			}
		}
	}
	return nil, false
}
