package sharding

import (
	kcache "github.com/kcache/cache"
	"k8s.io/apimachinery/pkg/runtime"
)

// This file keeps a move from pulling an object out of the cache while its
// reconcile runs. Reconciler admits a request for a cached object only
// while the object lies in the claimed range, and records it as running;
// a move first switches the range (later requests for the objects leaving
// it are dropped), then waits for the running reconciles of those objects
// to end, at most RetryPeriod, and only then moves the informers, whose
// relist takes the objects out of the cache. A reconciler thus never finds
// the object of its request gone from the cache because it moved.

// runningCall is one admitted reconcile: its object, and a channel closed
// when it ends.
type runningCall struct {
	obj  runtime.Object
	done chan struct{}
}

// admit reports whether obj lies in the range the replica claims now and,
// if so, records a reconcile of it as running until end is called.
func (s *Sharder) admit(obj runtime.Object) (end func(), ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.claiming || s.selector == nil {
		return nil, false
	}
	if in, err := s.selector.Matches(obj); err != nil || !in {
		return nil, false
	}
	s.nextCall++
	id, call := s.nextCall, &runningCall{obj: obj, done: make(chan struct{})}
	s.running[id] = call
	return func() {
		s.mu.Lock()
		delete(s.running, id)
		s.mu.Unlock()
		close(call.done)
	}, true
}

// leavingLocked returns the done channels of the running reconciles whose
// object lies outside sel. The caller holds s.mu.
func (s *Sharder) leavingLocked(sel *kcache.ShardSelector) []chan struct{} {
	var leaving []chan struct{}
	for _, call := range s.running {
		if in, err := sel.Matches(call.obj); err != nil || !in {
			leaving = append(leaving, call.done)
		}
	}
	return leaving
}

// awaitLeaving waits until every channel of leaving is closed, or
// s.retryPeriod has passed, and reports whether they all closed.
func (s *Sharder) awaitLeaving(leaving []chan struct{}) bool {
	if len(leaving) == 0 {
		return true
	}
	timer := s.clock.NewTimer(s.retryPeriod)
	defer timer.Stop()
	for _, done := range leaving {
		select {
		case <-done:
		case <-timer.C():
			return false
		}
	}
	return true
}
