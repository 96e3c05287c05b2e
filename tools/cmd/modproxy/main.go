// Command modproxy writes a directory that serves modules of this
// repository, at one version, to the go command as a module proxy
// (GOPROXY=file://DIR): for each module, the @v/list, .info, .mod and .zip
// files the GOPROXY protocol names, the zip made by golang.org/x/mod/zip
// from the module's files in the working tree.
//
//	modproxy -repo ROOT -version v0.38.0 -o DIR MODDIR...
//
// Each MODDIR is a module's directory relative to ROOT ("." for the root
// module). A module's files are those git tracks or would track (git
// ls-files: committed, staged, changed and new files, never ignored ones
// such as bin/), minus the files of modules nested in it, as a module zip
// leaves them out. Nothing depends on git tags: the version is the flag's.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
	modzip "golang.org/x/mod/zip"
)

func main() {
	repo := flag.String("repo", ".", "the repository's root")
	version := flag.String("version", "", "the version to serve every module at (a semantic version, e.g. v0.38.0)")
	out := flag.String("o", "", "the proxy directory to write (created if missing)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: modproxy -repo ROOT -version VERSION -o DIR MODDIR...\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *out == "" || flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*repo, *version, *out, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "modproxy:", err)
		os.Exit(1)
	}
}

// run serves each module of dirs (relative to repo) at version from out.
func run(repo, version, out string, dirs []string) error {
	if !semver.IsValid(version) || semver.Canonical(version) != version || semver.Build(version) != "" {
		return fmt.Errorf("version %q is not a canonical semantic version such as v0.38.0", version)
	}
	files, err := trackedFiles(repo)
	if err != nil {
		return err
	}
	for _, dir := range dirs {
		mod, err := serveModule(repo, filepath.ToSlash(filepath.Clean(dir)), version, files, out)
		if err != nil {
			return fmt.Errorf("module in %s: %w", dir, err)
		}
		fmt.Printf("modproxy: %s@%s from %s\n", mod, version, dir)
	}
	return nil
}

// trackedFiles lists the files of the working tree git tracks or would
// track, relative to repo, slash-separated.
func trackedFiles(repo string) ([]string, error) {
	cmd := exec.Command("git", "-C", repo, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("listing the files of %s with git ls-files: %w: %s", repo, err, strings.TrimSpace(stderr.String()))
	}
	var files []string
	for name := range strings.SplitSeq(strings.TrimSuffix(string(b), "\x00"), "\x00") {
		if name != "" {
			files = append(files, name)
		}
	}
	return files, nil
}

// serveModule writes the proxy files of the module in dir and returns its
// path.
func serveModule(repo, dir, version string, files []string, out string) (string, error) {
	gomod, err := os.ReadFile(filepath.Join(repo, dir, "go.mod"))
	if err != nil {
		return "", err
	}
	mf, err := modfile.ParseLax("go.mod", gomod, nil)
	if err != nil {
		return "", err
	}
	if mf.Module == nil {
		return "", errors.New("go.mod has no module line")
	}
	modPath := mf.Module.Mod.Path
	escaped, err := module.EscapePath(modPath)
	if err != nil {
		return "", err
	}
	vdir := filepath.Join(out, filepath.FromSlash(escaped), "@v")
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		return "", err
	}
	mv := module.Version{Path: modPath, Version: version}
	zf, err := os.Create(filepath.Join(vdir, version+".zip"))
	if err != nil {
		return "", err
	}
	err = modzip.Create(zf, mv, moduleFiles(repo, dir, files))
	if cerr := zf.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("zipping %s: %w", mv, err)
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, time.Now().UTC().Truncate(time.Second)})
	if err != nil {
		return "", err
	}
	for name, data := range map[string][]byte{version + ".info": info, version + ".mod": gomod, "list": []byte(version + "\n")} {
		if err := os.WriteFile(filepath.Join(vdir, name), data, 0o644); err != nil {
			return "", err
		}
	}
	return modPath, nil
}

// moduleFiles returns the files of the module in dir: those of files under
// dir that are not in a nested module and still exist as regular files.
func moduleFiles(repo, dir string, files []string) []modzip.File {
	prefix := ""
	if dir != "." {
		prefix = dir + "/"
	}
	nested := map[string]bool{}
	for _, f := range files {
		if rel, ok := strings.CutPrefix(f, prefix); ok && path.Base(rel) == "go.mod" && rel != "go.mod" {
			nested[path.Dir(rel)] = true
		}
	}
	var out []modzip.File
	for _, f := range files {
		rel, ok := strings.CutPrefix(f, prefix)
		if !ok || inNested(rel, nested) {
			continue
		}
		full := filepath.Join(repo, filepath.FromSlash(f))
		if fi, err := os.Lstat(full); err != nil || !fi.Mode().IsRegular() {
			continue // deleted in the working tree, or not a plain file
		}
		out = append(out, treeFile{rel: rel, full: full})
	}
	return out
}

// inNested reports whether rel lies in one of the nested module
// directories.
func inNested(rel string, nested map[string]bool) bool {
	for d := path.Dir(rel); d != "."; d = path.Dir(d) {
		if nested[d] {
			return true
		}
	}
	return false
}

// treeFile is a file of the working tree as golang.org/x/mod/zip reads it.
type treeFile struct {
	rel  string // path in the module, slash-separated
	full string // path on disk
}

func (f treeFile) Path() string                 { return f.rel }
func (f treeFile) Lstat() (os.FileInfo, error)  { return os.Lstat(f.full) }
func (f treeFile) Open() (io.ReadCloser, error) { return os.Open(f.full) }
