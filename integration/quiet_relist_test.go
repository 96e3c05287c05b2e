package integration

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	kcache "github.com/kcache/cache"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgocache "k8s.io/client-go/tools/cache"
)

// notificationCount counts a handler's calls; updates are split by whether
// the resource version changed.
type notificationCount struct {
	// mu guards every field below.
	mu                        sync.Mutex
	adds, deletes             int
	updates, unchangedUpdates int
	seen                      map[string]bool // keys of added or updated objects
}

func newNotificationCount() *notificationCount {
	return &notificationCount{seen: map[string]bool{}}
}

func (c *notificationCount) OnAdd(obj any, _ bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.adds++
	c.seen[objectKey(obj.(metav1.Object))] = true
}

func (c *notificationCount) OnUpdate(oldObj, newObj any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.updates++
	if oldObj.(metav1.Object).GetResourceVersion() == newObj.(metav1.Object).GetResourceVersion() {
		c.unchangedUpdates++
	}
	c.seen[objectKey(newObj.(metav1.Object))] = true
}

func (c *notificationCount) OnDelete(any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.deletes++
}

// snapshot returns the counts so far, and whether key was seen.
func (c *notificationCount) snapshot(key string) (counts [4]int, seen bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return [4]int{c.adds, c.updates, c.unchangedUpdates, c.deletes}, c.seen[key]
}

// TestQuietRelist_APIServerRestartAfterCompaction forces a relist the way
// production gets one, the API server restarted with the informers'
// resource version compacted away, while none of the watched Pods changed.
// A kcache informer with quiet relists (SetQuietRelist) must tell its
// handler nothing; a kcache informer by default, like client-go's, one
// update per Pod.
func TestQuietRelist_APIServerRestartAfterCompaction(t *testing.T) {
	s := needServer(t)
	control := s.needControl(t)
	ctx := context.Background()
	ns := s.namespaces(t, "quiet-relist", 1)[0]
	pods := podClient{client: s.client}
	const n = 20
	for i := range n {
		if _, err := pods.create(ctx, pods.newObject(ns, fmt.Sprintf("pod-%02d", i))); err != nil {
			t.Fatalf("create pod: %v", err)
		}
	}
	rc := s.client.CoreV1().RESTClient()
	type informer struct {
		name  string
		lw    *observedLW
		count *notificationCount
		run   func(ctx context.Context)
	}
	newKcache := func(name string, quiet bool) informer {
		lw := newObservedLW(kcache.NewListWatchFromClient(rc, "pods", ns, fields.Everything()))
		inf := kcache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, kcache.Indexers{})
		if err := kcache.SetQuietRelist(inf, quiet); err != nil {
			t.Fatalf("SetQuietRelist: %v", err)
		}
		count := newNotificationCount()
		if _, err := inf.AddEventHandler(count); err != nil {
			t.Fatal(err)
		}
		return informer{name: name, lw: lw, count: count, run: inf.RunWithContext}
	}
	lw := newObservedLW(clientgocache.NewListWatchFromClient(rc, "pods", ns, fields.Everything()))
	theirs := clientgocache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, clientgocache.Indexers{})
	theirCount := newNotificationCount()
	if _, err := theirs.AddEventHandler(theirCount); err != nil {
		t.Fatal(err)
	}
	informers := []informer{
		newKcache("kcache, quiet relists", true),
		newKcache("kcache", false),
		{name: "client-go", lw: lw, count: theirCount, run: theirs.RunWithContext},
	}
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	t.Cleanup(func() { stop(); wg.Wait() })
	for _, inf := range informers {
		wg.Go(func() { inf.run(runCtx) })
	}

	// waitSeen waits until every informer's handler was told of key.
	waitSeen := func(key string) {
		t.Helper()
		for _, inf := range informers {
			err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
				_, seen := inf.count.snapshot(key)
				return seen, nil
			})
			if err != nil {
				t.Fatalf("%s: never told of %s", inf.name, key)
			}
		}
	}
	// One event on the open watches first: a watch that delivered nothing
	// and ends within a second makes a reflector relist, and the relist
	// here must come from the 410.
	first, err := s.client.CoreV1().Pods(ns).Get(ctx, "pod-00", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	first.Labels["touched"] = "once"
	if _, err := pods.update(ctx, first); err != nil {
		t.Fatalf("update: %v", err)
	}
	waitSeen(ns + "/pod-00")
	time.Sleep(time.Second) // the update is the last event before the relist
	var before [3][4]int
	for i, inf := range informers {
		before[i], _ = inf.count.snapshot("")
		inf.lw.pause()
	}

	// A write the watches never see moves the revision on; compacting at
	// it leaves the informers' resource version behind, and a restart
	// empties the watch cache that could still serve it.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "revision-mover"}}
	if _, err := s.client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create configmap: %v", err)
	}
	rev, err := control.compact(ctx)
	if err != nil {
		t.Fatalf("compact: %v", err)
	}
	began := time.Now()
	if err := control.restartAPIServer(ctx); err != nil {
		t.Fatalf("restart: %v", err)
	}
	t.Logf("compacted etcd at revision %d, restarted the API server in %v", rev, time.Since(began).Round(time.Millisecond))
	for _, inf := range informers {
		inf.lw.resume()
	}
	for _, inf := range informers {
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
			return inf.lw.observe().fullLists() >= 2, nil
		})
		if err != nil {
			t.Fatalf("%s did not relist: %s", inf.name, describeObservation(inf.lw.observe()))
		}
	}
	// A Pod created after the relist began, named to sort last: every
	// handler is told of it after what the relist told it.
	marker := "zz-marker"
	if _, err := pods.create(ctx, pods.newObject(ns, marker)); err != nil {
		t.Fatalf("create marker: %v", err)
	}
	waitSeen(ns + "/" + marker)

	want := map[string]int{"kcache, quiet relists": 0, "kcache": n, "client-go": n}
	for i, inf := range informers {
		after, _ := inf.count.snapshot("")
		ob := inf.lw.observe()
		adds, updates, unchanged, deletes := after[0]-before[i][0], after[1]-before[i][1], after[2]-before[i][2], after[3]-before[i][3]
		t.Logf("%s after the relist: %d updates (%d unchanged), %d adds, %d deletes; %s", inf.name, updates, unchanged, adds, deletes, describeObservation(ob))
		if ob.expired == 0 {
			t.Errorf("%s: no 410 Gone answer after the compaction", inf.name)
		}
		if updates != want[inf.name] || unchanged != want[inf.name] {
			t.Errorf("%s: %d updates (%d of them unchanged) after a relist that changed nothing, want %d", inf.name, updates, unchanged, want[inf.name])
		}
		if adds != 1 || deletes != 0 {
			t.Errorf("%s: %d adds and %d deletes after the relist, want the marker's add alone", inf.name, adds, deletes)
		}
	}
}
