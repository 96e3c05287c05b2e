package membership

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
)

const (
	testNS    = "ns"
	testGroup = "ctl"
)

// recorder records what a member hands its Resharder and OnChange.
type recorder struct {
	// mu guards shards and changes.
	mu      sync.Mutex
	shards  []string
	changes []Assignment
	// refuse makes SetShard fail while set.
	refuse atomic.Bool
}

func (r *recorder) SetShard(selector string) error {
	if r.refuse.Load() {
		return errRefused
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.shards = append(r.shards, selector)
	return nil
}

func (r *recorder) onChange(selector string, index, count int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.changes = append(r.changes, Assignment{Selector: selector, Index: index, Count: count})
}

// take returns and forgets what was recorded.
func (r *recorder) take() (shards []string, changes []Assignment) {
	r.mu.Lock()
	defer r.mu.Unlock()
	shards, changes = r.shards, r.changes
	r.shards, r.changes = nil, nil
	return shards, changes
}

type refusedError struct{}

func (refusedError) Error() string { return "refused" }

var errRefused error = refusedError{}

// testConfig is a valid Config for identity on cs and clk with the default
// durations (15s, 10s, 2s), recording into rec.
func testConfig(cs *fake.Clientset, clk *clocktesting.FakeClock, identity string, rec *recorder) Config {
	return Config{
		Client:    cs.CoordinationV1(),
		Namespace: testNS,
		Group:     testGroup,
		Identity:  identity,
		Resharder: rec,
		OnChange:  rec.onChange,
		Clock:     clk,
	}
}

// newTestMember returns a member for identity, failing the test on error.
func newTestMember(t *testing.T, cs *fake.Clientset, clk *clocktesting.FakeClock, identity string) (*Member, *recorder) {
	t.Helper()
	rec := &recorder{}
	m, err := New(testConfig(cs, clk, identity, rec))
	if err != nil {
		t.Fatal(err)
	}
	return m, rec
}

// peerLease is the Lease a member of testGroup named identity writes when
// it renews at renew for secs seconds.
func peerLease(identity string, renew time.Time, secs int32) *coordinationv1.Lease {
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{
			Name:      leaseName(testGroup, identity),
			Namespace: testNS,
			Labels:    map[string]string{GroupLabel: testGroup},
		},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       &identity,
			RenewTime:            &metav1.MicroTime{Time: renew},
			LeaseDurationSeconds: &secs,
		},
	}
}

// leaseHolders lists the holders of the Leases in testNS, from the
// tracker itself so that no reactor stands in the way.
func leaseHolders(t *testing.T, cs *fake.Clientset) []string {
	t.Helper()
	gv := coordinationv1.SchemeGroupVersion
	obj, err := cs.Tracker().List(gv.WithResource("leases"), gv.WithKind("Lease"), testNS)
	if err != nil {
		t.Fatal(err)
	}
	var holders []string
	for _, l := range obj.(*coordinationv1.LeaseList).Items {
		holders = append(holders, *l.Spec.HolderIdentity)
	}
	return holders
}

// failing installs a reactor on cs that fails verb on leases with err
// while the returned switch is on.
func failing(cs *fake.Clientset, verb string, err error) *atomic.Bool {
	on := &atomic.Bool{}
	on.Store(true)
	cs.PrependReactor(verb, "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		if on.Load() {
			return true, nil, err
		}
		return false, nil, nil
	})
	return on
}
