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
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
)

// TestStreamingListsStayOnARealServer builds informers the ways a unit test
// builds them over a fake clientset (a hand-made ListWatch, with and without
// ToListWatcherWithWatchListSemantics), but over the real clientset, with
// the WatchListClient gate on: kcache must still stream its lists, the
// watches it reads being the real client's (nothing wraps them), and list
// nothing. kcache tells a fake's watch that cannot stream lists from a
// server's; this checks a server's never counts as one.
func TestStreamingListsStayOnARealServer(t *testing.T) {
	s := needServer(t)
	if !streamingExpected(t) {
		t.Skipf("%s is off in this process", watchListGate)
	}
	ctx := context.Background()
	ns := s.namespaces(t, "realstream", 1)[0]
	const pods = 20
	for i := range pods {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%02d", i), Namespace: ns},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "none"}}},
		}
		if _, err := s.client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create pod: %v", err)
		}
	}
	for name, wrap := range map[string]func(*kcache.ListWatch) kcache.ListerWatcher{
		"hand-made ListWatch": func(lw *kcache.ListWatch) kcache.ListerWatcher { return lw },
		"ToListWatcherWithWatchListSemantics": func(lw *kcache.ListWatch) kcache.ListerWatcher {
			return kcache.ToListWatcherWithWatchListSemantics(lw, s.client)
		},
	} {
		t.Run(name, func(t *testing.T) {
			var mu sync.Mutex // guards lists and watches
			lists, watches := 0, []metav1.ListOptions{}
			var watchTypes []string
			lw := &kcache.ListWatch{
				ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
					mu.Lock()
					lists++
					mu.Unlock()
					return s.client.CoreV1().Pods(ns).List(ctx, o)
				},
				WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
					w, err := s.client.CoreV1().Pods(ns).Watch(ctx, o)
					mu.Lock()
					watches = append(watches, o)
					watchTypes = append(watchTypes, fmt.Sprintf("%T", w))
					mu.Unlock()
					return w, err
				},
			}
			inf := kcache.NewSharedIndexInformer(wrap(lw), &corev1.Pod{}, 0, kcache.Indexers{})
			runCtx, cancel := context.WithCancel(ctx)
			var wg sync.WaitGroup
			wg.Go(func() { inf.RunWithContext(runCtx) })
			defer func() { cancel(); wg.Wait() }()
			if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, wait.ForeverTestTimeout, true, func(context.Context) (bool, error) {
				return inf.HasSynced(), nil
			}); err != nil {
				t.Fatal("the informer did not sync")
			}
			if got := len(inf.GetStore().ListKeys()); got != pods {
				t.Errorf("the informer holds %d pods, want %d", got, pods)
			}
			mu.Lock()
			defer mu.Unlock()
			if lists != 0 || len(watches) != 1 {
				t.Fatalf("%d List calls and %d watches (%v), want 0 and 1", lists, len(watches), watchTypes)
			}
			if si := watches[0].SendInitialEvents; si == nil || !*si {
				t.Errorf("the watch was not a streaming list: %+v", watches[0])
			}
			t.Logf("streamed over a %s", watchTypes[0])
		})
	}
}
