//go:build !race

package integration

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	kcache "github.com/kcache/cache"
)

// This test is built without -race (run.sh runs it in a phase of its
// own): its subject is a data race the program makes on purpose, a handler
// writing into a cached object while the informer and its guard read it.
// The race detector would report exactly that write.

// A handler writes into a cached pod's labels, which the informer shares
// with 18 of the pod's 19 siblings (the pod listed first keeps its own
// copy: a value seen once is not put in the table, the second equal one
// becomes the shared one). Within the guard's documented time (a round
// of the table, at least every second), an error names the field path, and
// every cached pod again equals the server's, the index serving each under
// its own labels.
func TestSharingGuardRepairsAHandlersWrite(t *testing.T) {
	s := needServer(t)
	ns := s.namespaces(t, "guard", 1)[0]
	pods := podClient{client: s.client}
	ctx := context.Background()
	const n = 20
	for i := range n {
		pod := pods.newObject(ns, fmt.Sprintf("web-%02d", i)).(*corev1.Pod)
		pod.Labels["app"] = "web"
		if _, err := pods.create(ctx, pod); err != nil {
			t.Fatalf("create: %v", err)
		}
	}
	list, watch := pods.listWatch(ns)
	lw := &kcache.ListWatch{ListWithContextFunc: kcache.ListWithContextFunc(list), WatchFuncWithContext: kcache.WatchFuncWithContext(watch)}
	byApp := func(obj any) ([]string, error) { return []string{obj.(*corev1.Pod).Labels["app"]}, nil }
	inf := kcache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, kcache.Indexers{"app": byApp})
	var once sync.Once
	if _, err := inf.AddEventHandler(kcache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		if p := obj.(*corev1.Pod); p.Name == "web-07" {
			once.Do(func() { p.Labels["app"] = "hijacked" }) // against the contract
		}
	}}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var lines []string
	logger := funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, args)
	}, funcr.Options{})
	runCtx, cancel := context.WithCancel(klog.NewContext(ctx, logger))
	done := make(chan struct{})
	go func() {
		defer close(done)
		inf.RunWithContext(runCtx)
	}()
	defer func() { cancel(); <-done }()
	waitSynced(t, "guard informer", inf.HasSynced)

	began := time.Now()
	var reported string
	for {
		mu.Lock()
		for _, l := range lines {
			if strings.Contains(l, "A cached object was modified") {
				reported = l
			}
		}
		mu.Unlock()
		if reported != "" && repaired(t, s, ns, inf) {
			break
		}
		if time.Since(began) > 30*time.Second {
			t.Fatalf("not repaired 30 s after the write; reported: %q", reported)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("reported and repaired in %v: %s", time.Since(began).Round(time.Millisecond), reported)
	for _, want := range []string{`"fieldPath"="metadata.labels"`, fmt.Sprintf(`"objects"=%d`, n-1)} {
		if !strings.Contains(reported, want) {
			t.Errorf("the error lacks %s: %s", want, reported)
		}
	}
}

// repaired reports whether every pod inf caches has the server's labels
// and version, and the "app" index serves each under its own label.
func repaired(t *testing.T, s *server, ns string, inf kcache.SharedIndexInformer) bool {
	list, err := s.client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != len(inf.GetStore().List()) {
		return false
	}
	for _, want := range list.Items {
		obj, ok, _ := inf.GetStore().GetByKey(ns + "/" + want.Name)
		if !ok {
			return false
		}
		got := obj.(*corev1.Pod)
		if got.ResourceVersion != want.ResourceVersion || fmt.Sprint(got.Labels) != fmt.Sprint(want.Labels) {
			return false
		}
	}
	web, err := inf.GetIndexer().ByIndex("app", "web")
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range web {
		if obj.(*corev1.Pod).Labels["app"] != "web" {
			return false
		}
	}
	hijacked, _ := inf.GetIndexer().ByIndex("app", "hijacked")
	return len(web) == len(list.Items) && len(hijacked) == 0
}
