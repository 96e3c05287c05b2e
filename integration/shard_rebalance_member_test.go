package integration

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	kcache "github.com/kcache/cache"
	"github.com/kcache/cache/membership"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// The membership timing of TestShardRebalance: short, so that a replica
// that stops renewing is dropped within seconds.
const (
	rebalanceLeaseDuration = 6 * time.Second
	rebalanceRenewDeadline = 4 * time.Second
	rebalanceRetryPeriod   = time.Second
)

// errCutOff is what a cut-off transport answers every request with.
var errCutOff = errors.New("test: this client is cut off from the API server")

// cutTransport is a switchable http.RoundTripper: while cut, every request
// fails at once, as when a replica loses its network without stopping.
type cutTransport struct {
	next http.RoundTripper
	cut  *atomic.Bool
}

func (c cutTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if c.cut.Load() {
		return nil, errCutOff
	}
	return c.next.RoundTrip(req)
}

// cuttableClient returns a clientset of its own whose requests all fail
// while cut is set.
func (s *server) cuttableClient(t testing.TB, cut *atomic.Bool) kubernetes.Interface {
	t.Helper()
	config := rest.CopyConfig(s.config)
	config.Wrap(func(next http.RoundTripper) http.RoundTripper { return cutTransport{next: next, cut: cut} })
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		t.Fatalf("build clientset: %v", err)
	}
	return client
}

// shardSource is a replica's Resharder: the first range its Member hands
// out builds the informer's ShardedListerWatcher, later ones move it. Only
// the Member's Run goroutine calls SetShard.
type shardSource struct {
	all kcache.ListerWatcher
	// lw is set by the first SetShard, which then closes ready; read it
	// only after ready is closed.
	lw    *kcache.ShardedListerWatcher
	ready chan struct{}
}

func (p *shardSource) SetShard(selector string) error {
	if p.lw != nil {
		return p.lw.SetShard(selector)
	}
	lw, err := kcache.NewShardedListerWatcher(p.all, selector)
	if err != nil {
		return err
	}
	p.lw = lw
	close(p.ready)
	return nil
}

// assignmentChange is one OnChange call.
type assignmentChange struct {
	at           time.Time
	index, count int
}

// assignmentLog keeps a Member's OnChange calls.
type assignmentLog struct {
	// mu guards changes.
	mu      sync.Mutex
	changes []assignmentChange
}

func (l *assignmentLog) onChange(_ string, index, count int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.changes = append(l.changes, assignmentChange{at: time.Now(), index: index, count: count})
}

// since returns the time of the first change after t that says index of
// count, if there is one.
func (l *assignmentLog) since(t time.Time, index, count int) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.changes {
		if c.at.After(t) && c.index == index && c.count == count {
			return c.at, true
		}
	}
	return time.Time{}, false
}

// rebalanceReplica is one replica of TestShardRebalance: a Member on a
// client that can be cut off, and a pod informer on a client of its own,
// whose ShardedListerWatcher the Member moves.
type rebalanceReplica struct {
	name     string
	cut      atomic.Bool
	member   *membership.Member
	source   *shardSource
	changes  assignmentLog
	handler  *moveRecorder
	informer *started
}

// joinGroup starts the Member of a replica named identity in group, with
// its Leases in leaseNamespace; it runs until the test ends, when it
// deletes its Lease.
func (s *server) joinGroup(t *testing.T, leaseNamespace, group, identity string) *rebalanceReplica {
	t.Helper()
	r := &rebalanceReplica{name: identity}
	client, _ := s.countedClient(t)
	list, watch := podClient{client: client}.listWatch("")
	// The second replica lists and then watches; the others stream.
	r.source = &shardSource{all: &countingLW{list: list, watch: watch, listOnly: identity == "replica-1"}, ready: make(chan struct{})}
	m, err := membership.New(membership.Config{
		Client:        s.cuttableClient(t, &r.cut).CoordinationV1(),
		Namespace:     leaseNamespace,
		Group:         group,
		Identity:      identity,
		LeaseDuration: rebalanceLeaseDuration,
		RenewDeadline: rebalanceRenewDeadline,
		RetryPeriod:   rebalanceRetryPeriod,
		Resharder:     r.source,
		OnChange:      r.changes.onChange,
	})
	if err != nil {
		t.Fatalf("%s: %v", identity, err)
	}
	r.member = m
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	t.Cleanup(func() {
		r.cut.Store(false)
		cancel()
		if err := <-done; err != nil {
			t.Errorf("%s: membership: %v", identity, err)
		}
	})
	return r
}

// startInformer starts the replica's pod informer, with its handler
// registered first, once the Member gave the replica a range, and waits
// for both to sync.
func (r *rebalanceReplica) startInformer(t *testing.T, namespaces []string) {
	t.Helper()
	select {
	case <-r.source.ready:
	case <-time.After(syncTimeout):
		t.Fatalf("%s: no range after %s", r.name, syncTimeout)
	}
	inf := kcache.NewSharedIndexInformer(r.source.lw, &corev1.Pod{}, 0, kcache.Indexers{})
	r.handler = newMoveRecorder(r.name+" handler", namespaces)
	reg, err := inf.AddEventHandler(r.handler)
	if err != nil {
		t.Fatalf("%s: add handler: %v", r.name, err)
	}
	r.informer = &started{name: r.name, informer: kcacheInformer{inf}, scope: namespaces, done: make(chan struct{})}
	r.informer.run(t, reg.HasSynced)
}

// selector returns the shard the replica's informer is on now.
func (r *rebalanceReplica) selector(t testing.TB) *kcache.ShardSelector {
	t.Helper()
	sel, err := kcache.ParseShardSelector(r.source.lw.Selector())
	if err != nil {
		t.Fatalf("%s: %v", r.name, err)
	}
	return sel
}

// holds reports whether the replica's informer holds key with uid.
func (r *rebalanceReplica) holds(key string, uid types.UID) bool {
	obj, ok, err := r.informer.informer.(kcacheInformer).GetStore().GetByKey(key)
	if err != nil || !ok {
		return false
	}
	pod, ok := obj.(*corev1.Pod)
	return ok && pod.UID == uid
}
