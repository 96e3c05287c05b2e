package membership

import (
	"context"
	"errors"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// ErrLeaseTaken is wrapped by the error of a member whose Lease name is
// already used by a Lease of another holder or group.
var ErrLeaseTaken = errors.New("lease held by another member")

// renew writes now as the renewal time of the member's Lease, creating the
// Lease or taking over one this identity left behind if needed. On success
// lastRenew becomes now. Only Run's goroutine calls it.
func (m *Member) renew(ctx context.Context, now time.Time) error {
	if m.lease != nil {
		next := m.lease.DeepCopy()
		m.stamp(next, now)
		updated, err := m.leases.Update(ctx, next, metav1.UpdateOptions{})
		if err == nil {
			m.lease, m.lastRenew = updated, now
			return nil
		}
		if !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			return fmt.Errorf("renew lease %s: %w", m.describe(), err)
		}
		// Changed or deleted behind our back: read it again.
		m.lease = nil
	}
	return m.acquire(ctx, now)
}

// acquire creates the member's Lease, or updates the one of the same name
// if this identity of this group holds it.
func (m *Member) acquire(ctx context.Context, now time.Time) error {
	cur, err := m.leases.Get(ctx, m.name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		fresh := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: m.name, Namespace: m.cfg.Namespace}}
		fresh.Spec.AcquireTime = &metav1.MicroTime{Time: now}
		m.stamp(fresh, now)
		created, err := m.leases.Create(ctx, fresh, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("create lease %s: %w", m.describe(), err)
		}
		m.lease = created
	case err != nil:
		return fmt.Errorf("get lease %s: %w", m.describe(), err)
	default:
		if err := m.checkOwner(cur); err != nil {
			return err
		}
		next := cur.DeepCopy()
		next.Spec.AcquireTime = &metav1.MicroTime{Time: now}
		m.stamp(next, now)
		updated, err := m.leases.Update(ctx, next, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("take over lease %s: %w", m.describe(), err)
		}
		m.lease = updated
	}
	m.lastRenew = now
	return nil
}

// checkOwner refuses a Lease of our name that another identity or another
// group holds (names can collide: group "a-b" with identity "c", group "a"
// with identity "b-c").
func (m *Member) checkOwner(l *coordinationv1.Lease) error {
	holder := ""
	if l.Spec.HolderIdentity != nil {
		holder = *l.Spec.HolderIdentity
	}
	group := l.Labels[GroupLabel]
	if (holder == "" || holder == m.cfg.Identity) && group == m.cfg.Group {
		return nil
	}
	return fmt.Errorf("%w: lease %s has holder %q and group %q, not %q of %q: choose another identity or group",
		ErrLeaseTaken, m.describe(), holder, group, m.cfg.Identity, m.cfg.Group)
}

// stamp makes l say: held by this identity of this group, renewed at now,
// for LeaseDuration.
func (m *Member) stamp(l *coordinationv1.Lease, now time.Time) {
	if l.Labels == nil {
		l.Labels = map[string]string{}
	}
	l.Labels[GroupLabel] = m.cfg.Group
	id := m.cfg.Identity
	secs := int32(m.cfg.LeaseDuration / time.Second)
	l.Spec.HolderIdentity = &id
	l.Spec.LeaseDurationSeconds = &secs
	l.Spec.RenewTime = &metav1.MicroTime{Time: now}
}

// observe lists the group's Leases and keeps the other members they show.
func (m *Member) observe(ctx context.Context) error {
	sel := labels.SelectorFromSet(labels.Set{GroupLabel: m.cfg.Group}).String()
	list, err := m.leases.List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return fmt.Errorf("list leases of group %q in namespace %q: %w", m.cfg.Group, m.cfg.Namespace, err)
	}
	m.peers, m.listed = peersOf(list.Items, m.cfg.Identity), true
	return nil
}

// release deletes the member's Lease, if it wrote one, so the others take
// its range over at their next round instead of after the Lease expires.
func (m *Member) release(ctx context.Context) error {
	if m.lease == nil {
		return nil
	}
	uid := m.lease.UID
	opts := metav1.DeleteOptions{}
	if uid != "" {
		opts.Preconditions = &metav1.Preconditions{UID: &uid}
	}
	err := m.leases.Delete(ctx, m.name, opts)
	m.lease = nil
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete lease %s (it expires after %v): %w", m.describe(), m.cfg.LeaseDuration, err)
	}
	return nil
}

// describe names the member's Lease as namespace/name.
func (m *Member) describe() string {
	return m.cfg.Namespace + "/" + m.name
}

// isConfigError reports whether err, met before the member ever joined,
// needs a person to fix it (permissions, a missing namespace, a name in
// use) rather than another try.
func isConfigError(err error) bool {
	return apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) || apierrors.IsInvalid(err) ||
		apierrors.IsNotFound(err) || errors.Is(err, ErrLeaseTaken)
}
