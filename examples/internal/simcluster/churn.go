package simcluster

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
)

// ChurnOptions configure a Churn.
type ChurnOptions struct {
	// Rate is the number of changes per second. Zero makes no changes
	// (the misbehaviours below still happen).
	Rate float64
	// Target is the number of Pods the Churn keeps the cluster near.
	Target int
	// DropEvery, if not zero, is how often every open watch is dropped.
	DropEvery time.Duration
	// ExpireEvery, if not zero, is how often the history is compacted
	// (Cluster.Expire) with ExpireChanges changes no watch sees.
	ExpireEvery time.Duration
	// ExpireChanges is the number of changes made while expiring;
	// default 5.
	ExpireChanges int
	// OnMisbehave, if set, is told what the Churn did each time it
	// dropped watches or expired the history. It runs on the Churn's
	// goroutine.
	OnMisbehave func(what string)
}

// Churn changes a Cluster like a busy workload: it creates Pods, moves them
// through their phases (Pending → Running → Succeeded or Failed) and
// deletes finished ones, keeping the population near a target. Only one
// goroutine may use a Churn, and it should be the Cluster's only writer.
type Churn struct {
	cluster *Cluster
	gen     *Generator
	opts    ChurnOptions
	// names lists the Pods the Churn may change, as namespace and name;
	// at[key] is each one's position in names.
	names []podName
	at    map[podName]int
}

type podName struct{ namespace, name string }

// podWriter is what a change is made through: the Cluster, or a Tx
// during Expire.
type podWriter interface {
	Get(namespace, name string) (*v1.Pod, bool)
	Create(pod *v1.Pod) (*v1.Pod, error)
	Update(pod *v1.Pod) (*v1.Pod, error)
	Delete(namespace, name string) error
}

// NewChurn returns a Churn over the Pods c holds now, making new Pods
// with gen.
func NewChurn(c *Cluster, gen *Generator, opts ChurnOptions) *Churn {
	if opts.ExpireChanges <= 0 {
		opts.ExpireChanges = 5
	}
	ch := &Churn{cluster: c, gen: gen, opts: opts, at: map[podName]int{}}
	for _, p := range c.Pods() {
		ch.track(podName{p.Namespace, p.Name})
	}
	return ch
}

// Run makes changes at the configured rate, and misbehaves on schedule,
// until ctx is done. It returns ctx's error, or the first failed change.
func (ch *Churn) Run(ctx context.Context) error {
	const tick = 10 * time.Millisecond
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	drop, expire := newOptionalTicker(ch.opts.DropEvery), newOptionalTicker(ch.opts.ExpireEvery)
	defer drop.stop()
	defer expire.stop()

	last, budget := time.Now(), 0.0
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-drop.c:
			if n := ch.cluster.DropWatches(); n > 0 {
				ch.tell(fmt.Sprintf("dropped %d watch connection(s)", n))
			}
		case <-expire.c:
			if err := ch.expire(); err != nil {
				return err
			}
		case now := <-ticker.C:
			// Changes due since the last tick; a backlog after a pause is
			// capped at one second's worth.
			budget = min(budget+ch.opts.Rate*now.Sub(last).Seconds(), max(ch.opts.Rate, 1))
			last = now
			for ; budget >= 1; budget-- {
				if err := ch.Step(); err != nil {
					return err
				}
			}
		}
	}
}

// Step makes one change: it creates a Pod when the cluster is below its
// target, and otherwise moves a random Pod to its next phase or deletes
// it when it has finished.
func (ch *Churn) Step() error { return ch.step(ch.cluster) }

func (ch *Churn) step(w podWriter) error {
	below := len(ch.names) < ch.opts.Target
	if len(ch.names) == 0 || (below && (len(ch.names) < ch.opts.Target*95/100 || ch.gen.rng.IntN(3) == 0)) {
		p, err := w.Create(ch.gen.Pod())
		if err != nil {
			return fmt.Errorf("churn: %w", err)
		}
		ch.track(podName{p.Namespace, p.Name})
		return nil
	}
	name := ch.names[ch.gen.rng.IntN(len(ch.names))]
	p, ok := w.Get(name.namespace, name.name)
	if !ok {
		ch.untrack(name)
		return nil
	}
	next := ch.gen.NextPhase(p.Status.Phase)
	if next == "" {
		ch.untrack(name)
		if err := w.Delete(name.namespace, name.name); err != nil {
			return fmt.Errorf("churn: %w", err)
		}
		return nil
	}
	if _, err := w.Update(WithPhase(p, next)); err != nil {
		return fmt.Errorf("churn: %w", err)
	}
	return nil
}

// expire compacts the history with a few changes no watch sees.
func (ch *Churn) expire() error {
	err := ch.cluster.Expire(func(tx Tx) error {
		for range ch.opts.ExpireChanges {
			if err := ch.step(tx); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	ch.tell(fmt.Sprintf("compacted the history after %d unseen changes: watchers get 410 Gone", ch.opts.ExpireChanges))
	return nil
}

func (ch *Churn) tell(what string) {
	if ch.opts.OnMisbehave != nil {
		ch.opts.OnMisbehave(what)
	}
}

func (ch *Churn) track(n podName) {
	ch.at[n] = len(ch.names)
	ch.names = append(ch.names, n)
}

func (ch *Churn) untrack(n podName) {
	i, ok := ch.at[n]
	if !ok {
		return
	}
	last := len(ch.names) - 1
	ch.names[i] = ch.names[last]
	ch.at[ch.names[i]] = i
	ch.names = ch.names[:last]
	delete(ch.at, n)
}

// optionalTicker is a time.Ticker, or a channel that never fires when the
// period is zero.
type optionalTicker struct {
	c <-chan time.Time
	t *time.Ticker
}

func newOptionalTicker(d time.Duration) optionalTicker {
	if d <= 0 {
		return optionalTicker{}
	}
	t := time.NewTicker(d)
	return optionalTicker{c: t.C, t: t}
}

func (o optionalTicker) stop() {
	if o.t != nil {
		o.t.Stop()
	}
}
