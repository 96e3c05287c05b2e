package launcher

import (
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

func TestEtcdCompact(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	etcd, err := startEtcd(ctx, etcdConfig{
		dataDir:   filepath.Join(dir, "data"),
		socket:    filepath.Join(dir, "etcd.sock"),
		logOutput: filepath.Join(dir, "etcd.log"),
	})
	if err != nil {
		t.Fatalf("startEtcd: %v", err)
	}
	defer etcd.stop(10 * time.Second)

	for i := range 3 {
		if _, err := etcd.client.Put(ctx, "/registry/k", strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	before, err := etcd.revision(ctx)
	if err != nil {
		t.Fatal(err)
	}

	compacted, err := etcd.compact(ctx, 0)
	if err != nil {
		t.Fatalf("compact at the current revision: %v", err)
	}
	if compacted != before {
		t.Errorf("compacted at %d, want the current revision %d", compacted, before)
	}
	announced, err := etcd.client.Get(ctx, compactRevisionKey)
	if err != nil || len(announced.Kvs) != 1 || string(announced.Kvs[0].Value) != strconv.FormatInt(compacted, 10) {
		t.Errorf("%s = %v (err %v), want %d", compactRevisionKey, announced.Kvs, err, compacted)
	}
	if _, err := etcd.client.Get(ctx, "/registry/k", clientv3.WithRev(compacted-1)); err == nil {
		t.Errorf("read at revision %d after compacting at %d succeeded", compacted-1, compacted)
	}

	tests := []struct {
		name     string
		revision int64
	}{
		{name: "already compacted", revision: compacted},
		{name: "future", revision: compacted + 1000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := etcd.compact(ctx, tc.revision); !errors.Is(err, errCompactRevision) {
				t.Errorf("compact(%d) = %v, want errCompactRevision", tc.revision, err)
			}
		})
	}
}
