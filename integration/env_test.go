package integration

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// skipMessage is what every test says when no server is configured.
const skipMessage = "integration: no API server configured (KUBECONFIG and KAS_SERVER are unset); " +
	"run `make integration` at the repository root, or `kas/run.sh start && . kas/.cache/run/env` first"

// server is what the tests know about the API server under test. It is
// built once per process and shared: the tests run one after another (no
// t.Parallel), because some of them restart or pause the server.
type server struct {
	config   *rest.Config
	client   kubernetes.Interface
	dynamic  dynamic.Interface
	metadata metadata.Interface
	control  *controlClient

	// watchCache is false when kas was started with --watch-cache=false, so
	// that watches and lists go straight to etcd.
	watchCache bool
}

var (
	sharedServerOnce sync.Once
	sharedServer     *server
	sharedServerErr  error
)

// needServer returns the shared server, or skips the test when none is
// configured. A configured server that cannot be reached fails the test.
func needServer(t testing.TB) *server {
	t.Helper()
	kubeconfig, apiServer := os.Getenv("KUBECONFIG"), os.Getenv("KAS_SERVER")
	if kubeconfig == "" || apiServer == "" {
		t.Skip(skipMessage)
	}
	sharedServerOnce.Do(func() {
		sharedServer, sharedServerErr = connect(kubeconfig, apiServer, os.Getenv("KAS_CONTROL_URL"))
	})
	if sharedServerErr != nil {
		t.Fatalf("integration: %v", sharedServerErr)
	}
	return sharedServer
}

// connect builds the clients and checks that the server answers.
func connect(kubeconfig, apiServer, controlURL string) (*server, error) {
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig %s: %w", kubeconfig, err)
	}
	if strings.TrimSuffix(config.Host, "/") != strings.TrimSuffix(apiServer, "/") {
		return nil, fmt.Errorf("kubeconfig %s points at %s, but KAS_SERVER is %s", kubeconfig, config.Host, apiServer)
	}
	// The workloads write thousands of objects: no client-side throttling.
	config.QPS = -1
	config.Burst = 0
	config.UserAgent = "kcache-integration"
	s := &server{config: config, watchCache: !strings.Contains(os.Getenv("KAS_APISERVER_ARGS"), "--watch-cache=false")}
	if s.client, err = kubernetes.NewForConfig(config); err != nil {
		return nil, fmt.Errorf("build clientset: %w", err)
	}
	if s.dynamic, err = dynamic.NewForConfig(config); err != nil {
		return nil, fmt.Errorf("build dynamic client: %w", err)
	}
	if s.metadata, err = metadata.NewForConfig(config); err != nil {
		return nil, fmt.Errorf("build metadata client: %w", err)
	}
	if controlURL != "" {
		s.control = &controlClient{baseURL: controlURL}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := s.client.CoreV1().Namespaces().Get(ctx, metav1.NamespaceDefault, metav1.GetOptions{}); err != nil {
		return nil, fmt.Errorf("API server %s does not answer: %w", apiServer, err)
	}
	return s, nil
}

// needControl returns the control API client, or skips the test when
// KAS_CONTROL_URL is unset (a server not started by kas).
func (s *server) needControl(t testing.TB) *controlClient {
	t.Helper()
	if s.control == nil {
		t.Skip("integration: KAS_CONTROL_URL is unset, so the API server cannot be restarted or compacted; start it with kas/run.sh")
	}
	return s.control
}

// randomSuffix returns 8 random hex digits for unique names.
func randomSuffix() string {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return hex.EncodeToString(b[:])
}

// namespaces creates n fresh namespaces whose names start with prefix and
// registers their cleanup: every Pod and ConfigMap in them is deleted (no
// namespace controller runs, so deleting a namespace would not remove its
// objects), then the namespace itself.
func (s *server) namespaces(t testing.TB, prefix string, n int) []string {
	t.Helper()
	ctx := context.Background()
	id := randomSuffix()
	names := make([]string, n)
	for i := range names {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
			Name:   fmt.Sprintf("%s-%s-%d", prefix, id, i),
			Labels: map[string]string{testLabel: "true"},
		}}
		if _, err := s.client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create namespace %s: %v", ns.Name, err)
		}
		names[i] = ns.Name
	}
	t.Cleanup(func() {
		for _, ns := range names {
			s.emptyNamespace(t, ns)
		}
	})
	return names
}

// emptyNamespace deletes the objects the tests create in ns, then ns.
func (s *server) emptyNamespace(t testing.TB, ns string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	now := int64(0)
	opts := metav1.DeleteOptions{GracePeriodSeconds: &now}
	if err := s.client.CoreV1().Pods(ns).DeleteCollection(ctx, opts, metav1.ListOptions{}); err != nil {
		t.Errorf("cleanup: delete pods in %s: %v", ns, err)
	}
	if err := s.client.CoreV1().ConfigMaps(ns).DeleteCollection(ctx, opts, metav1.ListOptions{}); err != nil {
		t.Errorf("cleanup: delete configmaps in %s: %v", ns, err)
	}
	err := s.client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("cleanup: delete namespace %s: %v", ns, err)
	}
}

// testLabel marks every namespace and object the tests create.
const testLabel = "kcache.io/integration"
