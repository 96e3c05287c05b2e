package membership

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/klog/v2"
)

// Member is one replica's membership in a group: Run keeps its Lease,
// follows the others' and moves the Resharder to the replica's range.
type Member struct {
	// cfg is the validated Config with defaults; read-only after New.
	cfg    Config
	leases coordinationv1client.LeaseInterface
	name   string

	// running is set while Run runs, to refuse a second concurrent Run.
	running atomic.Bool

	// The fields below belong to Run's goroutine alone.

	// lease is the member's Lease as the server last returned it, nil
	// before the first write and after a conflict or a release.
	lease *coordinationv1.Lease
	// lastRenew is the local time of the last successful write of lease;
	// zero before any. The member claims a range strictly before
	// lastRenew + RenewDeadline.
	lastRenew time.Time
	// peers are the other members of the last successful list.
	peers []peer
	// listed is set once a list succeeded: the member claims no range
	// before it knows its peers.
	listed bool
	// applied is the selector the Resharder last accepted.
	applied string

	// roundDone, when set by a test, is called after each round with the
	// time Run waits before the next one.
	roundDone func(wait time.Duration)

	// mu guards current.
	mu sync.Mutex
	// current is the assignment of the last round; it changes only on
	// Run's goroutine.
	current Assignment
}

// New validates cfg, fills in its defaults and returns a Member that is not
// running yet. Errors wrap ErrInvalidConfig and name the field at fault.
func New(cfg Config) (*Member, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Member{
		cfg:     cfg,
		leases:  cfg.Client.Leases(cfg.Namespace),
		name:    leaseName(cfg.Group, cfg.Identity),
		current: unclaimed(0),
	}, nil
}

// LeaseName returns the name of the member's Lease in its namespace.
func (m *Member) LeaseName() string {
	return m.name
}

// Assignment returns the range the member claims now. It claims none
// (Assignment.Claiming is false) until Run has written its Lease and listed
// the group once, after Run returns, and from RenewDeadline after its last
// successful renewal until the next one.
func (m *Member) Assignment() Assignment {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.current
}

// Run keeps the member in its group until ctx is done. Each round, every
// RetryPeriod and also when a peer's Lease is due to expire, it renews its
// Lease, lists the group's Leases and computes its range: shard i of n,
// where n counts the live members (their renewTime + leaseDurationSeconds
// is later than the local clock's now) and i is its place among them
// sorted by Identity. When the range changes it calls the Resharder (if
// any), then OnChange.
//
// Errors of a round are logged and the next round tries again, with one
// exception: before the member has joined once, an error a retry cannot
// cure (forbidden, unauthorized, invalid, namespace not found, ErrLeaseTaken)
// ends Run with that error, wrapped and naming the Lease.
//
// When ctx is done, Run deletes the member's Lease, so the others take its
// range over at their next round, stops claiming (telling OnChange, not the
// Resharder) and returns nil, or the delete's error (the Lease then expires
// after LeaseDuration). A Member runs one Run at a time; it may run again
// after Run returns.
func (m *Member) Run(ctx context.Context) error {
	if !m.running.CompareAndSwap(false, true) {
		return errors.New("membership: Run is already running for this member")
	}
	defer m.running.Store(false)
	logger := klog.FromContext(ctx).WithValues("lease", m.describe(), "identity", m.cfg.Identity)
	ctx = klog.NewContext(ctx, logger)
	for joined := false; ; {
		wait, err := m.round(ctx)
		switch {
		case err == nil:
			joined = true
		case !joined && isConfigError(err):
			return errors.Join(fmt.Errorf("membership: %w", err), m.leave(ctx))
		default:
			logger.Error(err, "Membership round failed; trying again", "retryIn", wait)
		}
		timer := m.cfg.Clock.NewTimer(wait)
		if m.roundDone != nil {
			m.roundDone(wait)
		}
		select {
		case <-ctx.Done():
			timer.Stop()
			return m.leave(ctx)
		case <-timer.C():
		}
	}
}

// round renews, lists and settles once, and returns how long to wait for
// the next round and the round's first error. A failed renewal or list
// still settles, on the last known peers and the last renewal.
func (m *Member) round(ctx context.Context) (time.Duration, error) {
	callCtx, cancel := context.WithTimeout(ctx, m.cfg.RenewDeadline)
	defer cancel()
	errRenew := m.renew(callCtx, m.cfg.Clock.Now())
	errList := m.observe(callCtx)
	wait := m.settle(ctx)
	if errRenew != nil {
		return wait, errRenew
	}
	return wait, errList
}

// settle computes the assignment at the clock's now, hands a new one to the
// Resharder and OnChange, and returns the time until the next round: the
// next RetryPeriod, or sooner if a peer's Lease or the member's own claim
// runs out before it.
func (m *Member) settle(ctx context.Context) time.Duration {
	now := m.cfg.Clock.Now()
	claimUntil := m.lastRenew.Add(m.cfg.RenewDeadline)
	claiming := m.listed && !m.lastRenew.IsZero() && now.Before(claimUntil)
	next, expiry := assign(m.cfg.Identity, claiming, m.peers, now)
	m.apply(ctx, next)

	wait := m.cfg.RetryPeriod
	if !expiry.IsZero() && expiry.Sub(now) < wait {
		wait = expiry.Sub(now)
	}
	if claiming && claimUntil.Sub(now) < wait {
		wait = claimUntil.Sub(now)
	}
	return wait
}

// apply makes next the current assignment, moving the Resharder if next
// claims a range it is not on, and tells OnChange if next differs from the
// previous assignment. It calls neither under m.mu.
func (m *Member) apply(ctx context.Context, next Assignment) {
	m.mu.Lock()
	prev := m.current
	m.current = next
	m.mu.Unlock()

	logger := klog.FromContext(ctx)
	if next.Claiming() && next.Selector != m.applied && m.cfg.Resharder != nil {
		if err := m.cfg.Resharder.SetShard(next.Selector); err != nil {
			logger.Error(err, "Resharder refused the new range; trying again next round", "selector", next.Selector)
		} else {
			m.applied = next.Selector
		}
	}
	if next == prev {
		return
	}
	if next.Claiming() {
		logger.Info("Membership range changed", "index", next.Index, "count", next.Count, "selector", next.Selector)
	} else {
		logger.Info("Membership claims no range", "otherMembers", next.Count)
	}
	if m.cfg.OnChange != nil {
		m.cfg.OnChange(next.Selector, next.Index, next.Count)
	}
}

// leave releases the member's Lease with a context of its own (ctx may be
// done) and stops claiming.
func (m *Member) leave(ctx context.Context) error {
	callCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.cfg.RenewDeadline)
	defer cancel()
	err := m.release(callCtx)
	m.lastRenew, m.peers, m.listed = time.Time{}, nil, false
	m.apply(ctx, unclaimed(0))
	if err != nil {
		return fmt.Errorf("membership: %w", err)
	}
	return nil
}
