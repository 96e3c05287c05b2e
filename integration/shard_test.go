package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	kcache "github.com/kcache/cache"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// shardReplicas is the number of replicas TestShardedReplicas splits the
// pods over.
const shardReplicas = 3

// shardTolerance is how far a replica's share may stray from 1/3: the
// hash of random UIDs spreads them evenly, not exactly.
const shardTolerance = 0.05

// replica is one informer of TestShardedReplicas with its own client, and
// what was measured of it.
type replica struct {
	name string
	// sharded is the informer's ListerWatcher, nil for the unsharded one.
	sharded  *kcache.ShardedListerWatcher
	selector *kcache.ShardSelector
	counting *countingLW
	bytes    *byteCounter
	// heap is the growth of the live heap while the informer started and
	// synced.
	heap     int64
	informer *started
}

// startReplica starts a pod informer over a clientset of its own,
// restricted to selector unless it is empty, with one handler registered
// before it starts, and waits for it to sync. listOnly makes its
// Reflector list and watch instead of asking for a streaming list.
func (s *server) startReplica(t *testing.T, name, selector string, listOnly bool, namespaces []string) *replica {
	t.Helper()
	client, bytes := s.countedClient(t)
	list, watch := podClient{client: client}.listWatch("")
	r := &replica{name: name, counting: &countingLW{list: list, watch: watch, listOnly: listOnly}, bytes: bytes}
	var lw kcache.ListerWatcher = r.counting
	if selector != "" {
		sharded, err := kcache.NewShardedListerWatcher(r.counting, selector)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if r.selector, err = kcache.ParseShardSelector(selector); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		r.sharded, lw = sharded, sharded
	}
	before := heapAfterGC()
	r.informer = start(t, name, kcacheInformer{kcache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, kcache.Indexers{})}, 1, namespaces...)
	r.heap = int64(heapAfterGC()) - int64(before)
	return r
}

// TestShardedReplicas splits pods over three replicas, each an informer
// on its own client restricted to EvenShardSelector(i, 3), next to one
// unsharded informer. Replica 0 lists and then watches; the others (and
// the unsharded informer) use streaming lists. After the pods are created
// (KCACHE_SHARD_PODS, 10,000 by default) the informers start, the pods
// churn (creates, updates, short-lived pods, deletes), and once everything
// settled:
//   - each replica holds exactly the pods of its range, per a fresh List
//     hashed on the client; the three are pairwise disjoint and their union
//     is the fresh List; each holds 1/3 ± 5% of it;
//   - every replica's mode is server when kas runs with the
//     ShardedListAndWatch gate, client without it;
//   - every pod written was seen by exactly one replica's handler, which
//     saw each of its versions and its delete, in order; the unsharded
//     informer's handler saw every pod so;
//   - with the gate on, a paginated List with each replica's selector
//     returns exactly its pods and echoes the selector.
//
// The pods are written with a protobuf client; the informers read JSON,
// client-go's default.
//
// It logs what each informer received and kept: bytes, objects decoded,
// handler calls, heap growth.
func TestShardedReplicas(t *testing.T) {
	s := needServer(t)
	pods := shardPodCount(t)
	ctx := context.Background()
	phase := newStopwatch(t)
	namespaces, kind := s.podNamespaces(t, "shard")
	work := newShardWorkload(kind, namespaces, pods)
	began := time.Now()
	if err := work.populate(ctx); err != nil {
		t.Fatalf("create %d pods: %v", pods, err)
	}
	t.Logf("created %d pods at %.0f per second", pods, float64(pods)/time.Since(began).Seconds())
	phase.lap("populate")

	unsharded := s.startReplica(t, "unsharded", "", false, namespaces)
	replicas := make([]*replica, shardReplicas)
	for i := range replicas {
		selector, err := kcache.EvenShardSelector(i, shardReplicas)
		if err != nil {
			t.Fatal(err)
		}
		replicas[i] = s.startReplica(t, fmt.Sprintf("replica %d/%d", i, shardReplicas), selector, i == 0, namespaces)
	}
	phase.lap("start and sync the informers")

	if err := work.churn(ctx); err != nil {
		t.Fatalf("churn: %v", err)
	}
	work.account()
	phase.lap("churn")

	want := listSnapshot(t, kind, namespaces...)
	waitConverged(t, want, unsharded.informer)
	for _, r := range replicas {
		waitConverged(t, part(t, want, r.selector), r.informer)
	}
	phase.lap("converge")

	checkSplit(t, want, replicas)
	checkModes(t, replicas)
	checkSeenOnce(t, work.w.ledger, replicas)
	checkComplete(t, work.w.ledger, kind.deleteMarks(), unsharded.informer)
	if mode, ok := expectedShardMode(); ok && mode == kcache.ShardModeServer {
		checkServerLists(t, s, namespaces, want, replicas)
	}
	logShardFigures(t, len(want), unsharded, replicas)
	countEvents(unsharded.informer)
	for _, r := range replicas {
		countEvents(r.informer)
	}
	tally.scenarios.Add(1)
}

// checkSplit checks that the replicas' stores are pairwise disjoint, that
// their union is want, and that each of the n holds 1/n ± shardTolerance
// of it.
func checkSplit(t *testing.T, want snapshot, replicas []*replica) {
	t.Helper()
	union := snapshot{}
	owner := map[string]string{}
	for _, r := range replicas {
		held := r.informer.store(t)
		for key, state := range held {
			if other, ok := owner[key]; ok {
				t.Errorf("%s is held by %s and %s", key, other, r.name)
			}
			owner[key] = r.name
			union[key] = state
		}
		share, even := float64(len(held))/float64(len(want)), 1/float64(len(replicas))
		if share < even-shardTolerance || share > even+shardTolerance {
			t.Errorf("%s holds %d of %d pods (%.1f%%), not 1/%d ± %.0f%%", r.name, len(held), len(want), 100*share, len(replicas), 100*shardTolerance)
		}
	}
	if d := cmp.Diff(want, union); d != "" {
		t.Errorf("the union of the replicas' stores (+) is not the fresh List (-):\n%s", truncate(d, 4000))
	}
}

// checkModes checks that every replica found the mode the server's gate
// implies, or, for a server not started by kas, that they agree.
func checkModes(t *testing.T, replicas []*replica) {
	t.Helper()
	want, known := expectedShardMode()
	if !known {
		want = replicas[0].sharded.Mode()
		t.Logf("the server's gates are unknown (KAS_APISERVER_ARGS unset): the replicas must agree; the first says %s", want)
	}
	for _, r := range replicas {
		if got := r.sharded.Mode(); got != want || got == kcache.ShardModeUnknown {
			t.Errorf("%s: shard mode %s, want %s", r.name, got, want)
		}
	}
}

// checkSeenOnce checks that each pod in the ledger was seen by the handler
// of exactly one replica, the one whose range holds its UID, and that this
// handler saw every version written and the delete, as checkComplete
// checks it for one informer.
func checkSeenOnce(t *testing.T, l *ledger, replicas []*replica) {
	t.Helper()
	objects := l.all()
	slices.SortFunc(objects, func(a, b written) int { return strings.Compare(a.key, b.key) })
	wrong := 0
	for _, w := range objects {
		var seenBy []string
		var got history
		for _, r := range replicas {
			if h, ok := r.informer.early[0].historyOf(w.uid); ok {
				seenBy = append(seenBy, r.name)
				got = h
			}
		}
		var owner string
		for _, r := range replicas {
			if inSelector(t, r.selector, w.uid) {
				owner = r.name
			}
		}
		want := history{key: w.key, rvs: w.rvs, deleted: w.deleted}
		if w.deleted {
			want.terminating = 1 // the API server marks a Pod before deleting it
		}
		got = history{key: got.key, rvs: got.rvs, deleted: got.deleted, terminating: got.terminating}
		problem := ""
		switch d := cmp.Diff(want, got, cmp.AllowUnexported(history{})); {
		case len(seenBy) != 1 || seenBy[0] != owner:
			problem = fmt.Sprintf("%s (uid %s, range of %s) was seen by %v", w.key, w.uid, owner, seenBy)
		case d != "":
			problem = fmt.Sprintf("%s saw %s (uid %s) otherwise than written (-written, +seen):\n%s", owner, w.key, w.uid, d)
		}
		if problem != "" {
			if wrong < 5 {
				t.Error(problem)
			}
			wrong++
		}
	}
	if wrong > 0 {
		t.Errorf("%d of %d pods written were not seen exactly once, as written", wrong, len(objects))
	}
}

// shardListPage is the page size of checkServerLists' lists.
const shardListPage = 500

// checkServerLists lists each replica's pods with its selector, page by
// page, and checks that the server returned exactly them and echoed the
// selector on every page.
func checkServerLists(t *testing.T, s *server, namespaces []string, want snapshot, replicas []*replica) {
	t.Helper()
	for _, r := range replicas {
		got := snapshot{}
		pages := 0
		for _, ns := range namespaces {
			options := metav1.ListOptions{ShardSelector: r.sharded.Selector(), Limit: shardListPage}
			for {
				var list *corev1.PodList
				err := retry(context.Background(), "list pods of "+r.name, func(ctx context.Context) error {
					var err error
					list, err = s.client.CoreV1().Pods(ns).List(ctx, options)
					return err
				})
				if err != nil {
					t.Fatalf("%s: sharded list: %v", r.name, err)
				}
				pages++
				if list.ShardInfo == nil || list.ShardInfo.Selector != r.sharded.Selector() {
					t.Errorf("%s: page %d has shardInfo %+v, want the selector %q", r.name, pages, list.ShardInfo, r.sharded.Selector())
				}
				for i := range list.Items {
					got[objectKey(&list.Items[i])] = stateOf(&list.Items[i])
				}
				if options.Continue = list.Continue; options.Continue == "" {
					break
				}
			}
		}
		if d := cmp.Diff(part(t, want, r.selector), got); d != "" {
			t.Errorf("%s: a paginated List with its selector (+) is not its part of the fresh List hashed on the client (-):\n%s", r.name, truncate(d, 4000))
		}
		t.Logf("%s: a paginated List with its selector returned its %d pods in %d pages", r.name, len(got), pages)
	}
}

// logShardFigures logs what each informer holds and what it cost.
func logShardFigures(t *testing.T, live int, unsharded *replica, replicas []*replica) {
	t.Helper()
	base := figuresOf(unsharded)
	t.Logf("%d pods live; mode %s; bytes are response bodies read (after gzip), decoded counts list items and watch object events, handler counts add/update/delete calls, heap is the live-heap growth while the informer started and synced (under -race)", live, replicas[0].sharded.Mode())
	t.Logf("%-12s %7s %14s %9s %9s %11s", "informer", "holds", "bytes", "decoded", "handler", "heap")
	t.Logf("%-12s %7d %14d %9d %9d %11s", unsharded.name, base.held, base.bytes, base.decoded, base.handled, mib(base.heap))
	for _, r := range replicas {
		f := figuresOf(r)
		t.Logf("%-12s %7d %14d %9d %9d %11s   (of unsharded: holds %.2f, bytes %.2f, decoded %.2f, handler %.2f, heap %.2f)",
			r.name, f.held, f.bytes, f.decoded, f.handled, mib(f.heap),
			ratio(f.held, base.held), ratio(f.bytes, base.bytes), ratio(f.decoded, base.decoded), ratio(f.handled, base.handled), ratio(f.heap, base.heap))
	}
}

// shardFigures is what logShardFigures reports of one informer.
type shardFigures struct {
	held, bytes, decoded, handled, heap int64
}

func figuresOf(r *replica) shardFigures {
	counts, _ := r.informer.early[0].result()
	return shardFigures{
		held:    int64(len(r.informer.informer.storeList())),
		bytes:   r.bytes.n.Load(),
		decoded: r.counting.decoded.Load(),
		handled: int64(counts.total()),
		heap:    r.heap,
	}
}

func ratio(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}
