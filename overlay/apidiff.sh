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
