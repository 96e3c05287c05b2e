package integration

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	kcache "github.com/kcache/cache"
	clientgocache "k8s.io/client-go/tools/cache"
)

// observedPair starts a kcache and a client-go informer for kind, each
// behind its own observedLW built from lw, with one handler each.
func observedPair(t *testing.T, kind kindClient, lw lwPair, scope ...string) (ours, theirs *started, ourLW, theirLW *observedLW) {
	t.Helper()
	ourLW = newObservedLW(lw.kcache.(contextListerWatcher))
	theirLW = newObservedLW(lw.clientGo.(contextListerWatcher))
	ours = start(t, "kcache", kcacheInformer{kcache.NewSharedIndexInformer(ourLW, kind.example(), 0, kcache.Indexers{})}, 1, scope...)
	theirs = start(t, "client-go", clientGoInformer{clientgocache.NewSharedIndexInformer(theirLW, kind.example(), 0, clientgocache.Indexers{})}, 1, scope...)
	return ours, theirs, ourLW, theirLW
}

// describeObservation summarises what an observedLW saw, for logs.
func describeObservation(ob observation) string {
	return fmt.Sprintf("%d full lists (%d List calls, %d streaming watches), %d watches, %d answers 410 Gone",
		ob.fullLists(), len(ob.lists), len(ob.streams()), len(ob.watches), ob.expired)
}

// TestRestartMidChurn restarts the API server (same etcd) while writers
// run. The informers' watches are cut; they must resume from their last
// resource version and relist only when the server says that version is
// gone (410). Without a watch cache the version stays valid, so there must
// be no relist at all and every write must still be seen.
func TestRestartMidChurn(t *testing.T) {
	s := needServer(t)
	control := s.needControl(t)
	ctx := context.Background()
	kind := configMapClient{client: s.client}
	namespaces := s.namespaces(t, "restart", 2)
	plan := churnPlan{preexisting: 100, burst: 200, shortLived: 100, updates: 3, deletePercent: 50, parallel: 8, writers: 4}
	c := newChurn(plan, kind, namespaces)
	if err := c.prepopulate(ctx); err != nil {
		t.Fatalf("prepopulate: %v", err)
	}
	ours, theirs, ourLW, theirLW := observedPair(t, kind, funcsListWatch(kind), namespaces...)

	// The restart runs next to the writers; restarted is set once it began.
	type restart struct {
		took time.Duration
		err  error
	}
	var restarted chan restart
	err := c.run(ctx, func() {
		restarted = make(chan restart, 1)
		go func() {
			began := time.Now()
			err := control.restartAPIServer(ctx)
			restarted <- restart{took: time.Since(began), err: err}
		}()
	})
	if restarted != nil {
		r := <-restarted
		if r.err != nil {
			t.Fatalf("restart: %v", r.err)
		}
		t.Logf("API server restarted in %s while the writers ran", r.took.Round(time.Millisecond))
	}
	if err != nil {
		t.Fatalf("workload: %v", err)
	}
	c.account()
	waitConverged(t, listSnapshot(t, kind, namespaces...), ours, theirs)
	countEvents(ours, theirs)

	ob, theirOb := ourLW.observe(), theirLW.observe()
	t.Logf("kcache: %s", describeObservation(ob))
	t.Logf("client-go: %s", describeObservation(theirOb))
	if len(ob.watches) < 2 {
		t.Errorf("kcache opened %d watches, want a second one after the restart", len(ob.watches))
	}
	if got, want := ob.fullLists(), 1+ob.expired; got != want {
		t.Errorf("kcache listed %d times with %d 410 answers: want one list at start plus one per 410", got, ob.expired)
	}
	if ob.expired == 0 {
		checkResumed(t, ob)
		checkComplete(t, c.w.ledger, kind.deleteMarks(), ours, theirs)
		compareCounts(t, ours.early[0], theirs.early[0])
	}
	if !s.watchCache && ob.expired != 0 {
		t.Errorf("without a watch cache the resource version stays valid across a restart, yet kcache saw %d 410 answers", ob.expired)
	}
	tally.scenarios.Add(1)
}

// checkResumed checks that every watch after the first resumed from a
// resource version the informer had seen, without listing again.
func checkResumed(t *testing.T, ob observation) {
	t.Helper()
	for i, w := range ob.watches[1:] {
		if w.ResourceVersion == "" || w.ResourceVersion == "0" || (w.SendInitialEvents != nil && *w.SendInitialEvents) {
			t.Errorf("watch %d did not resume from a known resource version: %+v", i+2, w)
		}
	}
}

// TestMissedDeletesBecomeTombstones cuts the informers off the server
// (their ListerWatchers close the watches and hold new ones back), deletes,
// updates and creates objects meanwhile, then compacts etcd past the
// informers' resource version (and, with a watch cache, restarts the API
// server so that the cache no longer holds it either). On reconnecting,
// the watch gets 410 Gone, the informers relist, and each deletion they
// missed must reach the handlers as OnDelete with a DeletedFinalStateUnknown
// holding the last state they saw. kcache and client-go must agree.
func TestMissedDeletesBecomeTombstones(t *testing.T) {
	s := needServer(t)
	control := s.needControl(t)
	ctx := context.Background()
	kind := configMapClient{client: s.client}
	ns := s.namespaces(t, "gone", 1)[0]
	c := newChurn(churnPlan{preexisting: 60, parallel: 8}, kind, []string{ns})
	if err := c.prepopulate(ctx); err != nil {
		t.Fatalf("prepopulate: %v", err)
	}
	lw := restClientListWatch(s, "configmaps")
	ours, theirs, ourLW, theirLW := observedPair(t, kind, lw, ns)

	// One event on the open watches first: a reflector relists when a
	// watch that delivered nothing ends within a second, and this test
	// wants the relist to come from the 410 instead.
	obj, err := c.w.update(ctx, c.live[59], noChange)
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	c.live[59] = obj
	waitConverged(t, listSnapshot(t, kind, ns), ours, theirs)

	ourLW.pause()
	theirLW.pause()
	var deleted []string
	for i := range 20 {
		if err := c.w.delete(ctx, c.live[i]); err != nil {
			t.Fatalf("delete: %v", err)
		}
		deleted = append(deleted, objectKey(c.live[i]))
	}
	for i := 20; i < 40; i++ {
		for range 2 {
			if c.live[i], err = c.w.update(ctx, c.live[i], noChange); err != nil {
				t.Fatalf("update: %v", err)
			}
		}
	}
	for i := range 10 {
		if _, err := c.w.create(ctx, c.newObject("late", i)); err != nil {
			t.Fatalf("create: %v", err)
		}
	}
	sort.Strings(deleted)
	rev, err := control.compact(ctx)
	if err != nil {
		t.Fatalf("compact: %v", err)
	}
	t.Logf("compacted etcd at revision %d", rev)
	if s.watchCache {
		if err := control.restartAPIServer(ctx); err != nil {
			t.Fatalf("restart: %v", err)
		}
	}
	ourLW.resume()
	theirLW.resume()
	c.account()

	waitConverged(t, listSnapshot(t, kind, ns), ours, theirs)
	countEvents(ours, theirs)
	for _, pair := range []struct {
		r  *recorder
		lw *observedLW
	}{{ours.early[0], ourLW}, {theirs.early[0], theirLW}} {
		ob := pair.lw.observe()
		t.Logf("%s: %s", pair.r.name, describeObservation(ob))
		if ob.expired == 0 {
			t.Errorf("%s: no 410 Gone answer after the compaction", pair.r.name)
		}
		if got := ob.fullLists(); got != 2 {
			t.Errorf("%s: listed %d times, want 2 (at start, after the 410)", pair.r.name, got)
		}
		if d := cmp.Diff(deleted, tombstones(pair.r)); d != "" {
			t.Errorf("%s: objects deleted through tombstones (-deleted while cut off, +tombstones):\n%s", pair.r.name, d)
		}
	}
	got, _ := ours.early[0].result()
	want := eventCounts{Adds: 70, InitialAdds: 60, Updates: 1 + 40, Resyncs: 20, Deletes: 20, Tombstones: 20}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("kcache handler: event counts (-want, +got):\n%s", d)
	}
	compareCounts(t, ours.early[0], theirs.early[0])
	tally.scenarios.Add(1)
}

// tombstones returns the sorted keys of the objects r saw deleted through
// a DeletedFinalStateUnknown.
func tombstones(r *recorder) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, h := range r.histories {
		if h.tombstoned {
			out = append(out, h.key)
		}
	}
	sort.Strings(out)
	return out
}
