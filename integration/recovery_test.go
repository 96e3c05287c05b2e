package integration

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	kcache "github.com/kcache/cache"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	clientgocache "k8s.io/client-go/tools/cache"
)

// A recovery run puts kcache and client-go side by side in this process
// while writers patch Pods, and disrupts the server as a rollout would: the
// API server restarts (its watch cache starts empty, so every watch resumed
// from before gets 410), etcd compacts, and once the API server stays down
// for a while. After each disruption a probe write measures how long each
// library takes to deliver it; after the churn, how long each takes to
// deliver every Pod's last write.
//
// Two pairs run. The informers (kcache's and client-go's shared informers,
// as a controller builds them) back off with client-go's default jittered
// backoff, so two equal implementations can come back seconds apart by the
// dice alone (at the third backoff step, delays are drawn from [3.2s,6.4s)):
// their catch-up times are reported, and their handlers' Pod states
// compared (see compareStates). The reflectors (each library's Reflector on
// a Store) are built with the same backoff without jitter, so that a
// difference in their catch-up times can only come from a different
// decision: kcache's reflector must be within a second of client-go's after
// every disruption. Both pairs must be within a second after the churn.

// disruption is one thing done to the server at a time into the churn.
type disruption struct {
	at time.Duration
	// down is how long the API server stays stopped; zero restarts it at
	// once.
	down time.Duration
}

// recoveryPlan is the schedule of a run.
type recoveryPlan struct {
	pods         int
	writers      int
	churnFor     time.Duration
	compactEvery time.Duration
	disruptions  []disruption
}

// upFor is how long the API server is up during the churn: writes land
// only then, so the rate at which a late informer misses states is the
// number written over this time, not over the whole churn.
func (p recoveryPlan) upFor() time.Duration {
	up := p.churnFor
	for _, d := range p.disruptions {
		up -= d.down
	}
	return max(up, time.Second)
}

// shortRecovery is the run of make test: two restarts and one stop of 8 s
// in a minute of churn. The last disruption comes 20 s before the end, so
// that a third backoff step (up to 6.4 s) is over when the churn ends.
var shortRecovery = recoveryPlan{
	pods: 120, writers: 6, churnFor: time.Minute, compactEvery: 10 * time.Second,
	disruptions: []disruption{{at: 8 * time.Second}, {at: 22 * time.Second, down: 8 * time.Second}, {at: 40 * time.Second}},
}

// recoveryPlanFromEnv is shortRecovery, or with KCACHE_RECOVERY_MINUTES=N
// (2 or more) a run of N minutes of churn with a restart every 15 s and an
// 8 s stop every fourth time, the last 70 s before the end (the backoff may
// be at its longest, up to 60 s, by then).
func recoveryPlanFromEnv(t *testing.T) recoveryPlan {
	raw := os.Getenv("KCACHE_RECOVERY_MINUTES")
	if raw == "" {
		return shortRecovery
	}
	minutes, err := strconv.Atoi(raw)
	if err != nil || minutes < 2 {
		t.Fatalf("KCACHE_RECOVERY_MINUTES=%q: want a whole number of minutes, at least 2", raw)
	}
	p := recoveryPlan{pods: 300, writers: 8, churnFor: time.Duration(minutes) * time.Minute, compactEvery: 10 * time.Second}
	for i, at := 0, 10*time.Second; at <= p.churnFor-70*time.Second; i, at = i+1, at+15*time.Second {
		d := disruption{at: at}
		if i%4 == 3 {
			d.down = 8 * time.Second
		}
		p.disruptions = append(p.disruptions, d)
	}
	return p
}

// unjitteredBackoff is client-go's default backoff without its jitter.
var unjitteredBackoff = wait.Backoff{Duration: 800 * time.Millisecond, Factor: 2, Cap: 30 * time.Second, Steps: 38}

// The four libraries' consumers of a recovery run, in table order.
const (
	cgInformer = iota
	kcInformer
	cgReflector
	kcReflector
	consumers
)

var consumerNames = [consumers]string{"client-go informer", "kcache informer", "client-go reflector", "kcache reflector"}

func TestRecoveryAfterAPIServerRestarts(t *testing.T) {
	s := needServer(t)
	control := s.needControl(t)
	plan := recoveryPlanFromEnv(t)
	ctx := context.Background()
	ns := s.namespaces(t, "recovery", 1)[0]
	pods := podClient{client: s.client}
	truth := newWriteLedger()
	names := make([]string, plan.pods)
	for i := range names {
		names[i] = fmt.Sprintf("pod-%04d", i)
	}
	for _, name := range append([]string{probeName}, names...) {
		created, err := pods.create(ctx, pods.newObject(ns, name))
		if err != nil {
			t.Fatalf("create pod: %v", err)
		}
		truth.note(ns+"/"+name, created.GetResourceVersion())
	}

	var targets [consumers]catchUpTarget
	ours, theirs := newDeliveryLog("kcache", ns), newDeliveryLog("client-go", ns)
	targets[kcInformer], targets[cgInformer] = ours, theirs
	ourRun, theirRun := startInformerPair(t, s, ns, ours, theirs)
	var ourStored, theirStored *deliveryLog
	targets[kcReflector], targets[cgReflector], ourStored, theirStored = startReflectorPair(t, s, ns)

	w := &podWriter{client: s.client, namespace: ns, ledger: truth}
	churnCtx, stopChurn := context.WithCancel(ctx)
	var writers sync.WaitGroup
	for i := range plan.writers {
		mine := names[i*len(names)/plan.writers : (i+1)*len(names)/plan.writers]
		writers.Go(func() { w.run(churnCtx, mine) })
	}
	compactions := make(chan int, 1)
	writers.Go(func() { compactions <- compactEvery(churnCtx, control, plan.compactEvery) })

	began := time.Now()
	var rows []recoveryRow
	for i, d := range plan.disruptions {
		time.Sleep(time.Until(began.Add(d.at)))
		ready, err := disrupt(ctx, control, d)
		if err != nil {
			stopChurn()
			writers.Wait()
			t.Fatalf("disruption %d: %v", i+1, err)
		}
		rows = append(rows, w.probe(t, ctx, fmt.Sprintf("%d %s at %v", i+1, d.kind(), d.at), ready, targets))
	}
	time.Sleep(time.Until(began.Add(plan.churnFor)))
	stopChurn()
	writers.Wait()
	churnEnded := time.Now()
	after := recoveryRow{what: "after the churn"}
	final := truth.last()
	for i, tg := range targets {
		after.took[i] = waitCaughtUp(tg, final, churnEnded)
	}
	states := compareStates(truth, ours, theirs)
	stored := compareStates(truth, ourStored, theirStored)
	writeRate := float64(w.written.Load()) / plan.upFor().Seconds()

	t.Logf("recovery run: %d pods, %d writers, %v of churn, %d writes (%d failed while the server was away), %d compactions, %d disruptions",
		plan.pods, plan.writers, plan.churnFor, w.written.Load(), w.failed.Load(), <-compactions, len(plan.disruptions))
	logRecoveryTable(t, append(rows, after))
	t.Logf("informers' handlers: %s", states)
	t.Logf("reflectors' stores:  %s", stored)
	t.Logf("RECOVERY-SUMMARY disruptions=%d reflectors-worst-gap=%v informers-worst-gap=%v informers-mean-gap=%v after-churn-gap=%v/%v states-written=%d handlers-client-go=%d handlers-kcache=%d stores-client-go=%d stores-kcache=%d",
		len(rows), worstGap(rows, cgReflector, kcReflector), worstGap(rows, cgInformer, kcInformer), meanGap(rows, cgInformer, kcInformer),
		after.gap(cgInformer, kcInformer), after.gap(cgReflector, kcReflector), states.written, states.theirs, states.ours, stored.theirs, stored.ours)

	for _, r := range rows {
		if g := r.gap(cgReflector, kcReflector); g > recoveryTolerance {
			t.Errorf("after %s kcache's reflector had the probe %v after client-go's: more than %v behind", r.what, g, recoveryTolerance)
		}
	}
	for _, pair := range [][2]int{{cgInformer, kcInformer}, {cgReflector, kcReflector}} {
		if g := after.gap(pair[0], pair[1]); g > recoveryTolerance {
			t.Errorf("after the churn %s caught up %v after %s: more than %v behind", consumerNames[pair[1]], g, consumerNames[pair[0]], recoveryTolerance)
		}
	}
	if allowed := max(20, stored.theirs/100); stored.oursOnlyMissed > stored.theirsOnlyMissed+allowed {
		t.Errorf("kcache's reflector stored %d written states client-go's did not, client-go's %d that kcache's did not: more than %d apart", stored.theirsOnlyMissed, stored.oursOnlyMissed, allowed)
	}
	if allowed := jitterAllowance(rows, writeRate); states.oursOnlyMissed > states.theirsOnlyMissed+allowed {
		t.Errorf("kcache's handler missed %d written states client-go's was given (client-go's missed %d kcache's was given): more than the %d written while kcache's informer, by its backoff draw, was still catching up", states.oursOnlyMissed, states.theirsOnlyMissed, allowed)
	}
	for _, l := range []*deliveryLog{ours, theirs, ourStored, theirStored} {
		if p := l.problems(); len(p) > 0 {
			t.Errorf("%s delivered impossible sequences:\n%s", l.name, strings.Join(p, "\n"))
		}
	}
	waitConverged(t, listSnapshot(t, pods, ns), ourRun, theirRun)
	for _, r := range append(ourRun.recorders(), theirRun.recorders()...) {
		r.mu.Lock()
		problems := slices.Clone(r.problems)
		r.mu.Unlock()
		if len(problems) > 0 {
			t.Errorf("%s: %s", r.name, strings.Join(problems, "; "))
		}
	}
}

// startInformerPair runs a kcache and a client-go Pod informer on ns, each
// with a deliveryLog and a recorder, until the test ends.
func startInformerPair(t *testing.T, s *server, ns string, ours, theirs *deliveryLog) (ourRun, theirRun *started) {
	t.Helper()
	rc := s.client.CoreV1().RESTClient()
	ourInformer := kcache.NewSharedIndexInformer(kcache.NewListWatchFromClient(rc, "pods", ns, fields.Everything()), &corev1.Pod{}, 0, kcache.Indexers{})
	theirInformer := clientgocache.NewSharedIndexInformer(clientgocache.NewListWatchFromClient(rc, "pods", ns, fields.Everything()), &corev1.Pod{}, 0, clientgocache.Indexers{})
	if _, err := ourInformer.AddEventHandler(ours); err != nil {
		t.Fatal(err)
	}
	if _, err := theirInformer.AddEventHandler(theirs); err != nil {
		t.Fatal(err)
	}
	return start(t, "kcache", kcacheInformer{ourInformer}, 1, ns), start(t, "client-go", clientGoInformer{theirInformer}, 1, ns)
}

// startReflectorPair runs a kcache and a client-go Reflector on ns, each
// into a Store of its library with unjitteredBackoff, until the test ends.
// Each store records the states its reflector wrote into it.
func startReflectorPair(t *testing.T, s *server, ns string) (ours, theirs catchUpTarget, ourLog, theirLog *deliveryLog) {
	t.Helper()
	rc := s.client.CoreV1().RESTClient()
	backoff := unjitteredBackoff
	ourStore := kcache.NewStore(kcache.MetaNamespaceKeyFunc)
	theirStore := clientgocache.NewStore(clientgocache.MetaNamespaceKeyFunc)
	ourLog, theirLog = newDeliveryLog("kcache reflector", ns), newDeliveryLog("client-go reflector", ns)
	ourReflector := kcache.NewReflectorWithOptions(kcache.NewListWatchFromClient(rc, "pods", ns, fields.Everything()), &corev1.Pod{},
		kcacheRecordingStore{Store: ourStore, log: ourLog}, kcache.ReflectorOptions{Name: "kcache-recovery", Backoff: &backoff})
	theirReflector := clientgocache.NewReflectorWithOptions(clientgocache.NewListWatchFromClient(rc, "pods", ns, fields.Everything()), &corev1.Pod{},
		clientGoRecordingStore{Store: theirStore, log: theirLog}, clientgocache.ReflectorOptions{Name: "client-go-recovery", Backoff: &backoff})
	ctx, cancel := context.WithCancel(context.Background())
	var running sync.WaitGroup
	running.Go(func() { ourReflector.RunWithContext(ctx) })
	running.Go(func() { theirReflector.RunWithContext(ctx) })
	t.Cleanup(func() {
		cancel()
		running.Wait()
	})
	ours, theirs = storeTarget{get: ourStore.GetByKey}, storeTarget{get: theirStore.GetByKey}
	waitSynced(t, "reflectors",
		func() bool { return ourReflector.LastSyncResourceVersion() != "" },
		func() bool { return theirReflector.LastSyncResourceVersion() != "" })
	return ours, theirs, ourLog, theirLog
}

// kcacheRecordingStore is a kcache Store that notes each state a reflector
// writes into it, by an event or a list.
type kcacheRecordingStore struct {
	kcache.Store
	log *deliveryLog
}

func (s kcacheRecordingStore) Add(obj any) error    { s.log.note(obj); return s.Store.Add(obj) }
func (s kcacheRecordingStore) Update(obj any) error { s.log.note(obj); return s.Store.Update(obj) }
func (s kcacheRecordingStore) Replace(list []any, rv string) error {
	s.log.noteAll(list)
	return s.Store.Replace(list, rv)
}

// clientGoRecordingStore is kcacheRecordingStore for a client-go Store.
type clientGoRecordingStore struct {
	clientgocache.Store
	log *deliveryLog
}

func (s clientGoRecordingStore) Add(obj any) error    { s.log.note(obj); return s.Store.Add(obj) }
func (s clientGoRecordingStore) Update(obj any) error { s.log.note(obj); return s.Store.Update(obj) }
func (s clientGoRecordingStore) Replace(list []any, rv string) error {
	s.log.noteAll(list)
	return s.Store.Replace(list, rv)
}

// recoveryTolerance is how far behind client-go kcache may deliver.
const recoveryTolerance = time.Second

func (d disruption) kind() string {
	if d.down > 0 {
		return fmt.Sprintf("stop %v", d.down)
	}
	return "restart"
}

// disrupt does d and returns when the API server was ready again.
func disrupt(ctx context.Context, control *controlClient, d disruption) (time.Time, error) {
	if d.down == 0 {
		if err := control.restartAPIServer(ctx); err != nil {
			return time.Time{}, err
		}
		return time.Now(), nil
	}
	if err := control.post(ctx, "/stop-apiserver", nil); err != nil {
		return time.Time{}, err
	}
	time.Sleep(d.down)
	if err := control.post(ctx, "/start-apiserver", nil); err != nil {
		return time.Time{}, err
	}
	return time.Now(), nil
}

// compactEvery compacts etcd every period until ctx ends and returns how
// many compactions succeeded.
func compactEvery(ctx context.Context, control *controlClient, period time.Duration) int {
	n := 0
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return n
		case <-t.C:
		}
		if _, err := control.compact(ctx); err == nil {
			n++
		}
	}
}

// recoveryRow is one disruption's figures: for each consumer, how long
// after the server was ready again it had a write made at that moment.
type recoveryRow struct {
	what string
	took [consumers]time.Duration
}

// gap is how much later b caught up than a.
func (r recoveryRow) gap(a, b int) time.Duration {
	return (r.took[b] - r.took[a]).Round(time.Millisecond)
}

func worstGap(rows []recoveryRow, a, b int) time.Duration {
	var worst time.Duration
	for _, r := range rows {
		worst = max(worst, r.gap(a, b))
	}
	return worst
}

func meanGap(rows []recoveryRow, a, b int) time.Duration {
	if len(rows) == 0 {
		return 0
	}
	var sum time.Duration
	for _, r := range rows {
		sum += r.gap(a, b)
	}
	return (sum / time.Duration(len(rows))).Round(time.Millisecond)
}

// logRecoveryTable logs the rows as a table, with each pair's gap.
func logRecoveryTable(t *testing.T, rows []recoveryRow) {
	t.Helper()
	t.Logf("%-22s | %18s %18s %10s | %19s %18s %10s", "", consumerNames[cgInformer], consumerNames[kcInformer], "gap", consumerNames[cgReflector], consumerNames[kcReflector], "gap")
	for _, r := range rows {
		t.Logf("%-22s | %18v %18v %10v | %19v %18v %10v", r.what,
			r.took[cgInformer].Round(time.Millisecond), r.took[kcInformer].Round(time.Millisecond), r.gap(cgInformer, kcInformer),
			r.took[cgReflector].Round(time.Millisecond), r.took[kcReflector].Round(time.Millisecond), r.gap(cgReflector, kcReflector))
	}
}

// podWriter patches a label of Pods in turn, recording each state it wrote.
type podWriter struct {
	client    kubernetes.Interface
	namespace string
	ledger    *writeLedger
	written   atomic.Int64
	failed    atomic.Int64
	// probes counts the probe's writes.
	probes atomic.Int64
}

// probeName names the Pod only probes write.
const probeName = "probe"

// patch sets label n on pod name and records the state written.
func (w *podWriter) patch(ctx context.Context, name string, n int) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	body := fmt.Sprintf(`{"metadata":{"labels":{"round":"%d"}}}`, n)
	p, err := w.client.CoreV1().Pods(w.namespace).Patch(ctx, name, types.MergePatchType, []byte(body), metav1.PatchOptions{})
	if err != nil {
		w.failed.Add(1)
		return "", err
	}
	w.written.Add(1)
	w.ledger.note(w.namespace+"/"+name, p.ResourceVersion)
	return p.ResourceVersion, nil
}

// run patches names in turn until ctx ends. Each Pod has one writer, so
// its states are recorded in the order they were written.
func (w *podWriter) run(ctx context.Context, names []string) {
	for n := 0; ctx.Err() == nil; n++ {
		for _, name := range names {
			if ctx.Err() != nil {
				return
			}
			if _, err := w.patch(ctx, name, n); err != nil {
				time.Sleep(50 * time.Millisecond)
			}
		}
	}
}

// probe writes the probe Pod once the server is back (ready) and measures
// when each consumer has the write.
func (w *podWriter) probe(t *testing.T, ctx context.Context, what string, ready time.Time, targets [consumers]catchUpTarget) recoveryRow {
	t.Helper()
	rv, err := w.patch(ctx, probeName, int(w.probes.Add(1)))
	if err != nil {
		t.Fatalf("probe after %s: %v", what, err)
	}
	want := map[string]uint64{w.namespace + "/" + probeName: mustRV(t, rv)}
	row := recoveryRow{what: what}
	for i, tg := range targets {
		row.took[i] = waitCaughtUp(tg, want, ready)
	}
	return row
}

func mustRV(t *testing.T, rv string) uint64 {
	t.Helper()
	n, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		t.Fatalf("resource version %q: %v", rv, err)
	}
	return n
}

// writeLedger records every state written to each Pod, in order.
type writeLedger struct {
	// mu guards states.
	mu     sync.Mutex
	states map[string][]uint64
}

func newWriteLedger() *writeLedger { return &writeLedger{states: map[string][]uint64{}} }

func (l *writeLedger) note(key, rv string) {
	n, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.states[key] = append(l.states[key], n)
}

// last returns each Pod's newest written state.
func (l *writeLedger) last() map[string]uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]uint64, len(l.states))
	for k, s := range l.states {
		out[k] = slices.Max(s)
	}
	return out
}

// delivered is one state a handler was given, and when.
type delivered struct {
	rv uint64
	at time.Time
}

// deliveryLog is a handler that records, per Pod, every state delivered to
// it and when, and notes sequences that go back in time.
type deliveryLog struct {
	name      string
	namespace string
	// mu guards byKey and bad.
	mu    sync.Mutex
	byKey map[string][]delivered
	bad   []string
}

func newDeliveryLog(name, namespace string) *deliveryLog {
	return &deliveryLog{name: name, namespace: namespace, byKey: map[string][]delivered{}}
}

func (l *deliveryLog) OnAdd(obj any, _ bool) { l.note(obj) }
func (l *deliveryLog) OnUpdate(_, obj any)   { l.note(obj) }
func (l *deliveryLog) OnDelete(obj any)      {}
func (l *deliveryLog) note(obj any) {
	d, err := describe(obj)
	if err != nil || d.namespace != l.namespace {
		return
	}
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	seen := l.byKey[d.key]
	if n := len(seen); n > 0 && seen[n-1].rv > d.state.RV && len(l.bad) < maxProblems {
		l.bad = append(l.bad, fmt.Sprintf("%s: state %d delivered after %d", d.key, d.state.RV, seen[n-1].rv))
	}
	l.byKey[d.key] = append(seen, delivered{rv: d.state.RV, at: now})
}

// noteAll notes every object of a list.
func (l *deliveryLog) noteAll(list []any) {
	for _, obj := range list {
		l.note(obj)
	}
}

func (l *deliveryLog) problems() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.bad)
}

// states returns the distinct states delivered for key.
func (l *deliveryLog) states(key string) map[uint64]bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[uint64]bool{}
	for _, d := range l.byKey[key] {
		out[d.rv] = true
	}
	return out
}

// catchUpTarget is a consumer whose progress a recovery run measures.
type catchUpTarget interface {
	// reached reports whether every key of want has reached at least the
	// state want gives it, and when the last of them did.
	reached(want map[string]uint64) (time.Time, bool)
}

// waitCaughtUp returns how long after since tg reached want; it gives up
// two minutes from now and returns the time waited.
func waitCaughtUp(tg catchUpTarget, want map[string]uint64, since time.Time) time.Duration {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if at, ok := tg.reached(want); ok {
			return at.Sub(since)
		}
		if time.Now().After(deadline) {
			return time.Since(since)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// reached is catchUpTarget's, with the time the handler was given the last
// state needed.
func (l *deliveryLog) reached(want map[string]uint64) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var last time.Time
	for key, rv := range want {
		i := slices.IndexFunc(l.byKey[key], func(d delivered) bool { return d.rv >= rv })
		if i < 0 {
			return time.Time{}, false
		}
		if at := l.byKey[key][i].at; at.After(last) {
			last = at
		}
	}
	return last, true
}

// storeTarget is a reflector's Store, polled: reached's time is when the
// poll found every key there.
type storeTarget struct {
	get func(key string) (any, bool, error)
}

func (s storeTarget) reached(want map[string]uint64) (time.Time, bool) {
	for key, rv := range want {
		obj, ok, err := s.get(key)
		if err != nil || !ok {
			return time.Time{}, false
		}
		d, err := describe(obj)
		if err != nil || d.state.RV < rv {
			return time.Time{}, false
		}
	}
	return time.Now(), true
}

// stateComparison counts written states each informer delivered.
type stateComparison struct {
	written, ours, theirs            int
	oursOnlyMissed, theirsOnlyMissed int
}

func (c stateComparison) String() string {
	return fmt.Sprintf("states written %d; had: client-go %d, kcache %d (kcache/client-go %.1f%%); missed by kcache only %d, by client-go only %d",
		c.written, c.theirs, c.ours, 100*float64(c.ours)/float64(max(c.theirs, 1)), c.oursOnlyMissed, c.theirsOnlyMissed)
}

// jitterAllowance bounds the states kcache's informer may miss beyond
// client-go's: those written, at the run's write rate, during the time by
// which kcache's informer came back later than client-go's after each
// disruption (with half as much again for the rate's unevenness), plus 20.
func jitterAllowance(rows []recoveryRow, writeRate float64) int {
	var late time.Duration
	for _, r := range rows {
		late += max(0, r.gap(cgInformer, kcInformer))
	}
	return 20 + int(1.5*late.Seconds()*writeRate)
}

// compareStates compares, per Pod, the written states each handler was
// given. An informer that relists sees only the state at the list, so
// both skip states; the question is whether kcache skips more than
// client-go: the counts of states only one of them missed say it.
func compareStates(truth *writeLedger, ours, theirs *deliveryLog) stateComparison {
	truth.mu.Lock()
	written := make(map[string][]uint64, len(truth.states))
	for k, s := range truth.states {
		written[k] = slices.Clone(s)
	}
	truth.mu.Unlock()
	var c stateComparison
	for key, states := range written {
		o, th := ours.states(key), theirs.states(key)
		for _, rv := range states {
			c.written++
			if o[rv] {
				c.ours++
			}
			if th[rv] {
				c.theirs++
			}
			if th[rv] && !o[rv] {
				c.oursOnlyMissed++
			}
			if o[rv] && !th[rv] {
				c.theirsOnlyMissed++
			}
		}
	}
	return c
}
