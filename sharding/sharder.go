package sharding

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	kcache "github.com/kcache/cache"
	"github.com/kcache/cache/membership"
	"k8s.io/apimachinery/pkg/runtime"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// Options configures one replica's Sharder. Client, Namespace, Group,
// Identity and at least one of Objects are required; zero durations take
// membership's defaults (15s, 10s, 2s).
type Options struct {
	// Client reaches the Leases the replicas keep, e.g.
	// clientset.CoordinationV1(). The replica needs get, create, update,
	// list and delete on leases in Namespace.
	Client coordinationv1client.LeasesGetter
	// Namespace holds the group's Leases.
	Namespace string
	// Group names the replicas that share the objects out, e.g. the
	// controller's name; a valid label value.
	Group string
	// Identity names this replica, unique in the group, e.g. its pod name.
	Identity string

	// LeaseDuration, RenewDeadline and RetryPeriod are membership's knobs
	// (see membership.Config), with the meaning they have in leader
	// election. They bound the promises of README.md.
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration

	// Objects names the sharded kinds by example, e.g. &corev1.Pod{}:
	// NewInformer shards the informers whose example object has the same
	// Go type. Informers of other kinds hold every object.
	Objects []runtime.Object

	// OnChange, if set, is called when the replica's range changes, as
	// membership.Config.OnChange is: index -1 means it claims none. For
	// logs and metrics; it must not block.
	OnChange func(selector string, index, count int)

	// Clock is the time source of the membership; nil means the real
	// clock.
	Clock clock.Clock
}

// Sharder is one replica's share of the sharded kinds: it builds their
// informers (NewInformer), moves them when the replica's range changes,
// and gates their reconcilers (Reconciler). Its membership runs once it
// is added to a manager (SetupWithManager) or Start is called.
type Sharder struct {
	member *membership.Member
	// kinds holds the Go types of the sharded kinds; read-only after New.
	kinds map[reflect.Type]bool
	// retryPeriod is membership's RetryPeriod with its default: how long
	// Reconciler holds a request back while the replica claims nothing.
	retryPeriod time.Duration
	onChange    func(selector string, index, count int)
	clock       clock.Clock
	// claimed is closed when the replica claims its first range; until
	// then the sharded informers' lists and watches wait.
	claimed     chan struct{}
	claimedOnce sync.Once

	// mu guards the fields below. It is never held while an informer,
	// a handler or a reconciler runs.
	mu sync.Mutex
	// selector is the range Reconciler admits: the newest one the
	// membership handed out, nil before the first.
	selector *kcache.ShardSelector
	// moved is the selector the informers were last moved to; it trails
	// selector while a move waits for reconciles, and stays behind if a
	// move fails.
	moved string
	// claiming says whether the replica holds a range now: the
	// membership says so and the informers were moved to it.
	claiming bool
	// lws are the ListerWatchers of every sharded informer built so far;
	// each is moved to each new range.
	lws []*kcache.ShardedListerWatcher
	// stores are the caches of the sharded informers, by kind.
	stores map[reflect.Type][]toolscache.Indexer
	// running are the reconciles of cached objects under way, numbered
	// by nextCall (see inflight.go).
	running  map[uint64]*runningCall
	nextCall uint64
}

// ErrInvalidOptions is wrapped by the errors New returns for Options it
// cannot accept.
var ErrInvalidOptions = errors.New("invalid sharding options")

// New validates opts and returns a Sharder whose membership does not run
// yet.
func New(opts Options) (*Sharder, error) {
	if len(opts.Objects) == 0 {
		return nil, fmt.Errorf("%w: Objects names no sharded kind", ErrInvalidOptions)
	}
	kinds := make(map[reflect.Type]bool, len(opts.Objects))
	for i, obj := range opts.Objects {
		if obj == nil {
			return nil, fmt.Errorf("%w: Objects[%d] is nil", ErrInvalidOptions, i)
		}
		kinds[reflect.TypeOf(obj)] = true
	}
	retry := opts.RetryPeriod
	if retry == 0 {
		retry = membership.DefaultRetryPeriod
	}
	s := &Sharder{
		kinds:       kinds,
		retryPeriod: retry,
		onChange:    opts.OnChange,
		claimed:     make(chan struct{}),
		stores:      map[reflect.Type][]toolscache.Indexer{},
		running:     map[uint64]*runningCall{},
		clock:       opts.Clock,
	}
	if s.clock == nil {
		s.clock = clock.RealClock{}
	}
	member, err := membership.New(membership.Config{
		Client:        opts.Client,
		Namespace:     opts.Namespace,
		Group:         opts.Group,
		Identity:      opts.Identity,
		LeaseDuration: opts.LeaseDuration,
		RenewDeadline: opts.RenewDeadline,
		RetryPeriod:   opts.RetryPeriod,
		Resharder:     membership.ResharderFunc(s.setShard),
		OnChange:      s.changed,
		Clock:         opts.Clock,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	s.member = member
	return s, nil
}

// Assignment returns the range the replica claims now (see
// membership.Member.Assignment).
func (s *Sharder) Assignment() membership.Assignment { return s.member.Assignment() }

// Claiming reports whether the replica holds a range now. While it does
// not, Reconciler holds every request back.
func (s *Sharder) Claiming() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.claiming
}

// Start runs the replica's membership until ctx is done, then releases its
// Lease so that the others take its range over at once. It returns early
// only for errors a retry cannot cure (see membership.Member.Run).
func (s *Sharder) Start(ctx context.Context) error {
	return s.member.Run(ctx)
}

// SetupWithManager adds the Sharder's membership to mgr, started with
// mgr's caches and stopped after its controllers, without leader election.
// The manager's caches sync once the replica claims its first range.
func (s *Sharder) SetupWithManager(mgr manager.Manager) error {
	return mgr.Add(&runnable{s: s, cache: mgr.GetCache()})
}

// runnable runs a Sharder in a manager. Its GetCache puts it in the
// manager's group of caches: it starts beside the cache whose sharded
// informers wait for its first range (a later group would wait for those
// informers to sync, and never start), and it stops after the controllers,
// so the replica leaves the group once it no longer reconciles.
type runnable struct {
	s     *Sharder
	cache cache.Cache
}

func (r *runnable) Start(ctx context.Context) error { return r.s.Start(ctx) }
func (r *runnable) GetCache() cache.Cache           { return r.cache }
func (r *runnable) NeedLeaderElection() bool        { return false }

var (
	_ manager.Runnable               = (*runnable)(nil)
	_ manager.LeaderElectionRunnable = (*runnable)(nil)
)

// setShard moves every sharded informer to selector; the membership calls
// it on its goroutine for each new range, before changed. It switches the
// range Reconciler admits at once, then waits for the reconciles of
// objects leaving the range (at most RetryPeriod; see inflight.go) before
// the informers relist.
func (s *Sharder) setShard(selector string) error {
	sel, err := kcache.ParseShardSelector(selector)
	if err != nil {
		return fmt.Errorf("sharding: the membership's range: %w", err)
	}
	s.mu.Lock()
	s.selector = sel
	leaving := s.leavingLocked(sel)
	lws := append([]*kcache.ShardedListerWatcher(nil), s.lws...)
	s.mu.Unlock()
	if !s.awaitLeaving(leaving) {
		klog.Background().Info("Moving the informers while reconciles of objects leaving this replica still run", "waited", s.retryPeriod, "selector", selector)
	}
	var errs []error
	for _, lw := range lws {
		if err := lw.SetShard(selector); err != nil {
			errs = append(errs, err)
		}
	}
	s.mu.Lock()
	if len(errs) > 0 {
		s.claiming = false
		s.mu.Unlock()
		return fmt.Errorf("sharding: moving the informers: %w", errors.Join(errs...))
	}
	s.moved, s.claiming = selector, true
	s.mu.Unlock()
	s.claimedOnce.Do(func() { close(s.claimed) })
	return nil
}

// changed records whether the replica claims a range and tells OnChange.
// It claims one only if its informers were moved to it: a range the
// informers refused is not claimed until a later round moves them.
func (s *Sharder) changed(selector string, index, count int) {
	s.mu.Lock()
	s.claiming = index >= 0 && s.moved == selector
	s.mu.Unlock()
	if s.onChange != nil {
		s.onChange(selector, index, count)
	}
}

// owns reports whether obj lies in the range the replica claims now.
func (s *Sharder) owns(obj runtime.Object) bool {
	s.mu.Lock()
	sel, claiming := s.selector, s.claiming
	s.mu.Unlock()
	if !claiming || sel == nil {
		return false
	}
	ok, err := sel.Matches(obj)
	return ok && err == nil
}
