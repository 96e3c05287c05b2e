package launcher

import (
	"fmt"
	"os"
	"path/filepath"
)

// layout names the files of one launcher run. Everything lives below root, a
// fresh temporary directory that is removed when the launcher stops; only an
// etcd data directory chosen with Options.DataDir lives elsewhere and is kept.
type layout struct {
	root string
	// etcdData is the etcd data directory: below root unless the user chose
	// one.
	etcdData string
}

// newLayout creates the run directory. keepData, when not empty, is the
// etcd data directory to use (and keep) instead of a temporary one.
func newLayout(keepData string) (layout, error) {
	root, err := os.MkdirTemp("", "kas-run-")
	if err != nil {
		return layout{}, fmt.Errorf("create run directory: %w", err)
	}
	l := layout{root: root, etcdData: filepath.Join(root, "etcd-data")}
	if keepData != "" {
		abs, err := filepath.Abs(keepData)
		if err != nil {
			l.remove()
			return layout{}, fmt.Errorf("resolve data directory %q: %w", keepData, err)
		}
		l.etcdData = abs
	}
	if err := os.MkdirAll(l.etcdData, 0o700); err != nil {
		l.remove()
		return layout{}, fmt.Errorf("create etcd data directory: %w", err)
	}
	return l, nil
}

// remove deletes the run directory (and with it a temporary etcd data
// directory). A user-chosen data directory is left alone.
func (l layout) remove() error {
	if err := os.RemoveAll(l.root); err != nil {
		return fmt.Errorf("remove run directory %s: %w", l.root, err)
	}
	return nil
}

// etcdSocket is etcd's client endpoint. A unix socket needs no port; the run
// directory is short-lived and private, and its path stays well below the
// 108-byte limit of socket names as long as TMPDIR is reasonable.
func (l layout) etcdSocket() string { return filepath.Join(l.root, "etcd.sock") }

func (l layout) caCert() string            { return filepath.Join(l.root, "ca.crt") }
func (l layout) servingCert() string       { return filepath.Join(l.root, "apiserver.crt") }
func (l layout) servingKey() string        { return filepath.Join(l.root, "apiserver.key") }
func (l layout) serviceAccountKey() string { return filepath.Join(l.root, "sa.key") }
func (l layout) tokenFile() string         { return filepath.Join(l.root, "tokens.csv") }
