package membership

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"
)

// running is a Member whose Run goroutine reports each round.
type running struct {
	m      *Member
	rec    *recorder
	clk    *clocktesting.FakeClock
	rounds chan time.Duration
	cancel context.CancelFunc
	done   chan error
}

// start runs a member of identity on cs with a clock of its own at t0. Run
// blocks after each round until the test takes the round from rounds.
func start(t *testing.T, cs *fake.Clientset, identity string) *running {
	t.Helper()
	clk := clocktesting.NewFakeClock(t0)
	m, rec := newTestMember(t, cs, clk, identity)
	r := &running{m: m, rec: rec, clk: clk, rounds: make(chan time.Duration), done: make(chan error, 1)}
	m.roundDone = func(wait time.Duration) { r.rounds <- wait }
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { r.done <- m.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-r.done
	})
	return r
}

// nextRound waits for the member's next round and checks its assignment.
// It returns the wait before the round after.
func (r *running) nextRound(t *testing.T, want Assignment) time.Duration {
	t.Helper()
	wait := <-r.rounds
	if diff := cmp.Diff(want, r.m.Assignment()); diff != "" {
		t.Errorf("%s: assignment (-want +got):\n%s", r.m.cfg.Identity, diff)
	}
	return wait
}

// stop cancels Run and returns its result.
func (r *running) stop() error {
	r.cancel()
	err := <-r.done
	r.done <- err // for the cleanup
	return err
}

func TestRun_ReplicasSplitTheSpaceAndTheSurvivorTakesOverOnCleanStop(t *testing.T) {
	cs := fake.NewClientset()
	a := start(t, cs, "a")
	a.nextRound(t, even(t, 0, 1))
	b := start(t, cs, "b")
	b.nextRound(t, even(t, 1, 2))

	a.clk.Step(2 * time.Second)
	a.nextRound(t, even(t, 0, 2))
	expectCalls(t, a.rec, []string{even(t, 0, 1).Selector, even(t, 0, 2).Selector}, []Assignment{even(t, 0, 1), even(t, 0, 2)})
	expectCalls(t, b.rec, []string{even(t, 1, 2).Selector}, []Assignment{even(t, 1, 2)})

	if err := b.stop(); err != nil {
		t.Fatalf("b's Run: %v", err)
	}
	expectCalls(t, b.rec, nil, []Assignment{unclaimed(0)})
	if diff := cmp.Diff([]string{"a"}, leaseHolders(t, cs)); diff != "" {
		t.Errorf("holders after b stopped (-want +got):\n%s", diff)
	}

	a.clk.Step(2 * time.Second)
	a.nextRound(t, even(t, 0, 1))
	if err := a.stop(); err != nil {
		t.Fatalf("a's Run: %v", err)
	}
	if got := leaseHolders(t, cs); len(got) != 0 {
		t.Errorf("leases left after both stopped: %v", got)
	}
}

func TestRun_AReplicaThatStopsRenewingIsDroppedWhenItsLeaseExpires(t *testing.T) {
	cs := fake.NewClientset()
	a := start(t, cs, "a")
	a.nextRound(t, even(t, 0, 1))
	b := start(t, cs, "b")
	b.nextRound(t, even(t, 1, 2))

	// b goes away without deleting its Lease, renewed last at t0.
	failing(cs, "delete", apierrors.NewServiceUnavailable("down"))
	if err := b.stop(); err == nil {
		t.Fatal("b's Run reported no error for its failed delete")
	}
	var waits []time.Duration
	for now := 2 * time.Second; now < 15*time.Second; now += waits[len(waits)-1] {
		a.clk.SetTime(t0.Add(now))
		waits = append(waits, a.nextRound(t, even(t, 0, 2)))
	}
	// a wakes at the moment b's Lease expires, not at its next period.
	wantWaits := []time.Duration{2, 2, 2, 2, 2, 2, 1}
	for i := range wantWaits {
		wantWaits[i] *= time.Second
	}
	if diff := cmp.Diff(wantWaits, waits); diff != "" {
		t.Errorf("a's waits (-want +got):\n%s", diff)
	}
	a.clk.SetTime(t0.Add(15 * time.Second))
	a.nextRound(t, even(t, 0, 1))
	expectCalls(t, a.rec,
		[]string{even(t, 0, 1).Selector, even(t, 0, 2).Selector, even(t, 0, 1).Selector},
		[]Assignment{even(t, 0, 1), even(t, 0, 2), even(t, 0, 1)})
}

func TestRun_TransientErrorsBeforeJoiningAreRetried(t *testing.T) {
	cs := fake.NewClientset()
	broken := failing(cs, "create", apierrors.NewServiceUnavailable("starting"))
	a := start(t, cs, "a")
	if wait := <-a.rounds; wait != 2*time.Second {
		t.Errorf("wait %v after a failed join, want the retry period", wait)
	}
	if got := a.m.Assignment(); got.Claiming() {
		t.Errorf("claims %+v without a Lease", got)
	}
	broken.Store(false)
	a.clk.Step(2 * time.Second)
	a.nextRound(t, even(t, 0, 1))
}

func TestRun_ErrorsNoRetryCuresEndRunBeforeJoining(t *testing.T) {
	forbidden := apierrors.NewForbidden(leasesResource, "ctl-a", errors.New(`User "system:serviceaccount:ns:ctl" cannot create resource "leases"`))
	tests := []struct {
		name    string
		prepare func(*testing.T, *fake.Clientset)
		want    string
		is      func(error) bool
	}{{
		name:    "create forbidden",
		prepare: func(_ *testing.T, cs *fake.Clientset) { failing(cs, "create", forbidden) },
		want:    `membership: create lease ns/ctl-a: leases.coordination.k8s.io "ctl-a" is forbidden`,
		is:      apierrors.IsForbidden,
	}, {
		name:    "list forbidden",
		prepare: func(_ *testing.T, cs *fake.Clientset) { failing(cs, "list", forbidden) },
		want:    `membership: list leases of group "ctl" in namespace "ns": leases.coordination.k8s.io "ctl-a" is forbidden`,
		is:      apierrors.IsForbidden,
	}, {
		name: "namespace missing",
		prepare: func(_ *testing.T, cs *fake.Clientset) {
			failing(cs, "create", apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, testNS))
		},
		want: `membership: create lease ns/ctl-a: namespaces "ns" not found`,
		is:   apierrors.IsNotFound,
	}, {
		name: "lease name held by another identity",
		prepare: func(t *testing.T, cs *fake.Clientset) {
			l := peerLease("a", t0, 15)
			other := "someone-else"
			l.Spec.HolderIdentity = &other
			if err := cs.Tracker().Add(l); err != nil {
				t.Fatal(err)
			}
		},
		want: `membership: lease held by another member: lease ns/ctl-a has holder "someone-else" and group "ctl", not "a" of "ctl"`,
		is:   func(err error) bool { return errors.Is(err, ErrLeaseTaken) },
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cs := fake.NewClientset()
			tc.prepare(t, cs)
			m, rec := newTestMember(t, cs, clocktesting.NewFakeClock(t0), "a")
			err := m.Run(context.Background())
			if err == nil || !strings.Contains(err.Error(), tc.want) || !tc.is(err) {
				t.Fatalf("Run: %v, want an error saying %q", err, tc.want)
			}
			if got := m.Assignment(); got.Claiming() {
				t.Errorf("claims %+v after Run returned", got)
			}
			if shards, _ := rec.take(); len(shards) != 0 {
				t.Errorf("Resharder moved to %v", shards)
			}
			for _, h := range leaseHolders(t, cs) {
				if h == "a" {
					t.Error("the member's Lease is left behind")
				}
			}
		})
	}
}

func TestRun_RefusesASecondConcurrentRun(t *testing.T) {
	cs := fake.NewClientset()
	a := start(t, cs, "a")
	a.nextRound(t, even(t, 0, 1))
	err := a.m.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "already running") {
		t.Fatalf("second Run: %v", err)
	}
	if err := a.stop(); err != nil {
		t.Fatal(err)
	}
}

func TestRun_ReportsAFailedDeleteOnStop(t *testing.T) {
	cs := fake.NewClientset()
	failing(cs, "delete", apierrors.NewServiceUnavailable("down"))
	a := start(t, cs, "a")
	a.nextRound(t, even(t, 0, 1))
	err := a.stop()
	if err == nil || !strings.Contains(err.Error(), "membership: delete lease ns/ctl-a (it expires after 15s): down") {
		t.Fatalf("Run: %v", err)
	}
	if got := a.m.Assignment(); got.Claiming() {
		t.Errorf("claims %+v after Run returned", got)
	}
	l, getErr := cs.CoordinationV1().Leases(testNS).Get(context.Background(), "ctl-a", metav1.GetOptions{})
	if getErr != nil || *l.Spec.HolderIdentity != "a" {
		t.Errorf("the Lease should remain to expire: %v, %v", l, getErr)
	}
}
