package integration

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	kcache "github.com/kcache/cache"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgocache "k8s.io/client-go/tools/cache"
)

// informer is the part of a shared informer the harness drives; it hides
// whether kcache's or client-go's informer is behind it.
type informer interface {
	// addHandler registers h and returns a function reporting when h has
	// been told about the initial list.
	addHandler(h *recorder) (synced func() bool, err error)
	runWithContext(ctx context.Context)
	hasSynced() bool
	storeList() []any
}

type kcacheInformer struct{ kcache.SharedIndexInformer }

func (i kcacheInformer) addHandler(h *recorder) (func() bool, error) {
	reg, err := i.AddEventHandler(h)
	if err != nil {
		return nil, err
	}
	return reg.HasSynced, nil
}
func (i kcacheInformer) runWithContext(ctx context.Context) { i.RunWithContext(ctx) }
func (i kcacheInformer) hasSynced() bool                    { return i.HasSynced() }
func (i kcacheInformer) storeList() []any                   { return i.GetStore().List() }

type clientGoInformer struct {
	clientgocache.SharedIndexInformer
}

func (i clientGoInformer) addHandler(h *recorder) (func() bool, error) {
	reg, err := i.AddEventHandler(h)
	if err != nil {
		return nil, err
	}
	return reg.HasSynced, nil
}
func (i clientGoInformer) runWithContext(ctx context.Context) { i.RunWithContext(ctx) }
func (i clientGoInformer) hasSynced() bool                    { return i.HasSynced() }
func (i clientGoInformer) storeList() []any                   { return i.GetStore().List() }

// syncTimeout bounds waiting for an informer or handler to sync.
const syncTimeout = 2 * time.Minute

// started is a running informer with the recorders attached to it.
type started struct {
	name     string
	informer informer
	scope    []string
	// early handlers were registered before the informer started; they
	// must see every change.
	early []*recorder
	// late is registered by addLate while the informer runs.
	late *recorder
	done chan struct{}
}

// start registers nEarly recorders on inf, runs it until the test ends, and
// waits for it and the handlers to sync. Only the given namespaces are
// tracked by the recorders and compared (all when none are given).
func start(t *testing.T, name string, inf informer, nEarly int, scope ...string) *started {
	t.Helper()
	s := &started{name: name, informer: inf, scope: scope, done: make(chan struct{})}
	var synced []func() bool
	for i := range nEarly {
		r := newRecorder(fmt.Sprintf("%s handler %d", name, i+1), scope...)
		hs, err := inf.addHandler(r)
		if err != nil {
			t.Fatalf("%s: add handler: %v", name, err)
		}
		s.early = append(s.early, r)
		synced = append(synced, hs)
	}
	s.run(t, synced...)
	return s
}

// run runs the informer until the test ends and waits until it and every
// function in synced report that they synced.
func (s *started) run(t *testing.T, synced ...func() bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		defer close(s.done)
		s.informer.runWithContext(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-s.done:
		case <-time.After(time.Minute):
			t.Errorf("%s: informer did not stop within a minute of its context ending", s.name)
		}
	})
	waitSynced(t, s.name, append(synced, s.informer.hasSynced)...)
}

// waitSynced waits until every function reports true.
func waitSynced(t *testing.T, what string, synced ...func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, syncTimeout, true, func(context.Context) (bool, error) {
		for _, f := range synced {
			if !f() {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("%s: not synced after %s: %v", what, syncTimeout, err)
	}
}

// addLate registers one more recorder on the running informer and waits
// until it has been told about the objects already there.
func (s *started) addLate(t *testing.T) {
	t.Helper()
	s.late = newRecorder(s.name+" late handler", s.scope...)
	hs, err := s.informer.addHandler(s.late)
	if err != nil {
		t.Fatalf("%s: add late handler: %v", s.name, err)
	}
	waitSynced(t, s.name+" late handler", hs)
}

// recorders returns every recorder, early ones first.
func (s *started) recorders() []*recorder {
	if s.late == nil {
		return s.early
	}
	return append(append([]*recorder(nil), s.early...), s.late)
}

// store returns the informer's store as a snapshot limited to the scope.
func (s *started) store(t *testing.T) snapshot {
	t.Helper()
	in := namespaceFilter(s.scope)
	out := snapshot{}
	for _, obj := range s.informer.storeList() {
		d, err := describe(obj)
		if err != nil {
			t.Fatalf("%s: store item: %v", s.name, err)
		}
		if in(d.namespace) {
			out[d.key] = d.state
		}
	}
	return out
}

// convergeTimeout bounds how long informers may lag behind the server
// once the writes are done.
const convergeTimeout = 2 * time.Minute

// waitConverged waits until the store and every recorder of every informer
// equal want, then checks that no recorder found a problem. It fails the
// test with a diff of the first view that still differs.
func waitConverged(t *testing.T, want snapshot, informers ...*started) {
	t.Helper()
	var lastDiff string
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, convergeTimeout, true, func(context.Context) (bool, error) {
		for _, s := range informers {
			if d := cmp.Diff(want, s.store(t)); d != "" {
				lastDiff = fmt.Sprintf("%s store (-want from a fresh List, +got):\n%s", s.name, d)
				return false, nil
			}
			for _, r := range s.recorders() {
				if d := cmp.Diff(want, r.snapshot()); d != "" {
					lastDiff = fmt.Sprintf("%s view (-want from a fresh List, +got):\n%s", r.name, d)
					return false, nil
				}
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("informers did not converge on the server's state within %s: %s", convergeTimeout, truncate(lastDiff, 4000))
	}
	for _, s := range informers {
		for _, r := range s.recorders() {
			if _, problems := r.result(); len(problems) > 0 {
				t.Errorf("%s: ordering problems (up to %d shown):\n  %s", r.name, maxProblems, strings.Join(problems, "\n  "))
			}
		}
	}
}

// countEvents adds the events every recorder checked to the suite's tally.
func countEvents(informers ...*started) {
	for _, s := range informers {
		for _, r := range s.recorders() {
			counts, _ := r.result()
			tally.events.Add(int64(counts.total()))
		}
	}
}

// listSnapshot lists kind in each namespace (all when none given) and
// returns the result as a snapshot.
func listSnapshot(t *testing.T, kind kindClient, namespaces ...string) snapshot {
	t.Helper()
	return listSnapshotWith(t, kind, metav1.ListOptions{}, namespaces...)
}

// listSnapshotWith is listSnapshot with list options (selectors).
func listSnapshotWith(t *testing.T, kind kindClient, options metav1.ListOptions, namespaces ...string) snapshot {
	t.Helper()
	if len(namespaces) == 0 {
		namespaces = []string{""}
	}
	out := snapshot{}
	for _, ns := range namespaces {
		var items []metav1.Object
		err := retry(context.Background(), "list "+kind.resource(), func(ctx context.Context) error {
			var err error
			items, err = kind.list(ctx, ns, options)
			return err
		})
		if err != nil {
			t.Fatalf("fresh list: %v", err)
		}
		for _, obj := range items {
			out[objectKey(obj)] = stateOf(obj)
		}
	}
	return out
}

// checkComplete checks that every early recorder saw exactly the writes
// in the ledger: each object's versions in order, and its delete, preceded
// by one update marking it as terminating if deleteMarks is set (the API
// server deletes Pods that way).
func checkComplete(t *testing.T, l *ledger, deleteMarks bool, informers ...*started) {
	t.Helper()
	objects := l.all()
	sort.Slice(objects, func(i, j int) bool { return objects[i].key < objects[j].key })
	for _, s := range informers {
		for _, r := range s.early {
			missing := 0
			for _, w := range objects {
				h, ok := r.historyOf(w.uid)
				if !ok {
					h = history{}
				}
				want := history{key: w.key, rvs: w.rvs, deleted: w.deleted}
				if deleteMarks && w.deleted {
					want.terminating = 1
				}
				got := history{key: h.key, rvs: h.rvs, deleted: h.deleted, terminating: h.terminating}
				if d := cmp.Diff(want, got, cmp.AllowUnexported(history{})); d != "" {
					if missing < 5 {
						t.Errorf("%s: events for uid %s (-written, +seen):\n%s", r.name, w.uid, d)
					}
					missing++
				}
			}
			if missing > 0 {
				t.Errorf("%s: %d of %d objects were not seen exactly as written", r.name, missing, len(objects))
			}
		}
	}
}

// compareCounts checks that two recorders were told the same number of
// each kind of event.
func compareCounts(t *testing.T, a, b *recorder) {
	t.Helper()
	ca, _ := a.result()
	cb, _ := b.result()
	if d := cmp.Diff(ca, cb); d != "" {
		t.Errorf("event counts differ (-%s, +%s):\n%s", a.name, b.name, d)
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "\n... (truncated)"
}

// stopwatch logs how long the phases of a test take.
type stopwatch struct {
	t    *testing.T
	last time.Time
}

func newStopwatch(t *testing.T) *stopwatch { return &stopwatch{t: t, last: time.Now()} }

// lap logs the time since the previous lap under name.
func (s *stopwatch) lap(name string) {
	s.t.Helper()
	now := time.Now()
	s.t.Logf("%s: %s", name, now.Sub(s.last).Round(time.Millisecond))
	s.last = now
}
