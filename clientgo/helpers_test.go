package clientgo

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	toolscache "k8s.io/client-go/tools/cache"
)

// TestMain fails the package's tests if any goroutine outlives them.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newPod(namespace, name string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: namespace, Name: name, Labels: map[string]string{"app": name},
	}}
}

// recorder is a client-go handler that logs each event as a line and
// sends it on events.
type recorder struct {
	events chan string
}

func newRecorder() *recorder { return &recorder{events: make(chan string, 100)} }

func (r *recorder) OnAdd(obj interface{}, isInInitialList bool) {
	r.events <- fmt.Sprintf("add %s initial=%v", describe(obj), isInInitialList)
}

func (r *recorder) OnUpdate(_, newObj interface{}) { r.events <- "update " + describe(newObj) }

func (r *recorder) OnDelete(obj interface{}) { r.events <- "delete " + describe(obj) }

// next returns the next n events, failing the test if they do not come.
func (r *recorder) next(t *testing.T, n int) []string {
	t.Helper()
	var out []string
	ctx, cancel := context.WithTimeout(context.Background(), wait.ForeverTestTimeout)
	defer cancel()
	for range n {
		select {
		case e := <-r.events:
			out = append(out, e)
		case <-ctx.Done():
			t.Fatalf("got %q, then no event", out)
		}
	}
	return out
}

// describe names obj and, for a tombstone, says which package's type it is.
func describe(obj interface{}) string {
	switch o := obj.(type) {
	case *v1.Pod:
		return o.Namespace + "/" + o.Name
	case toolscache.DeletedFinalStateUnknown:
		return "client-go tombstone " + o.Key
	}
	return fmt.Sprintf("%T", obj)
}

// run runs inf until the test ends, and waits for it to return then.
func run(t *testing.T, inf interface{ RunWithContext(context.Context) }) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { inf.RunWithContext(ctx) })
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	t.Cleanup(stop)
	return stop
}

// waitSynced waits until every synced func reports true, failing the test
// if one never does. (HasSyncedChecker, the channel form, exists from
// client-go v0.36 on; testdata/minors tests it there.)
func waitSynced(t *testing.T, synced ...toolscache.InformerSynced) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait.ForeverTestTimeout)
	defer cancel()
	if !toolscache.WaitForCacheSync(ctx.Done(), synced...) {
		t.Fatal("caches did not sync")
	}
}
