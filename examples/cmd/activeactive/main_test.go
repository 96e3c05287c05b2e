package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/kcache/cache/sharding"
	framework "github.com/kcache/cache/testing"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

func TestMain(m *testing.M) {
	// Managers log through their own loggers; this silences the rest of
	// controller-runtime, which would otherwise warn that it has none.
	ctrllog.SetLogger(logr.Discard())
	goleak.VerifyTestMain(m)
}

// syncBuffer is a Buffer safe for one writer and readers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// statusLine matches a status line, capturing the shard count and the
// Pods cached.
var statusLine = regexp.MustCompile(`: shard \d+ of (\d+), (\d+) pods cached, \d+ reconciled, (\d+) deletions\n`)

// lastStatus returns the shard count, Pods cached and deletions of the
// last status line in out.
func lastStatus(out string) (count, cached, deletions int, ok bool) {
	all := statusLine.FindAllStringSubmatch(out, -1)
	if len(all) == 0 {
		return 0, 0, 0, false
	}
	last := all[len(all)-1]
	count, _ = strconv.Atoi(last[1])
	cached, _ = strconv.Atoi(last[2])
	deletions, _ = strconv.Atoi(last[3])
	return count, cached, deletions, true
}

// Three replicas of the example, in-process, against testing's simulated
// API server and a fake clientset's Leases: they share the Pods out, each
// caching a part, the parts adding up to all of them, with no deletion
// reconciled (no Pod is deleted).
func TestRun_ThreeReplicasShareThePodsOut(t *testing.T) {
	const n = 30
	pods := framework.NewFakeControllerSource()
	defer pods.Shutdown()
	for i := range n {
		pods.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Namespace: "default",
			Name:      fmt.Sprintf("web-%02d", i),
			UID:       types.UID(fmt.Sprintf("%08x-7d3e-4c1a-8f2b-%012x", uint32(i)*2654435761, i)),
		}})
	}
	srv := servePods(t, pods)
	leases := fake.NewClientset()

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	outs := map[string]*syncBuffer{}
	for _, identity := range []string{"replica-a", "replica-b", "replica-c"} {
		out := &syncBuffer{}
		outs[identity] = out
		cfg := config{
			rest: &rest.Config{Host: srv.URL},
			options: sharding.Options{
				Client:        leases.CoordinationV1(),
				Namespace:     "kube-system",
				Group:         "kcache-activeactive",
				Identity:      identity,
				LeaseDuration: 2 * time.Second,
				RenewDeadline: time.Second,
				RetryPeriod:   200 * time.Millisecond,
			},
			every:     50 * time.Millisecond,
			stateAddr: "127.0.0.1:0",
			managerOptions: func(o *manager.Options) {
				o.Logger = logr.Discard()
				// Three managers in one process run three controllers
				// called "pod".
				o.Controller.SkipNameValidation = ptr.To(true)
				o.MapperProvider = func(*rest.Config, *http.Client) (meta.RESTMapper, error) {
					m := meta.NewDefaultRESTMapper(nil)
					m.Add(corev1.SchemeGroupVersion.WithKind("Pod"), meta.RESTScopeNamespace)
					return m, nil
				}
			},
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := run(ctx, cfg, out); err != nil {
				t.Errorf("%s: run: %v", identity, err)
			}
		}()
	}

	deadline := time.Now().Add(30 * time.Second)
	for {
		total, settled := 0, true
		for _, out := range outs {
			count, cached, deletions, ok := lastStatus(out.String())
			if deletions != 0 {
				t.Fatalf("a replica reconciled %d deletions; no Pod was deleted:\n%s", deletions, out)
			}
			settled = settled && ok && count == 3
			total += cached
		}
		if settled && total == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the replicas did not share the %d Pods out; last output:\n%s%s%s", n, outs["replica-a"], outs["replica-b"], outs["replica-c"])
		}
		time.Sleep(20 * time.Millisecond)
	}
	checkStates(t, outs, n)
	cancel()
	wg.Wait()
}

var stateURL = regexp.MustCompile(`state at (http://\S+)`)

// checkStates reads every replica's state endpoint until the replicas
// claim disjoint parts adding up to n Pods, each Pod reconciled by its
// holder at the cached resourceVersion.
func checkStates(t *testing.T, outs map[string]*syncBuffer, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		problem := statesProblem(outs, n)
		if problem == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("state endpoints: %s", problem)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// statesProblem returns what is wrong with the replicas' states now, or "".
func statesProblem(outs map[string]*syncBuffer, n int) string {
	holder := map[string]string{}
	for identity, out := range outs {
		m := stateURL.FindStringSubmatch(out.String())
		if m == nil {
			return identity + " printed no state address"
		}
		resp, err := http.Get(m[1])
		if err != nil {
			return err.Error()
		}
		var st replicaState
		err = json.NewDecoder(resp.Body).Decode(&st)
		resp.Body.Close()
		switch {
		case err != nil:
			return err.Error()
		case st.Identity != identity || !st.Claiming || st.Count != 3:
			return fmt.Sprintf("%s: state %+v", identity, st)
		}
		for key, rv := range st.Cached {
			if other, dup := holder[key]; dup {
				return fmt.Sprintf("%s cached by %s and %s", key, other, identity)
			}
			holder[key] = identity
			if st.Reconciled[key] != rv {
				return fmt.Sprintf("%s: %s cached at %s, reconciled at %q", identity, key, rv, st.Reconciled[key])
			}
		}
	}
	if len(holder) != n {
		return fmt.Sprintf("%d Pods held, want %d", len(holder), n)
	}
	return ""
}
