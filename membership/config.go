package membership

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/utils/clock"
)

// Defaults for the zero durations of a Config: the values kube-controller-
// manager uses for its leader election.
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
)

// GroupLabel is the label every Lease of a group carries, with the group's
// name as value; members list each other by it.
const GroupLabel = "membership.kcache.io/group"

// ErrInvalidConfig is wrapped by every error New returns for a Config it
// cannot accept; test for it with errors.Is.
var ErrInvalidConfig = errors.New("invalid membership config")

// Config describes one replica's membership in a group. Client, Namespace,
// Group and Identity are required; the zero durations take the defaults.
type Config struct {
	// Client reaches the Leases of the API server, e.g.
	// clientset.CoordinationV1(). The member needs get, create, update,
	// list and delete on leases in Namespace.
	Client coordinationv1client.LeasesGetter

	// Namespace holds the group's Leases.
	Namespace string

	// Group names the set of replicas that share out one hash space, e.g.
	// the controller's name. It is the value of GroupLabel on each Lease,
	// so it must be a valid label value.
	Group string

	// Identity names this replica, unique in the group, e.g. its pod name.
	// Members are ordered by Identity to give each its index. The Lease is
	// named Group + "-" + Identity, which must be a valid object name.
	Identity string

	// LeaseDuration is how long the others count this replica as a member
	// after its last renewal. It is written to the Lease in whole seconds,
	// so it must be a whole number of seconds.
	LeaseDuration time.Duration

	// RenewDeadline is how long this replica keeps claiming its range while
	// it fails to renew its Lease. It is shorter than LeaseDuration, so a
	// replica cut off from the API server stops claiming before the others
	// take its range over.
	RenewDeadline time.Duration

	// RetryPeriod is the time between two rounds: renew the Lease, list
	// the group, compute the range.
	RetryPeriod time.Duration

	// Resharder, if set, is moved to each new range the replica claims.
	Resharder Resharder

	// OnChange, if set, is called when the assignment changes, with the
	// new selector, index and count. When the replica claims no range they
	// are "", -1 and the number of other live members it knows of (0 once
	// Run has returned). It is for logs and metrics; it runs on Run's
	// goroutine and must not block.
	OnChange func(selector string, index, count int)

	// Clock is the time source; nil means the real clock.
	Clock clock.Clock
}

// withDefaults returns c with its zero durations and clock filled in.
func (c Config) withDefaults() Config {
	if c.LeaseDuration == 0 {
		c.LeaseDuration = DefaultLeaseDuration
	}
	if c.RenewDeadline == 0 {
		c.RenewDeadline = DefaultRenewDeadline
	}
	if c.RetryPeriod == 0 {
		c.RetryPeriod = DefaultRetryPeriod
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	return c
}

// validate reports the first thing wrong with c (defaults applied), wrapped
// in ErrInvalidConfig.
func (c Config) validate() error {
	if err := c.validateNames(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if err := c.validateDurations(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return nil
}

// validateNames checks the client and the names the Lease is built from.
func (c Config) validateNames() error {
	switch {
	case c.Client == nil:
		return errors.New("client must not be nil")
	case c.Namespace == "":
		return errors.New("namespace is empty")
	case c.Group == "":
		return errors.New("group is empty")
	case c.Identity == "":
		return errors.New("identity is empty")
	}
	if errs := validation.IsDNS1123Label(c.Namespace); len(errs) > 0 {
		return fmt.Errorf("namespace %q: %s", c.Namespace, strings.Join(errs, "; "))
	}
	if errs := validation.IsValidLabelValue(c.Group); len(errs) > 0 {
		return fmt.Errorf("group %q is the value of label %s: %s", c.Group, GroupLabel, strings.Join(errs, "; "))
	}
	name := leaseName(c.Group, c.Identity)
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return fmt.Errorf("lease name %q (group-identity): %s", name, strings.Join(errs, "; "))
	}
	return nil
}

// validateDurations checks the timing knobs as leader election does, and
// that the Lease can carry LeaseDuration.
func (c Config) validateDurations() error {
	switch {
	case c.LeaseDuration < 0:
		return fmt.Errorf("leaseDuration %v must be greater than zero", c.LeaseDuration)
	case c.RenewDeadline < 0:
		return fmt.Errorf("renewDeadline %v must be greater than zero", c.RenewDeadline)
	case c.RetryPeriod < 0:
		return fmt.Errorf("retryPeriod %v must be greater than zero", c.RetryPeriod)
	case c.LeaseDuration <= c.RenewDeadline:
		return fmt.Errorf("leaseDuration %v must be greater than renewDeadline %v", c.LeaseDuration, c.RenewDeadline)
	case c.RenewDeadline <= c.RetryPeriod:
		return fmt.Errorf("renewDeadline %v must be greater than retryPeriod %v", c.RenewDeadline, c.RetryPeriod)
	case c.LeaseDuration%time.Second != 0:
		return fmt.Errorf("leaseDuration %v must be a whole number of seconds, the Lease's unit", c.LeaseDuration)
	case c.LeaseDuration > time.Duration(1<<31-1)*time.Second:
		return fmt.Errorf("leaseDuration %v does not fit the Lease's int32 seconds", c.LeaseDuration)
	}
	return nil
}

// leaseName is the name of the Lease of identity in group.
func leaseName(group, identity string) string {
	return group + "-" + identity
}
