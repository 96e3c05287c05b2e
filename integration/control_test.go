package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// controlClient talks to kas's control API (see kas/README.md): it restarts
// the API server and compacts etcd.
type controlClient struct {
	baseURL string
}

// controlTimeout bounds one control request; a restart waits for readiness.
const controlTimeout = 3 * time.Minute

// post sends POST path and decodes the JSON answer into out (if not nil).
func (c *controlClient) post(ctx context.Context, path string, out any) error {
	ctx, cancel := context.WithTimeout(ctx, controlTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.baseURL+path, nil)
	if err != nil {
		return fmt.Errorf("control %s: %w", path, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("control %s: %w", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("control %s: read answer: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("control %s: %s: %s", path, resp.Status, body)
	}
	if out != nil {
		if err := json.Unmarshal(body, out); err != nil {
			return fmt.Errorf("control %s: decode %q: %w", path, body, err)
		}
	}
	return nil
}

// restartAPIServer stops the API server and starts a new one on the same
// socket and etcd; it returns once the new one is ready.
func (c *controlClient) restartAPIServer(ctx context.Context) error {
	return c.post(ctx, "/restart-apiserver", nil)
}

// compact compacts etcd at its current revision and returns that revision.
func (c *controlClient) compact(ctx context.Context) (int64, error) {
	var answer struct {
		Revision int64 `json:"revision"`
	}
	if err := c.post(ctx, "/compact", &answer); err != nil {
		return 0, err
	}
	return answer.Revision, nil
}
