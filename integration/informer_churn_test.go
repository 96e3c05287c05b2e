package integration

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	kcache "github.com/kcache/cache"
	"k8s.io/apimachinery/pkg/fields"
	clientgocache "k8s.io/client-go/tools/cache"
)

// lwPair is a kcache ListerWatcher and the equivalent client-go one, both
// for every namespace.
type lwPair struct {
	kcache   kcache.ListerWatcher
	clientGo clientgocache.ListerWatcher
}

// funcsListWatch builds both ListWatches from the clientset's list and
// watch functions for kind.
func funcsListWatch(kind kindClient) lwPair {
	list, watch := kind.listWatch("")
	return lwPair{
		kcache:   &kcache.ListWatch{ListWithContextFunc: kcache.ListWithContextFunc(list), WatchFuncWithContext: kcache.WatchFuncWithContext(watch)},
		clientGo: &clientgocache.ListWatch{ListWithContextFunc: clientgocache.ListWithContextFunc(list), WatchFuncWithContext: clientgocache.WatchFuncWithContext(watch)},
	}
}

// restClientListWatch builds both ListWatches with NewListWatchFromClient
// on the core/v1 REST client.
func restClientListWatch(s *server, resource string) lwPair {
	rc := s.client.CoreV1().RESTClient()
	return lwPair{
		kcache:   kcache.NewListWatchFromClient(rc, resource, "", fields.Everything()),
		clientGo: clientgocache.NewListWatchFromClient(rc, resource, "", fields.Everything()),
	}
}

// TestInformerChurn runs the 1,000-object workload (a create burst,
// concurrent updaters and short-lived objects, a delete burst) in three
// namespaces under an all-namespace kcache SharedIndexInformer with two
// handlers registered before it starts and one added midway, next to
// client-go's SharedIndexInformer fed the same way. Every handler must see
// each object's changes in order; the early ones must see exactly what was
// written; both informers must end equal to a fresh List and agree on the
// event counts.
func TestInformerChurn(t *testing.T) {
	s := needServer(t)
	cases := []struct {
		name string
		kind kindClient
		lw   func() lwPair
	}{
		{"pods via ListWatch funcs", podClient{client: s.client}, func() lwPair { return funcsListWatch(podClient{client: s.client}) }},
		{"configmaps via ListWatch funcs", configMapClient{client: s.client}, func() lwPair { return funcsListWatch(configMapClient{client: s.client}) }},
		{"pods via NewListWatchFromClient", podClient{client: s.client}, func() lwPair { return restClientListWatch(s, "pods") }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			phase := newStopwatch(t)
			namespaces := s.namespaces(t, "churn", 3)
			c := newChurn(fullChurn, tc.kind, namespaces)
			if err := c.prepopulate(ctx); err != nil {
				t.Fatalf("prepopulate: %v", err)
			}
			phase.lap("prepopulate")
			lw := tc.lw()
			ours := start(t, "kcache", kcacheInformer{kcache.NewSharedIndexInformer(lw.kcache, tc.kind.example(), 0, kcache.Indexers{})}, 2, namespaces...)
			theirs := start(t, "client-go", clientGoInformer{clientgocache.NewSharedIndexInformer(lw.clientGo, tc.kind.example(), 0, clientgocache.Indexers{})}, 1, namespaces...)

			phase.lap("start and sync informers")
			err := c.run(ctx, func() {
				// Let both informers catch up first, so that both late
				// handlers start from the same objects.
				waitConverged(t, listSnapshot(t, tc.kind, namespaces...), ours, theirs)
				ours.addLate(t)
				theirs.addLate(t)
			})
			if err != nil {
				t.Fatalf("workload: %v", err)
			}
			phase.lap("workload")
			c.account()
			waitConverged(t, listSnapshot(t, tc.kind, namespaces...), ours, theirs)
			phase.lap("converge")
			checkComplete(t, c.w.ledger, tc.kind.deleteMarks(), ours, theirs)
			for _, r := range append(ours.early, theirs.early...) {
				got, _ := r.result()
				if d := cmp.Diff(fullChurn.want(tc.kind.deleteMarks()), got); d != "" {
					t.Errorf("%s: event counts (-want from the plan, +got):\n%s", r.name, d)
				}
			}
			compareCounts(t, ours.late, theirs.late)
			countEvents(ours, theirs)
			tally.scenarios.Add(1)
		})
	}
}
