package integration

import (
	"context"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// churnPlan sizes a workload. Long-lived objects are created (some before
// the informers start, the rest in one burst), updated `updates` times each
// by concurrent writers, and deletePercent of them deleted in a burst;
// short-lived objects are created, updated once and deleted by concurrent
// writers while the updates run.
type churnPlan struct {
	preexisting   int // long-lived objects created before the informers start
	burst         int // long-lived objects created in one burst afterwards
	shortLived    int // objects created, updated and deleted by the writers
	updates       int // updates of every long-lived object
	deletePercent int // share of long-lived objects deleted at the end
	parallel      int // requests in flight during a burst
	writers       int // concurrent writers during the update phase
}

// fullChurn is the 1,000-object workload of the churn scenarios.
var fullChurn = churnPlan{preexisting: 200, burst: 600, shortLived: 200, updates: 2, deletePercent: 60, parallel: 16, writers: 4}

// smallChurn is for scenarios whose point lies elsewhere.
var smallChurn = churnPlan{preexisting: 40, burst: 60, shortLived: 20, updates: 1, deletePercent: 50, parallel: 8, writers: 2}

// objects is the number of distinct objects the plan writes.
func (p churnPlan) objects() int { return p.preexisting + p.burst + p.shortLived }

// deleted is the number of long-lived objects the plan deletes.
func (p churnPlan) deleted() int {
	n := 0
	for i := range p.preexisting + p.burst {
		if p.deletes(i) {
			n++
		}
	}
	return n
}

// deletes reports whether long-lived object i is deleted at the end.
func (p churnPlan) deletes(i int) bool { return i%100 < p.deletePercent }

// want is what a handler registered before the informer started must be
// told about the plan's objects. deleteMarks says whether the API server
// marks each object with an update before deleting it (Pods).
func (p churnPlan) want(deleteMarks bool) eventCounts {
	long := p.preexisting + p.burst
	deletes := p.deleted() + p.shortLived
	c := eventCounts{
		Adds:        p.objects(),
		InitialAdds: p.preexisting,
		Updates:     long*p.updates + p.shortLived,
		Deletes:     deletes,
	}
	if deleteMarks {
		c.Updates += deletes
	}
	return c
}

// churn runs a plan against one kind in some namespaces.
type churn struct {
	plan       churnPlan
	kind       kindClient
	w          *writer
	namespaces []string
	// live holds the latest version of each long-lived object; index i is
	// only written by the goroutine handling object i.
	live []metav1.Object
}

func newChurn(plan churnPlan, kind kindClient, namespaces []string) *churn {
	return &churn{
		plan:       plan,
		kind:       kind,
		w:          &writer{kind: kind, ledger: newLedger()},
		namespaces: namespaces,
		live:       make([]metav1.Object, plan.preexisting+plan.burst),
	}
}

// newObject returns object i of the given family, spread over the
// namespaces.
func (c *churn) newObject(family string, i int) metav1.Object {
	ns := c.namespaces[i%len(c.namespaces)]
	return c.kind.newObject(ns, fmt.Sprintf("%s-%04d", family, i))
}

// createLive creates long-lived objects [from, to) with plan.parallel
// requests in flight.
func (c *churn) createLive(ctx context.Context, from, to int) error {
	return forEach(ctx, indexes(from, to), c.plan.parallel, func(ctx context.Context, i int) error {
		obj, err := c.w.create(ctx, c.newObject("live", i))
		c.live[i] = obj
		return err
	})
}

// prepopulate creates the objects that exist before the informers start.
func (c *churn) prepopulate(ctx context.Context) error {
	return c.createLive(ctx, 0, c.plan.preexisting)
}

// run performs the rest of the plan. midway, if set, runs after the create
// burst and before the updates.
func (c *churn) run(ctx context.Context, midway func()) error {
	p := c.plan
	if err := c.createLive(ctx, p.preexisting, p.preexisting+p.burst); err != nil {
		return err
	}
	if midway != nil {
		midway()
	}
	var g group
	for w := range p.writers {
		g.run(func() error { return c.updateShard(ctx, w) })
		g.run(func() error { return c.shortLived(ctx, w) })
	}
	if err := g.wait(); err != nil {
		return err
	}
	var doomed []int
	for i := range c.live {
		if p.deletes(i) {
			doomed = append(doomed, i)
		}
	}
	return forEach(ctx, doomed, p.parallel, func(ctx context.Context, i int) error {
		return c.w.delete(ctx, c.live[i])
	})
}

// updateShard updates writer w's share of the long-lived objects, round by
// round, so that updates to one object are spread out in time.
func (c *churn) updateShard(ctx context.Context, w int) error {
	for range c.plan.updates {
		for i := w; i < len(c.live); i += c.plan.writers {
			obj, err := c.w.update(ctx, c.live[i], noChange)
			if err != nil {
				return err
			}
			c.live[i] = obj
		}
	}
	return nil
}

// shortLived creates, updates and deletes writer w's share of short-lived
// objects one after another.
func (c *churn) shortLived(ctx context.Context, w int) error {
	for i := w; i < c.plan.shortLived; i += c.plan.writers {
		obj, err := c.w.create(ctx, c.newObject("brief", i))
		if err != nil {
			return err
		}
		if obj, err = c.w.update(ctx, obj, noChange); err != nil {
			return err
		}
		if err := c.w.delete(ctx, obj); err != nil {
			return err
		}
	}
	return nil
}

// account adds the workload's figures to the suite's tally.
func (c *churn) account() {
	tally.objects.Add(int64(len(c.w.ledger.all())))
	tally.writes.Add(c.w.ledger.writes.Load())
}

func indexes(from, to int) []int {
	out := make([]int, 0, to-from)
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

// group runs functions concurrently and keeps the first error.
type group struct {
	wg sync.WaitGroup
	// mu guards err.
	mu  sync.Mutex
	err error
}

func (g *group) run(f func() error) {
	g.wg.Go(func() {
		if err := f(); err != nil {
			g.mu.Lock()
			if g.err == nil {
				g.err = err
			}
			g.mu.Unlock()
		}
	})
}

func (g *group) wait() error {
	g.wg.Wait()
	return g.err
}
