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

// Relister forces every informer on the server to relist: it writes an
// object (so that etcd's revision moves past every resourceVersion the
// informer holds) and restarts the API server through kas's control API.
// The new server's watch cache starts at the current revision, so the
// informer's watch, resumed from its older resourceVersion, gets 410 Gone.
type Relister struct {
	Client     kubernetes.Interface
	ControlURL string // KAS_CONTROL_URL
}

// Relist does it once.
func (r Relister) Relist(ctx context.Context) error {
	if err := r.bump(ctx); err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.ControlURL+"/restart-apiserver", nil)
	if err != nil {
		return fmt.Errorf("restart API server: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("restart API server: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("restart API server: %s: %s", resp.Status, body)
	}
	return nil
}

// bump writes a ConfigMap in the default namespace.
func (r Relister) bump(ctx context.Context) error {
	cms := r.Client.CoreV1().ConfigMaps(metav1.NamespaceDefault)
	cm := &v1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-relist"},
		Data:       map[string]string{"at": strconv.FormatInt(time.Now().UnixNano(), 10)},
	}
	_, err := cms.Update(ctx, cm, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		_, err = cms.Create(ctx, cm, metav1.CreateOptions{})
	}
	if err != nil {
		return fmt.Errorf("bump etcd revision: %w", err)
	}
	return nil
}
