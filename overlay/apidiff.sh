#!/usr/bin/env bash
# apidiff.sh OVERLAY_DIR [apidiff flags]: compares the API of an overlay's
# tools/cache with that of the client-go release it was written for (read
# from its marker), using the shared apidiff tool (APIDIFF, by
# default ../../shared/tools/apidiff beside the repository). apidiff wants a
# module with the package at its root, so the package (and the internal
# packages it imports) is copied into a scratch module that takes
# k8s.io/client-go from the overlay itself.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
overlay="$(cd "${1:?usage: apidiff.sh OVERLAY_DIR [flags]}" && pwd)"
shift
apidiff="${APIDIFF:-$here/../../shared/tools/apidiff}"
if [ ! -x "$apidiff" ]; then
  echo "apidiff.sh: no apidiff at $apidiff; set APIDIFF" >&2
  exit 2
fi
version="$(sed -n 's/^ *"clientGo": *"\([^"]*\)".*/\1/p' "$overlay/.kcache-overlay.json")"
if [ -z "$version" ]; then
  echo "apidiff.sh: $overlay has no kcache-overlay marker naming its client-go" >&2
  exit 2
fi
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

# A release whose modules need a newer Go (v0.38: go1.27.3) is compared on
# that toolchain: apidiff reads the packages that Go compiles.
toolchain="$(cd "$here" && GOWORK=off go run ./cmd/kcache-overlay -toolchain -client-go-version "$version")"
if [ -n "$toolchain" ]; then
  export GOTOOLCHAIN="$toolchain"
fi

# !!! PROXY GAP WORKAROUND (v0.38.0-beta.0) !!!
# apidiff runs `go get k8s.io/client-go/tools/cache@VERSION` in a module of
# its own, and apimachinery v0.38.0-beta.0 requires
# sigs.k8s.io/structured-merge-diff/v7 v7.0.1, which the module proxy does
# not serve (403; the overlay itself pins v7.0.0 with a replace, as
# tools/minors.sh does, but apidiff's module has no replace). For such a
# release apidiff runs with:
#   - a private GOMODCACHE (removed at the end), so that nothing below
#     reaches the shared module cache;
#   - GOPROXY=file://$scratch/gap-proxy first, which serves
#     structured-merge-diff v7.0.1 with v7.0.0's content (v7.0.0's zip
#     with its paths renamed), then the shared module cache's download
#     directory as a file proxy, then the usual proxy;
#   - GONOSUMDB for that module (its checksum cannot match the real
#     v7.0.1's).
# tools/cache's API does not depend on that module (no declaration of the
# package mentions it), so the comparison is exact; only the build of its
# dependencies sees v7.0.0's code.
gap_module=sigs.k8s.io/structured-merge-diff/v7
gap_needed=v7.0.1
gap_served=v7.0.0
if grep -Eq "^[[:space:]]*(require[[:space:]]+)?$gap_module $gap_needed\b" "$overlay/go.mod"; then
  shared_cache="$(go env GOMODCACHE)"
  proxy="$scratch/gap-proxy"
  mkdir -p "$proxy/$gap_module/@v"
  GOWORK=off GOFLAGS= go mod download "$gap_module@$gap_served" >/dev/null
  python3 - "$shared_cache/cache/download/$gap_module/@v/$gap_served.zip" "$proxy/$gap_module/@v/$gap_needed.zip" "$gap_module" "$gap_served" "$gap_needed" <<'PY'
import sys, zipfile
src, dst, mod, old, new = sys.argv[1:]
with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zout:
    for item in zin.infolist():
        zout.writestr(item.filename.replace(f"{mod}@{old}/", f"{mod}@{new}/", 1), zin.read(item.filename))
PY
  cp "$shared_cache/cache/download/$gap_module/@v/$gap_served.mod" "$proxy/$gap_module/@v/$gap_needed.mod"
  printf '{"Version":"%s"}\n' "$gap_needed" >"$proxy/$gap_module/@v/$gap_needed.info"
  printf '%s\n' "$gap_needed" >"$proxy/$gap_module/@v/list"
  echo "apidiff.sh: client-go $version: structured-merge-diff $gap_needed is served to apidiff as $gap_served's content (private module cache; see the comment in apidiff.sh)" >&2
  export GOMODCACHE="$scratch/modcache"
  export GOPROXY="file://$proxy,file://$shared_cache/cache/download,$(go env GOPROXY)"
  export GONOSUMDB="$gap_module${GONOSUMDB:+,$GONOSUMDB}"
  export GOFLAGS="${GOFLAGS:-} -modcacherw"
fi
cp "$overlay"/tools/cache/*.go "$scratch"/
# The packages under tools/cache/internal are internal to tools/cache: the
# scratch module takes its own copies of them, and the package's imports
# of them are rewritten to those copies.
if [ -d "$overlay/tools/cache/internal" ]; then
  cp -R "$overlay/tools/cache/internal" "$scratch/internal"
  sed -i 's#"k8s.io/client-go/tools/cache/internal/#"kcache.invalid/overlaycheck/internal/#' "$scratch"/*.go
fi
sed 's#^module k8s.io/client-go$#module kcache.invalid/overlaycheck#' "$overlay/go.mod" >"$scratch/go.mod"
cp "$overlay/go.sum" "$scratch/go.sum"
(cd "$scratch" && GOWORK=off go mod edit -require=k8s.io/client-go@"$version" -replace=k8s.io/client-go="$overlay")
"$apidiff" --ref-version "$version" "$@" "$scratch"
