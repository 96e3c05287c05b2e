package launcher

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3client"
)

// compactRevisionKey is the etcd key through which kube-apiserver instances
// tell each other about compactions (see k8s.io/apiserver/pkg/storage/etcd3).
// Every API server watches it and, when it changes, also drops the parts of its
// watch cache older than the revision stored there.
const compactRevisionKey = "compact_rev_key"

// etcdServer is an embedded single-member etcd serving on a unix socket.
type etcdServer struct {
	embedded *embed.Etcd
	// client talks to the server in-process, without the socket.
	client   *clientv3.Client
	endpoint string
}

// etcdConfig describes the embedded etcd of one run.
type etcdConfig struct {
	dataDir string
	socket  string
	// logOutput is "stderr" or a file path, in etcd's LogOutputs syntax.
	logOutput string
	// quota is the backend quota in bytes; 0 keeps etcd's default.
	quota int64
}

// startEtcd starts etcd and waits until it serves, or until ctx ends.
func startEtcd(ctx context.Context, c etcdConfig) (*etcdServer, error) {
	endpoint := "unix://" + c.socket
	clientURL, err := url.Parse(endpoint)
	if err != nil {
		return nil, fmt.Errorf("parse etcd endpoint %q: %w", endpoint, err)
	}
	// etcd insists on a host:port advertised client URL, which a unix socket
	// lacks. Clients here dial the socket directly and never ask etcd for its
	// member list, so this address is only a label.
	advertiseURL := url.URL{Scheme: "http", Host: "127.0.0.1:2379"}
	// The peer listener is required by etcd even for a single member; the
	// kernel picks its port and nothing ever dials it.
	peerURL := url.URL{Scheme: "http", Host: "127.0.0.1:0"}

	cfg := embed.NewConfig()
	cfg.Dir = c.dataDir
	cfg.ListenClientUrls = []url.URL{*clientURL}
	cfg.AdvertiseClientUrls = []url.URL{advertiseURL}
	cfg.ListenPeerUrls = []url.URL{peerURL}
	cfg.LogLevel = "error"
	cfg.LogOutputs = []string{c.logOutput}
	// Test data is worth less than the time fsync costs on a busy disk.
	cfg.UnsafeNoFsync = true
	if c.quota > 0 {
		cfg.QuotaBackendBytes = c.quota
	}

	embedded, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("start embedded etcd: %w", err)
	}
	select {
	case <-embedded.Server.ReadyNotify():
	case err := <-embedded.Err():
		closeEtcd(embedded, 10*time.Second)
		return nil, fmt.Errorf("embedded etcd failed while starting: %w", err)
	case <-ctx.Done():
		closeEtcd(embedded, 10*time.Second)
		return nil, fmt.Errorf("embedded etcd not ready: %w", context.Cause(ctx))
	}
	return &etcdServer{
		embedded: embedded,
		client:   v3client.New(embedded.Server),
		endpoint: endpoint,
	}, nil
}

// stop shuts etcd down, giving up after timeout.
func (s *etcdServer) stop(timeout time.Duration) error {
	s.client.Close()
	if !closeEtcd(s.embedded, timeout) {
		return fmt.Errorf("stop embedded etcd: still closing after %v", timeout)
	}
	return nil
}

// closeEtcd closes e and reports whether that finished within timeout.
func closeEtcd(e *embed.Etcd, timeout time.Duration) bool {
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.Close()
	}()
	select {
	case <-done:
		return true
	case <-time.After(timeout):
		return false
	}
}

// revision returns etcd's current revision, the resourceVersion of the newest
// write.
func (s *etcdServer) revision(ctx context.Context) (int64, error) {
	resp, err := s.client.Get(ctx, compactRevisionKey)
	if err != nil {
		return 0, fmt.Errorf("read etcd revision: %w", err)
	}
	return resp.Header.Revision, nil
}

// errCompactRevision marks a compaction revision etcd refuses: already
// compacted, or not written yet.
var errCompactRevision = errors.New("bad compaction revision")

// compact discards etcd's history before revision (the current revision when
// revision is 0) and returns the revision used. Afterwards etcd answers reads
// and watches at older revisions with "required revision has been compacted",
// which the API server turns into 410 Gone. The compaction is also announced
// under compactRevisionKey, so running API servers trim their watch caches as
// they do after their own periodic compactions.
func (s *etcdServer) compact(ctx context.Context, revision int64) (int64, error) {
	if revision == 0 {
		current, err := s.revision(ctx)
		if err != nil {
			return 0, err
		}
		revision = current
	}
	if _, err := s.client.Put(ctx, compactRevisionKey, strconv.FormatInt(revision, 10)); err != nil {
		return 0, fmt.Errorf("announce compaction at revision %d: %w", revision, err)
	}
	_, err := s.client.Compact(ctx, revision, clientv3.WithCompactPhysical())
	if err != nil {
		if isRevisionRefusal(err) {
			return 0, fmt.Errorf("compact etcd at revision %d: %w: %w", revision, errCompactRevision, err)
		}
		return 0, fmt.Errorf("compact etcd at revision %d: %w", revision, err)
	}
	return revision, nil
}

// isRevisionRefusal reports whether err is etcd refusing the revision itself
// (already compacted, or not written yet) rather than failing.
func isRevisionRefusal(err error) bool {
	return errors.Is(err, rpctypes.ErrCompacted) || errors.Is(err, rpctypes.ErrFutureRev)
}
