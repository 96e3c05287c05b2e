package overlay

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// goTool runs the go command with the caller's environment plus extra
// entries. GOWORK is switched off so a go.work around the user's directory
// cannot change which modules are used.
type goTool struct {
	bin string
	env []string
}

func newGoTool(o *Options) goTool {
	bin := o.Go
	if bin == "" {
		bin = "go"
	}
	return goTool{bin: bin, env: o.Env}
}

// run runs go with args in dir and returns its standard output. A failure
// is returned with the command and its standard error.
func (g goTool) run(ctx context.Context, dir string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, g.bin, args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "GOWORK=off"), g.env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		return out, fmt.Errorf("go %s (in %s): %w: %s", strings.Join(args, " "), dir, err, msg)
	}
	return out, nil
}

// moduleInfo is the part of `go mod download -json` this package reads.
type moduleInfo struct {
	Path    string
	Version string
	Dir     string
	GoMod   string
	// Sum and GoModSum are the go.sum checksums of the module and its
	// go.mod.
	Sum, GoModSum string
	Error         string
}

// download makes path@version available in the module cache (through the
// module proxy when missing) and returns where it is. query may be a
// version or a revision the proxy can resolve.
func (g goTool) download(ctx context.Context, path, query string) (moduleInfo, error) {
	// Run outside any module, so the user's go.mod cannot interfere.
	dir, err := os.MkdirTemp("", "kcache-overlay-download-")
	if err != nil {
		return moduleInfo{}, fmt.Errorf("downloading %s@%s: %w", path, query, err)
	}
	defer os.RemoveAll(dir)
	out, runErr := g.run(ctx, dir, "mod", "download", "-json", path+"@"+query)
	var info moduleInfo
	if err := json.Unmarshal(out, &info); err != nil && runErr == nil {
		return moduleInfo{}, fmt.Errorf("downloading %s@%s: reading go mod download output: %w", path, query, err)
	}
	switch {
	case info.Error != "":
		return moduleInfo{}, fmt.Errorf("downloading %s@%s: %w", path, query, errors.New(info.Error))
	case runErr != nil:
		return moduleInfo{}, fmt.Errorf("downloading %s@%s: %w", path, query, runErr)
	case info.Dir == "":
		return moduleInfo{}, fmt.Errorf("downloading %s@%s: go mod download reported no directory", path, query)
	}
	return info, nil
}
