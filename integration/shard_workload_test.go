package integration

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	kcache "github.com/kcache/cache"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// shardPodsEnv overrides how many pods the sharding test creates before
// its informers start.
const shardPodsEnv = "KCACHE_SHARD_PODS"

// defaultShardPods is the pod count of the sharding test.
const defaultShardPods = 10000

// shardPodCount returns the pod count to use: shardPodsEnv, or the default.
func shardPodCount(t testing.TB) int {
	t.Helper()
	raw := os.Getenv(shardPodsEnv)
	if raw == "" {
		return defaultShardPods
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < 30 {
		t.Fatalf("%s=%q: want a whole number of at least 30", shardPodsEnv, raw)
	}
	return n
}

// expectedShardMode returns the mode every sharded informer must reach on
// this server: server when kas was started with the ShardedListAndWatch
// gate, client when it was started without it. ok is false when the
// server was not started by kas, so its gates are unknown.
func expectedShardMode() (mode kcache.ShardMode, ok bool) {
	args, set := os.LookupEnv("KAS_APISERVER_ARGS")
	if !set {
		return kcache.ShardModeUnknown, false
	}
	if strings.Contains(args, "ShardedListAndWatch=true") {
		return kcache.ShardModeServer, true
	}
	return kcache.ShardModeClient, true
}

// inSelector reports whether the object with uid lies in sel; the UID is
// the only field the selectors of these tests hash.
func inSelector(t testing.TB, sel *kcache.ShardSelector, uid types.UID) bool {
	t.Helper()
	ok, err := sel.Matches(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: uid}})
	if err != nil {
		t.Fatalf("match uid %s against %s: %v", uid, sel, err)
	}
	return ok
}

// part returns the entries of snap whose UID lies in sel.
func part(t testing.TB, snap snapshot, sel *kcache.ShardSelector) snapshot {
	t.Helper()
	out := snapshot{}
	for k, v := range snap {
		if inSelector(t, sel, v.UID) {
			out[k] = v
		}
	}
	return out
}

// shardWorkload creates many pods, then churns them: a burst of new pods,
// updates of a tenth of the first ones, short-lived pods created, updated
// and deleted, and finally deletes of 15% of the first pods (a third of
// them updated before). More pods are created than deleted, so at least
// the initial count is live at the end.
type shardWorkload struct {
	w          *writer
	kind       kindClient
	namespaces []string
	// first holds the latest version of each pod created by populate;
	// index i is only written by the goroutine handling pod i.
	first []metav1.Object
}

func newShardWorkload(kind kindClient, namespaces []string, pods int) *shardWorkload {
	return &shardWorkload{
		w:          &writer{kind: kind, ledger: newLedger()},
		kind:       kind,
		namespaces: namespaces,
		first:      make([]metav1.Object, pods),
	}
}

// shardCreateParallel is the number of creates in flight while populating.
const shardCreateParallel = 64

// shardChurnParallel is the number of writes in flight per churn stream.
const shardChurnParallel = 32

func (c *shardWorkload) newPod(family string, i int) metav1.Object {
	return c.kind.newObject(c.namespaces[i%len(c.namespaces)], fmt.Sprintf("%s-%05d", family, i))
}

// populate creates the first pods.
func (c *shardWorkload) populate(ctx context.Context) error {
	return forEach(ctx, indexes(0, len(c.first)), shardCreateParallel, func(ctx context.Context, i int) error {
		obj, err := c.w.create(ctx, c.newPod("pod", i))
		c.first[i] = obj
		return err
	})
}

// updated and deleted say which of the first pods the churn touches.
func updated(i int) bool { return i%10 == 1 }
func deleted(i int) bool { return i%10 == 2 || i%30 == 1 }

// churnRound is one round of a shardWorkload's churn: the pods it creates
// and the short-lived ones are named after prefix (so that no two rounds
// reuse a name), and update and remove pick the first pods it updates and
// deletes.
type churnRound struct {
	prefix         string
	update, remove func(i int) bool
}

// firstRound is the churn TestShardedReplicas applies.
var firstRound = churnRound{update: updated, remove: deleted}

// churn writes the first round concurrently: creates, updates and
// short-lived pods; then the deletes.
func (c *shardWorkload) churn(ctx context.Context) error {
	return c.churnRound(ctx, firstRound)
}

// churnRound writes round r: a fifth as many new pods as the first ones,
// r's updates and short-lived pods, concurrently; then r's deletes.
func (c *shardWorkload) churnRound(ctx context.Context, r churnRound) error {
	n := len(c.first)
	var g group
	g.run(func() error {
		return forEach(ctx, indexes(0, n/5), shardChurnParallel, func(ctx context.Context, i int) error {
			_, err := c.w.create(ctx, c.newPod(r.prefix+"new", i))
			return err
		})
	})
	g.run(func() error {
		return forEach(ctx, c.firstWhere(r.update), shardChurnParallel, func(ctx context.Context, i int) error {
			obj, err := c.w.update(ctx, c.first[i], noChange)
			c.first[i] = obj
			return err
		})
	})
	const briefWriters = 4
	for w := range briefWriters {
		g.run(func() error {
			for i := w; i < n/100; i += briefWriters {
				if err := c.brief(ctx, r.prefix+"brief", i); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := g.wait(); err != nil {
		return err
	}
	return forEach(ctx, c.firstWhere(r.remove), shardChurnParallel, func(ctx context.Context, i int) error {
		return c.w.delete(ctx, c.first[i])
	})
}

// brief creates, updates and deletes short-lived pod i of family.
func (c *shardWorkload) brief(ctx context.Context, family string, i int) error {
	obj, err := c.w.create(ctx, c.newPod(family, i))
	if err != nil {
		return err
	}
	if obj, err = c.w.update(ctx, obj, noChange); err != nil {
		return err
	}
	return c.w.delete(ctx, obj)
}

// untouched returns the first pods that none of rounds deletes: they live
// from populate to the end.
func (c *shardWorkload) untouched(rounds ...churnRound) []metav1.Object {
	var out []metav1.Object
	for i, obj := range c.first {
		if !slices.ContainsFunc(rounds, func(r churnRound) bool { return r.remove(i) }) {
			out = append(out, obj)
		}
	}
	return out
}

// firstWhere returns the indexes of the first pods pick accepts.
func (c *shardWorkload) firstWhere(pick func(int) bool) []int {
	var out []int
	for i := range c.first {
		if pick(i) {
			out = append(out, i)
		}
	}
	return out
}

// shardNamespaces is how many namespaces the sharding tests spread their
// pods over.
const shardNamespaces = 4

// podNamespaces creates the namespaces of a sharding test's pods and the
// protobuf client that writes them, and deletes every pod in them when the
// test ends.
func (s *server) podNamespaces(t *testing.T, prefix string) ([]string, podClient) {
	t.Helper()
	namespaces := s.namespaces(t, prefix, shardNamespaces)
	kind := podClient{client: s.protobufClient(t)}
	t.Cleanup(func() {
		if err := deleteAllPods(context.Background(), kind.client, namespaces); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	return namespaces, kind
}

// deleteAllPods deletes every pod in the namespaces, with as many
// requests in flight as populate. The API server's DeleteCollection
// deletes one pod at a time (--delete-collection-workers defaults to 1),
// which takes minutes for the sharding test's pods.
func deleteAllPods(ctx context.Context, client kubernetes.Interface, namespaces []string) error {
	var pods []corev1.Pod
	for _, ns := range namespaces {
		list, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("list pods in %s: %w", ns, err)
		}
		pods = append(pods, list.Items...)
	}
	return forEach(ctx, pods, shardCreateParallel, func(ctx context.Context, pod corev1.Pod) error {
		return retry(ctx, "delete "+pod.Namespace+"/"+pod.Name, func(ctx context.Context) error {
			err := client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, deleteNow(pod.UID))
			if apierrors.IsNotFound(err) {
				return nil
			}
			return err
		})
	})
}

// account adds the workload's figures to the suite's tally.
func (c *shardWorkload) account() {
	tally.objects.Add(int64(len(c.w.ledger.all())))
	tally.writes.Add(c.w.ledger.writes.Load())
}
