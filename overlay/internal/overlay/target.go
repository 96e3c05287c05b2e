package overlay

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// MarkerFile is the file, at the root of every module this tool writes,
// that records how it was made. Its presence is what lets a later run with
// Force replace the directory.
const MarkerFile = ".kcache-overlay.json"

// generatorName is the Generator recorded in every marker.
const generatorName = "kcache-overlay"

// Marker is the content of MarkerFile.
type Marker struct {
	// Generator is always "kcache-overlay".
	Generator string `json:"generator"`
	// Kcache is the kcache version the overlay was made from (a module
	// version or "devel <git describe>").
	Kcache string `json:"kcache"`
	// KcacheSource says where that source was found.
	KcacheSource string `json:"kcacheSource"`
	// ClientGo is the client-go version copied.
	ClientGo string `json:"clientGo"`
	// Generated lists the files written or replaced by the tool (slash
	// paths relative to the module root); every other file is client-go's.
	Generated []string `json:"generated"`
	// Adapted lists how kcache's sources were changed to present this
	// release's API (empty for the newest supported minor).
	Adapted []string `json:"adapted,omitempty"`
	// RequirementsChanged lists go.mod requirements raised for kcache.
	RequirementsChanged []string `json:"requirementsChanged,omitempty"`
}

// targetState is what is at the target path before writing.
type targetState int

const (
	targetAbsent  targetState = iota // nothing there
	targetEmpty                      // an empty directory
	targetOverlay                    // a directory this tool wrote, and Force is set
)

// inspectTarget decides whether dir may be written, without changing it.
func inspectTarget(dir string, force bool) (targetState, error) {
	info, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return targetAbsent, nil
	}
	if err != nil {
		return 0, fmt.Errorf("target %s: %w", dir, err)
	}
	if !info.IsDir() {
		return 0, fmt.Errorf("target %s exists and is not a directory; refusing to overwrite it", dir)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("target %s: %w", dir, err)
	}
	if len(entries) == 0 {
		return targetEmpty, nil
	}
	m, err := readMarker(dir)
	if err != nil {
		return 0, fmt.Errorf("target %s exists and was not written by kcache-overlay (%w); refusing to overwrite it", dir, err)
	}
	if !force {
		return 0, fmt.Errorf("target %s holds an overlay written earlier (kcache %s, client-go %s); pass -force to replace it", dir, m.Kcache, m.ClientGo)
	}
	return targetOverlay, nil
}

// readMarker reads and checks dir's marker file.
func readMarker(dir string) (Marker, error) {
	data, err := os.ReadFile(filepath.Join(dir, MarkerFile))
	if err != nil {
		return Marker{}, fmt.Errorf("no readable %s: %w", MarkerFile, err)
	}
	var m Marker
	if err := json.Unmarshal(data, &m); err != nil {
		return Marker{}, fmt.Errorf("%s is not valid: %w", MarkerFile, err)
	}
	if m.Generator != generatorName {
		return Marker{}, fmt.Errorf("%s names generator %q, not %q", MarkerFile, m.Generator, generatorName)
	}
	return m, nil
}

// writeMarker writes m into dir.
func writeMarker(dir string, m Marker) error {
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding %s: %w", MarkerFile, err)
	}
	if err := os.WriteFile(filepath.Join(dir, MarkerFile), append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", MarkerFile, err)
	}
	return nil
}

// newStagingDir makes an empty directory beside target (same file system,
// so the final rename is atomic), creating target's parent if needed.
func newStagingDir(target string) (string, error) {
	parent := filepath.Dir(target)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", fmt.Errorf("creating %s: %w", parent, err)
	}
	dir, err := os.MkdirTemp(parent, "."+filepath.Base(target)+".kcache-overlay-")
	if err != nil {
		return "", fmt.Errorf("creating a staging directory beside %s: %w", target, err)
	}
	return dir, nil
}

// replaceTarget moves the finished staging directory to target. An
// overlay being replaced is first moved aside and put back if the move
// fails, so target is always either the old or the new tree.
func replaceTarget(staging, target string, state targetState) error {
	switch state {
	case targetAbsent:
	case targetEmpty:
		if err := os.Remove(target); err != nil {
			return fmt.Errorf("replacing empty directory %s: %w", target, err)
		}
	case targetOverlay:
		aside := staging + ".old"
		if err := os.Rename(target, aside); err != nil {
			return fmt.Errorf("moving the previous overlay %s aside: %w", target, err)
		}
		if err := os.Rename(staging, target); err != nil {
			if back := os.Rename(aside, target); back != nil {
				return fmt.Errorf("moving the new overlay to %s: %w (and restoring the previous one from %s failed: %v)", target, err, aside, back)
			}
			return fmt.Errorf("moving the new overlay to %s: %w", target, err)
		}
		if err := os.RemoveAll(aside); err != nil {
			return fmt.Errorf("removing the previous overlay (moved to %s): %w", aside, err)
		}
		return nil
	}
	if err := os.Rename(staging, target); err != nil {
		return fmt.Errorf("moving the new overlay to %s: %w", target, err)
	}
	return nil
}
