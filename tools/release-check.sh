#!/usr/bin/env bash
# release-check.sh: `make release-check`. Checks that a module outside this
# repository can fetch every user-facing module at the release version
# recorded in VERSION, and build a program on each adoption path.
#
#   1. tools/cmd/modproxy packages the root module, clientgo/, membership/,
#      sharding/ and overlay/ from the working tree at VERSION (module zips made by
#      golang.org/x/mod/zip) into a scratch directory laid out as a module
#      proxy;
#   2. a fresh module in a scratch directory, with GOPROXY=file://that
#      directory first (then the shared module cache's download directory,
#      then the usual proxy) and a private module cache, `go get`s
#      github.com/kcache/cache, .../clientgo, .../membership and
#      .../sharding at VERSION and builds and runs
#      tools/testdata/release-check/{importchange,bridge,membership,sharding}:
#      the import change, the bridge (a generated factory on kcache),
#      membership over a sharded ListerWatcher, and a lone sharded replica
#      (the Sharder controller-runtime managers use) caching every pod;
#   3. a second fresh module on client-go $OVERLAY_CLIENT_GO runs
#      `go run github.com/kcache/cache/overlay/cmd/kcache-overlay@VERSION`
#      (which takes kcache VERSION from the same proxy), replaces client-go
#      with the overlay written, and builds and runs
#      tools/testdata/release-check/overlay, which compiles only if
#      client-go's tools/cache is kcache.
# Nothing depends on git tags. The private module cache keeps the module
# versions served here (which change with the tree) out of the shared one;
# builds use -trimpath, so the shared build cache serves later runs.
# RELEASE_CHECK_KEEP=1 keeps the scratch directory.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
GO="${GO:-go}"
overlay_client_go="${OVERLAY_CLIENT_GO:-v0.37.2}"

version="$(tr -d '[:space:]' <"$root/VERSION")"
scratch="$(mktemp -d "${TMPDIR:-/tmp}/kcache-release-check.XXXXXX")"
cleanup() {
	if [ "${RELEASE_CHECK_KEEP:-}" = 1 ]; then
		echo "release-check: kept $scratch"
	else
		chmod -R u+w "$scratch" 2>/dev/null
		rm -rf "$scratch"
	fi
}
trap cleanup EXIT
start=$SECONDS
say() { echo "release-check: $* ($((SECONDS - start))s)"; }

shared_cache="$(GOWORK=off "$GO" env GOMODCACHE)"
upstream="$(GOWORK=off "$GO" env GOPROXY)"
(cd "$here" && GOWORK=off "$GO" run ./cmd/modproxy -repo "$root" -version "$version" -o "$scratch/proxy" . clientgo membership sharding overlay)

export GOWORK=off
export GOMODCACHE="$scratch/modcache"
export GOPROXY="file://$scratch/proxy,file://$shared_cache/cache/download,$upstream"
export GONOSUMDB="github.com/kcache/cache${GONOSUMDB:+,$GONOSUMDB}"
export GOFLAGS="${GOFLAGS:-} -modcacherw -trimpath"

# seed_sums DIR gives the fresh module the checksums this repository's
# modules already record, so that their dependencies need no checksum
# database lookup.
seed_sums() {
	cat "$root"/go.sum "$root"/clientgo/go.sum "$root"/membership/go.sum "$root"/sharding/go.sum "$root"/overlay/go.sum "$root"/examples/go.sum | LC_ALL=C sort -u >"$1/go.sum"
}

# program DIR NAME copies the program NAME into DIR/NAME.
program() {
	mkdir -p "$1/$2" && cp "$here/testdata/release-check/$2/main.go" "$1/$2/main.go"
}

# Import change, bridge, membership, sharding: one module on stock client-go.
adopter="$scratch/adopter"
mkdir -p "$adopter"
cd "$adopter"
"$GO" mod init example.com/adopter >/dev/null 2>&1
seed_sums "$adopter"
for p in importchange bridge membership sharding; do program "$adopter" "$p"; done
"$GO" get "github.com/kcache/cache@$version" "github.com/kcache/cache/clientgo@$version" "github.com/kcache/cache/membership@$version" "github.com/kcache/cache/sharding@$version"
"$GO" mod tidy
for m in github.com/kcache/cache github.com/kcache/cache/clientgo github.com/kcache/cache/membership github.com/kcache/cache/sharding; do
	got="$("$GO" list -m -f '{{.Version}}{{with .Replace}} => {{.Path}}{{end}}' "$m")"
	if [ "$got" != "$version" ]; then
		echo "release-check: $m resolved to $got, want $version from the proxy" >&2
		exit 1
	fi
done
say "fetched github.com/kcache/cache, /clientgo, /membership and /sharding at $version"
"$GO" build -o "$scratch/bin/" ./...
for p in importchange bridge membership sharding; do "$scratch/bin/$p"; done
say "import change, bridge, membership and sharding programs built and ran"

# Overlay: a module on client-go $overlay_client_go, replaced by the overlay.
ov="$scratch/overlay-adopter"
mkdir -p "$ov"
cd "$ov"
"$GO" mod init example.com/overlayadopter >/dev/null 2>&1
seed_sums "$ov"
program "$ov" overlay
"$GO" get "k8s.io/client-go@$overlay_client_go" "k8s.io/api@$overlay_client_go" "k8s.io/apimachinery@$overlay_client_go"
"$GO" run "github.com/kcache/cache/overlay/cmd/kcache-overlay@$version" -q -o third_party/client-go -client-go-version "$overlay_client_go"
"$GO" mod edit -replace k8s.io/client-go=./third_party/client-go
"$GO" mod tidy
if ! grep -q "\"kcache\": *\"$version\"" third_party/client-go/.kcache-overlay.json; then
	echo "release-check: the overlay's marker does not name kcache $version:" >&2
	cat third_party/client-go/.kcache-overlay.json >&2
	exit 1
fi
"$GO" build -o "$scratch/bin/" ./overlay
"$scratch/bin/overlay"
say "overlay of client-go $overlay_client_go from kcache-overlay@$version built and ran"
say "ok: kcache $version"
