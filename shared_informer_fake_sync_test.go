package cache

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"

	fake "github.com/kcache/cache/testing"
)

// TestSharedInformer_OverTheTestingFakeSyncsAtOnce is the testing/ row of
// the fake-clientset matrix (the clientgo module's matrix test has client-go's
// fakes): an informer over this module's fake ListerWatcher, with the
// WatchListClient gate on, syncs within a second, streaming when the
// source serves streaming lists and listing page by page when it refuses
// them, with the same objects and initial events either way. The budget
// is of synctest's time: what the informer waits, whatever the machine's
// load.
func TestSharedInformer_OverTheTestingFakeSyncsAtOnce(t *testing.T) {
	t.Cleanup(setFeatureForTesting(featureWatchListClient, true))
	const pods, budget = 100, time.Second
	var wantKeys, wantAdds []string
	for i := range pods {
		key := fmt.Sprintf("ns/p%03d", i)
		wantKeys = append(wantKeys, key)
		wantAdds = append(wantAdds, "add "+key+" initial=true")
	}
	for name, tc := range map[string]struct {
		refuse bool
		// handMade passes the source's functions in a ListWatch, which
		// says nothing of streaming lists.
		handMade      bool
		wantStreaming bool
	}{
		"source":                  {wantStreaming: true},
		"hand-made ListWatch":     {handMade: true, wantStreaming: true},
		"source refusing streams": {refuse: true},
		"source refusing streams, hand-made ListWatch": {refuse: true, handMade: true},
	} {
		// In a synctest bubble time only passes while every goroutine
		// waits, so the budget measures waiting, not a busy machine's CPU.
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				src := fake.NewFakeControllerSourceWithOptions(fake.FakeControllerSourceOptions{RefuseStreamingLists: tc.refuse})
				defer src.Shutdown()
				for i := range pods {
					src.Add(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("p%03d", i)}})
				}
				var lists, streams atomic.Int32
				counted := &ListWatch{
					ListWithContextFunc: func(_ context.Context, o metav1.ListOptions) (runtime.Object, error) {
						lists.Add(1)
						return src.List(o)
					},
					WatchFuncWithContext: func(_ context.Context, o metav1.ListOptions) (watch.Interface, error) {
						if o.SendInitialEvents != nil && *o.SendInitialEvents {
							streams.Add(1)
						}
						return src.Watch(o)
					},
				}
				var lw ListerWatcher = counted
				if !tc.handMade {
					lw = ToListWatcherWithWatchListSemantics(counted, src)
				}
				inf := NewSharedIndexInformer(lw, &v1.Pod{}, 0, Indexers{})
				var mu sync.Mutex // guards adds
				var adds []string
				reg, err := inf.AddEventHandler(ResourceEventHandlerDetailedFuncs{AddFunc: func(obj interface{}, initial bool) {
					key, _ := MetaNamespaceKeyFunc(obj)
					mu.Lock()
					defer mu.Unlock()
					adds = append(adds, fmt.Sprintf("add %s initial=%v", key, initial))
				}})
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				var wg sync.WaitGroup
				wg.Go(func() { inf.RunWithContext(ctx) })
				defer func() { cancel(); wg.Wait() }()
				start := time.Now()
				if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, budget, true, func(context.Context) (bool, error) {
					return inf.HasSynced(), nil
				}); err != nil {
					t.Fatalf("not synced within %v", budget)
				}
				t.Logf("synced after %v", time.Since(start))
				keys := inf.GetStore().ListKeys()
				slices.Sort(keys)
				if diff := cmp.Diff(wantKeys, keys); diff != "" {
					t.Errorf("store at sync (-want +got):\n%s", diff)
				}
				if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, wait.ForeverTestTimeout, true, func(context.Context) (bool, error) {
					return reg.HasSynced(), nil
				}); err != nil {
					t.Fatal("the handler did not sync")
				}
				mu.Lock()
				got := slices.Sorted(slices.Values(adds))
				mu.Unlock()
				if diff := cmp.Diff(wantAdds, got); diff != "" {
					t.Errorf("initial events (-want +got):\n%s", diff)
				}
				streamed := lists.Load() == 0 && streams.Load() == 1
				if streamed != tc.wantStreaming {
					t.Errorf("%d lists and %d streaming lists; want streaming %v", lists.Load(), streams.Load(), tc.wantStreaming)
				}
			})
		})
	}
}
