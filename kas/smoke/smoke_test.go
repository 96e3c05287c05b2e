// Package smoke checks the kas launcher from the outside: it runs the real
// binary, talks to the API server with client-go and drives the control API.
package smoke

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

const namespace = "default"

func TestLauncherLifecycle(t *testing.T) {
	bin := launcherBinary(t)
	dir := t.TempDir()
	tmpDir := filepath.Join(dir, "tmp") // the launcher's TMPDIR, must end up empty
	if err := os.Mkdir(tmpDir, 0o755); err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	began := time.Now()
	l := startLauncher(t, bin, tmpDir, kubeconfig, filepath.Join(dir, "kas.log"))
	t.Logf("ready after %v (launcher says took=%s): %v", time.Since(began).Round(time.Millisecond), l.ready["took"], l.ready)
	if diff := cmp.Diff(kubeconfig, l.ready["kubeconfig"]); diff != "" {
		t.Errorf("kubeconfig path in the ready line (-want +got):\n%s", diff)
	}
	control := l.ready["control"]

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	client := newClient(t, kubeconfig)

	createObjects(ctx, t, client)
	cmList := expectObjects(ctx, t, client, "before any restart")
	oldRV := cmList.ResourceVersion
	checkWatchList(ctx, t, client)

	// Compaction alone: etcd drops the history, and the running API server
	// learns about it through compact_rev_key and stops serving old
	// revisions from its watch cache.
	touchConfigMap(ctx, t, client)
	compacted := postJSON[struct{ Revision int64 }](t, control+"/compact")
	t.Logf("compacted at revision %d", compacted.Revision)
	waitGone(ctx, t, "exact list at the pre-compaction revision", func() error {
		_, err := client.CoreV1().ConfigMaps(namespace).List(ctx, metav1.ListOptions{
			ResourceVersion: oldRV, ResourceVersionMatch: metav1.ResourceVersionMatchExact,
		})
		return err
	})

	// Restart: same URL and credentials, data kept, watch cache rebuilt.
	before := getJSON[statusAnswer](t, control+"/status")
	restarted := postJSON[struct {
		Restarts int
		PID      int
		Took     string
	}](t, control+"/restart-apiserver")
	t.Logf("restart took %s", restarted.Took)
	if restarted.Restarts != 1 || restarted.PID == before.APIServer.PID {
		t.Errorf("after restart: restarts=%d pid=%d, want restarts=1 and a pid other than %d",
			restarted.Restarts, restarted.PID, before.APIServer.PID)
	}
	expectObjects(ctx, t, client, "after the restart")
	waitGone(ctx, t, "watch from the pre-compaction revision", func() error {
		w, err := client.CoreV1().ConfigMaps(namespace).Watch(ctx, metav1.ListOptions{ResourceVersion: oldRV})
		if err != nil {
			return err
		}
		defer w.Stop()
		return firstWatchError(ctx, w)
	})
	postJSON[struct{ Revision int64 }](t, control+"/compact")

	if err := l.stop(t); err != nil {
		t.Errorf("launcher exit after SIGTERM: %v, want status 0\n%s", err, tail(l.logFile))
	}
	expectCleanedUp(t, tmpDir, kubeconfig)
}

func newClient(t *testing.T, kubeconfig string) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatalf("load kubeconfig: %v", err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	return client
}

func createObjects(ctx context.Context, t *testing.T, client kubernetes.Interface) {
	t.Helper()
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "smoke-cm"},
		Data:       map[string]string{"step": "created"},
	}
	if _, err := client.CoreV1().ConfigMaps(namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ConfigMap: %v", err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "smoke-pod"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "example.invalid/none"}}},
	}
	if _, err := client.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create Pod (is ServiceAccount admission off?): %v", err)
	}
}

// expectObjects lists both kinds and checks that the smoke objects are there;
// it returns the ConfigMap list.
func expectObjects(ctx context.Context, t *testing.T, client kubernetes.Interface, when string) *corev1.ConfigMapList {
	t.Helper()
	cms, err := client.CoreV1().ConfigMaps(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list ConfigMaps %s: %v", when, err)
	}
	pods, err := client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list Pods %s: %v", when, err)
	}
	var names []string
	for _, cm := range cms.Items {
		names = append(names, "ConfigMap/"+cm.Name)
	}
	for _, pod := range pods.Items {
		names = append(names, "Pod/"+pod.Name)
	}
	if diff := cmp.Diff([]string{"ConfigMap/smoke-cm", "Pod/smoke-pod"}, names); diff != "" {
		t.Fatalf("objects %s (-want +got):\n%s", when, diff)
	}
	return cms
}

func touchConfigMap(ctx context.Context, t *testing.T, client kubernetes.Interface) {
	t.Helper()
	cm, err := client.CoreV1().ConfigMaps(namespace).Get(ctx, "smoke-cm", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get ConfigMap: %v", err)
	}
	cm.Data["step"] = "updated"
	if _, err := client.CoreV1().ConfigMaps(namespace).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update ConfigMap: %v", err)
	}
}

// checkWatchList opens a streaming list (sendInitialEvents=true) and expects
// the smoke ConfigMap followed by the end-of-initial-events bookmark.
func checkWatchList(ctx context.Context, t *testing.T, client kubernetes.Interface) {
	t.Helper()
	yes := true
	w, err := client.CoreV1().ConfigMaps(namespace).Watch(ctx, metav1.ListOptions{
		SendInitialEvents:    &yes,
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		AllowWatchBookmarks:  true,
	})
	if err != nil {
		t.Fatalf("streaming list: %v", err)
	}
	defer w.Stop()
	var got []string
	timeout := time.After(30 * time.Second)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("streaming list closed early; events so far %v", got)
			}
			meta, err := metaOf(ev.Object)
			if err != nil {
				t.Fatalf("streaming list event %s: %v", ev.Type, err)
			}
			if ev.Type == watch.Bookmark && meta.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true" {
				if !slices.Contains(got, "ADDED smoke-cm") {
					t.Errorf("streaming list initial events %v lack ADDED smoke-cm", got)
				}
				return
			}
			got = append(got, fmt.Sprintf("%s %s", ev.Type, meta.GetName()))
		case <-timeout:
			t.Fatalf("no end-of-initial-events bookmark after 30s; events %v", got)
		}
	}
}

func metaOf(obj any) (metav1.Object, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("object %T has no metadata", obj)
	}
	return m, nil
}

// firstWatchError returns the error carried by the first event of w, or an
// error saying that the first event was not an error.
func firstWatchError(ctx context.Context, w watch.Interface) error {
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			return fmt.Errorf("watch closed without an event")
		}
		if ev.Type != watch.Error {
			return fmt.Errorf("watch delivered %s instead of an error", ev.Type)
		}
		status, ok := ev.Object.(*metav1.Status)
		if !ok {
			return fmt.Errorf("watch error event holds %T", ev.Object)
		}
		return &apierrors.StatusError{ErrStatus: *status}
	case <-ctx.Done():
		return ctx.Err()
	}
}

// waitGone polls op until it fails with 410 Gone (the API server's answer
// for compacted or too old resource versions).
func waitGone(ctx context.Context, t *testing.T, what string, op func() error) {
	t.Helper()
	began := time.Now()
	var last error
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		last = op()
		return apierrors.IsResourceExpired(last) || apierrors.IsGone(last), nil
	})
	if err != nil {
		t.Fatalf("%s: no 410 Gone within a minute; last result: %v", what, last)
	}
	t.Logf("%s: 410 Gone after %v: %v", what, time.Since(began).Round(time.Millisecond), last)
}

func expectCleanedUp(t *testing.T, tmpDir, kubeconfig string) {
	t.Helper()
	entries, err := os.ReadDir(tmpDir)
	if err != nil {
		t.Fatalf("read launcher TMPDIR: %v", err)
	}
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	if len(left) > 0 {
		t.Errorf("launcher left %v in its TMPDIR %s", left, tmpDir)
	}
	if _, err := os.Stat(kubeconfig); !os.IsNotExist(err) {
		t.Errorf("kubeconfig %s still there after stop (stat: %v)", kubeconfig, err)
	}
}

// statusAnswer is the part of GET /status the test reads.
type statusAnswer struct {
	APIServer struct {
		Running bool
		PID     int
	}
}

func getJSON[T any](t *testing.T, url string) T {
	t.Helper()
	return doJSON[T](t, http.MethodGet, url)
}

func postJSON[T any](t *testing.T, url string) T {
	t.Helper()
	return doJSON[T](t, http.MethodPost, url)
}

func doJSON[T any](t *testing.T, method, url string) T {
	t.Helper()
	var out T
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	resp, err := (&http.Client{Timeout: 5 * time.Minute}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s %s: %s: %s", method, url, resp.Status, body)
	}
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatalf("%s %s: decode %q: %v", method, url, body, err)
	}
	return out
}
