package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Relister forces every informer on the server to relist, the way an API
// server upgrade does in production: it writes an object (so that etcd's
// revision moves past every resourceVersion the informer holds), compacts
// etcd's history up to that write, and restarts the API server through
// kas's control API. The new server's watch cache starts at the current
// revision and etcd has forgotten older ones, so the informer's watch,
// resumed from its older resourceVersion, gets 410 Gone.
type Relister struct {
	Client     kubernetes.Interface
	ControlURL string // KAS_CONTROL_URL
}

// Relist does it once and returns the resourceVersion of its write: the
// relist's list is at that version or a newer one.
func (r Relister) Relist(ctx context.Context) (uint64, error) {
	rv, err := r.bump(ctx)
	if err != nil {
		return 0, err
	}
	if err := r.control(ctx, "/compact", "compact etcd"); err != nil {
		return 0, err
	}
	if err := r.control(ctx, "/restart-apiserver", "restart API server"); err != nil {
		return 0, err
	}
	return rv, nil
}

// control posts to kas's control API at path; what names the step in
// errors.
func (r Relister) control(ctx context.Context, path, what string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.ControlURL+path, nil)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s: %s", what, resp.Status, body)
	}
	return nil
}

// bump writes a ConfigMap in the default namespace and returns the
// resourceVersion of the write.
func (r Relister) bump(ctx context.Context) (uint64, error) {
	cms := r.Client.CoreV1().ConfigMaps(metav1.NamespaceDefault)
	cm := &v1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-relist"},
		Data:       map[string]string{"at": strconv.FormatInt(time.Now().UnixNano(), 10)},
	}
	written, err := cms.Update(ctx, cm, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		written, err = cms.Create(ctx, cm, metav1.CreateOptions{})
	}
	if err != nil {
		return 0, fmt.Errorf("bump etcd revision: %w", err)
	}
	rv, err := strconv.ParseUint(written.ResourceVersion, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("bump etcd revision: resourceVersion %q: %w", written.ResourceVersion, err)
	}
	return rv, nil
}
