package membership

import (
	"slices"
	"strings"
	"time"

	cache "github.com/kcache/cache"
	coordinationv1 "k8s.io/api/coordination/v1"
)

// Assignment is the part of the hash space a replica claims: shard Index of
// Count equal ranges, whose selector (cache.EvenShardSelector) is Selector.
// A replica that claims nothing has Selector "" and Index -1; Count is then
// the number of other live members it knows of.
type Assignment struct {
	Selector string
	Index    int
	Count    int
}

// Claiming reports whether the assignment holds a range.
func (a Assignment) Claiming() bool {
	return a.Selector != ""
}

// unclaimed is the assignment of a replica that holds no range while it
// knows of other live members.
func unclaimed(others int) Assignment {
	return Assignment{Index: -1, Count: others}
}

// peer is another member as its Lease last showed it.
type peer struct {
	identity string
	// expires is renewTime + leaseDurationSeconds: the member is live
	// strictly before it.
	expires time.Time
}

// peersOf returns the members leases describe, leaving out self and the
// Leases that name no holder, renewal or duration. For an identity with
// several Leases the latest expiry counts.
func peersOf(leases []coordinationv1.Lease, self string) []peer {
	latest := make(map[string]time.Time, len(leases))
	for i := range leases {
		spec := &leases[i].Spec
		if spec.HolderIdentity == nil || *spec.HolderIdentity == "" || *spec.HolderIdentity == self {
			continue
		}
		if spec.RenewTime == nil || spec.LeaseDurationSeconds == nil || *spec.LeaseDurationSeconds <= 0 {
			continue
		}
		exp := spec.RenewTime.Add(time.Duration(*spec.LeaseDurationSeconds) * time.Second)
		if cur, ok := latest[*spec.HolderIdentity]; !ok || exp.After(cur) {
			latest[*spec.HolderIdentity] = exp
		}
	}
	peers := make([]peer, 0, len(latest))
	for id, exp := range latest {
		peers = append(peers, peer{identity: id, expires: exp})
	}
	slices.SortFunc(peers, func(a, b peer) int { return strings.Compare(a.identity, b.identity) })
	return peers
}

// assign computes self's assignment at now: the live peers (those whose
// expiry is after now) plus self when claiming, sorted by identity, and
// self's place among them. It also returns the earliest expiry among the
// live peers (zero if none): the next instant the set can shrink.
func assign(self string, claiming bool, peers []peer, now time.Time) (Assignment, time.Time) {
	members := make([]string, 0, len(peers)+1)
	var next time.Time
	for _, p := range peers {
		if !now.Before(p.expires) {
			continue
		}
		members = append(members, p.identity)
		if next.IsZero() || p.expires.Before(next) {
			next = p.expires
		}
	}
	if !claiming {
		return unclaimed(len(members)), next
	}
	members = append(members, self)
	slices.Sort(members)
	index := slices.Index(members, self)
	// index is in [0, len(members)), so the selector always exists.
	selector, _ := cache.EvenShardSelector(index, len(members))
	return Assignment{Selector: selector, Index: index, Count: len(members)}, next
}
