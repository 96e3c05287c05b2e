package integration

import (
	"context"
	"errors"
	"strings"
	"testing"

	kcache "github.com/kcache/cache"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// TestShardBadInput checks the sharded informers' answers to selectors
// that cannot work or select nothing, against the real server:
//   - malformed selectors are refused at construction, by
//     NewShardedListerWatcher and NewShardedInformerFactory alike, with an
//     error wrapping ErrInvalidShardSelector (an empty range such as
//     [0x8000000000000000, 0x8000000000000000) is one of them);
//   - with the ShardedListAndWatch gate on, the server itself refuses a
//     malformed selector that bypasses the library (with a 500 on
//     kube-apiserver v1.36.4);
//   - a well-formed range that holds none of the pods (the first value of
//     the hash space only) gives an informer that syncs with an empty store
//     and calls no handler, while the complementary range holds every pod:
//     nothing is dropped between the two.
func TestShardBadInput(t *testing.T) {
	s := needServer(t)
	kind := podClient{client: s.client}
	list, watch := kind.listWatch("")
	malformed := []string{
		"",
		"shardRange(object.metadata.uid, '0x0', '0x8000000000000000')",
		"shardRange(object.metadata.name, '0x0000000000000000', '0x8000000000000000')",
		"shardRange(object.metadata.uid, '0x8000000000000000', '0x8000000000000000')",
		"shardRange(object.metadata.uid, '0x8000000000000000', '0x0000000000000000')",
		"shardRange(object.metadata.uid, '0x0000000000000000', '0x10000000000000001')",
		"shardRange(object.metadata.uid, '0x0000000000000000')",
		"object.metadata.uid in ('a', 'b')",
	}
	for _, selector := range malformed {
		lw := &kcache.ListWatch{ListWithContextFunc: kcache.ListWithContextFunc(list), WatchFuncWithContext: kcache.WatchFuncWithContext(watch)}
		sharded, err := kcache.NewShardedListerWatcher(lw, selector)
		if !errors.Is(err, kcache.ErrInvalidShardSelector) || sharded != nil {
			t.Errorf("NewShardedListerWatcher(%q) = %v, %v; want nil and an ErrInvalidShardSelector", selector, sharded, err)
		} else {
			t.Logf("NewShardedListerWatcher(%q): %v", selector, err)
		}
		if _, err := kcache.NewShardedInformerFactory(0, selector); !errors.Is(err, kcache.ErrInvalidShardSelector) {
			t.Errorf("NewShardedInformerFactory(%q): %v, want an ErrInvalidShardSelector", selector, err)
		}
	}

	namespaces := s.namespaces(t, "shard-bad", 1)
	work := newShardWorkload(kind, namespaces, 50)
	if err := work.populate(context.Background()); err != nil {
		t.Fatalf("create pods: %v", err)
	}
	mode, modeKnown := expectedShardMode()
	if modeKnown && mode == kcache.ShardModeServer {
		// client-go checks the selector as it builds the query, so the
		// request is written by hand to reach the server.
		err := s.client.CoreV1().RESTClient().Get().Namespace(namespaces[0]).Resource("pods").
			Param("shardSelector", malformed[1]).Do(context.Background()).Error()
		// kube-apiserver v1.36.4 answers 500 with the parser's message: a
		// status a Reflector would retry for ever, which is why the
		// library checks the selector at construction.
		var status apierrors.APIStatus
		if !errors.As(err, &status) || !strings.Contains(status.Status().Message, "invalid shard selector") {
			t.Errorf("a List with the malformed selector %q: %v, want the server to refuse it as an invalid shard selector", malformed[1], err)
		} else {
			t.Logf("the server refuses a malformed selector: %d %q", status.Status().Code, status.Status().Message)
		}
	}

	want := listSnapshot(t, kind, namespaces...)
	ranges := []struct {
		name, selector string
		want           snapshot
	}{
		{"empty shard", "shardRange(object.metadata.uid, '0x0000000000000000', '0x0000000000000001')", snapshot{}},
		{"complement", "shardRange(object.metadata.uid, '0x0000000000000001', '0x10000000000000000')", want},
	}
	for _, r := range ranges {
		lw := &kcache.ListWatch{ListWithContextFunc: kcache.ListWithContextFunc(list), WatchFuncWithContext: kcache.WatchFuncWithContext(watch)}
		sharded, err := kcache.NewShardedListerWatcher(lw, r.selector)
		if err != nil {
			t.Fatalf("%s: %v", r.name, err)
		}
		inf := start(t, r.name, kcacheInformer{kcache.NewSharedIndexInformer(sharded, &corev1.Pod{}, 0, kcache.Indexers{})}, 1, namespaces...)
		waitConverged(t, r.want, inf)
		if modeKnown && sharded.Mode() != mode {
			t.Errorf("%s: shard mode %s, want %s", r.name, sharded.Mode(), mode)
		}
		counts, _ := inf.early[0].result()
		if counts.total() != len(r.want) {
			t.Errorf("%s: handler calls %+v, want one add for each of its %d pods", r.name, counts, len(r.want))
		}
	}
	tally.scenarios.Add(1)
}
