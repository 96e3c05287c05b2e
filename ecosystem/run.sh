#!/usr/bin/env bash
# Runs controller-runtime's own pkg/cache test suite (Ginkgo, envtest) against
# a real kube-apiserver + etcd started by kas (../kas/run.sh), three ways, and
# compares the outcomes spec by spec (cmd/specreport):
#
#   stock    controller-runtime with client-go v0.37.2, unchanged;
#   overlay  the same, with k8s.io/client-go replaced by the kcache overlay
#            (make overlay): every informer in the binary is kcache's;
#   bridge   stock client-go, but the cache's default informer constructor
#            is clientgo.NewSharedIndexInformer (kcache behind client-go's
#            interfaces), set by a one-line patch of the copied suite (below).
#
#   ecosystem/run.sh whole [CR_VERSION]   every spec (make ecosystem)
#   ecosystem/run.sh smoke [CR_VERSION]   a named subset, SMOKE_FOCUS below
#                                          (make test)
#
# CR_VERSION is the controller-runtime release whose suite runs, one per
# supported client-go minor: v0.23.3 (client-go v0.35), v0.24.1 (v0.36),
# v0.25.2 (v0.37, the default). Each variant runs on the newest patch of
# that release's client-go minor (v0.35.10, v0.36.6, v0.37.2); the overlay
# variant writes its overlay for that client-go. Results go to $WORK/results/<mode> for the default
# release and $WORK/results/<mode>-<CR_VERSION> for the others.
#
# Each variant is a fresh copy of the controller-runtime module from the Go
# module cache (downloaded through the proxy when missing) in $WORK/<variant>;
# its test binary is built first, then run against a fresh kas (the suite's
# specs create namespaces and objects and expect to own them). The server is
# always stopped (trap). A variant whose part of kcache is missing from this
# checkout (overlay/, clientgo/) is reported as pending, not run.
#
# Exit status 0 only if every variant that ran passed every spec and plain Go
# test, and all of them passed the same specs. A spec that fails is retried
# once (Ginkgo's flake-attempts): a few of the suite's specs race their own
# informers on a loaded machine (e.g. "should allow for get informer to be
# cancelled" expects an informer not to have synced yet, and failed once on
# stock client-go). A spec that passed only on retry is listed by name.
#
# Environment: GO (default go), ECOSYSTEM_VARIANTS (default "stock overlay
# bridge"), ECOSYSTEM_WORK (default ecosystem/.work), ECOSYSTEM_FOCUS (a
# Ginkgo focus regexp replacing the mode's).
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
KAS=$ROOT/kas/run.sh
GO=${GO:-go}
WORK=${ECOSYSTEM_WORK:-$HERE/.work}
VARIANTS=${ECOSYSTEM_VARIANTS:-stock overlay bridge}
CR_MODULE=sigs.k8s.io/controller-runtime
MODE=${1:-smoke}
CR_VERSION=${2:-v0.25.2}
# The newest patch of the client-go minor each supported release asks for.
case $CR_VERSION in
  v0.23.*) CLIENT_GO_VERSION=v0.35.10 ;;
  v0.24.*) CLIENT_GO_VERSION=v0.36.6 ;;
  v0.25.*) CLIENT_GO_VERSION=v0.37.2 ;;
  *)
    echo "ecosystem: controller-runtime $CR_VERSION is not supported; use v0.23.x (client-go v0.35), v0.24.x (v0.36) or v0.25.x (v0.37)" >&2
    exit 2
    ;;
esac

# The smoke subset (Ginkgo matches "Cache Suite <containers> <spec>"): the
# default-options cache (every Reader and Informer spec on structured,
# unstructured and metadata-only objects: List/Get, watches, indexes,
# handlers), ReaderFailOnMissingInformer, transforms and selectors; about
# 100 of the 276 specs, leaving out the multi-namespace and no-DeepCopy
# repeats of the same Cache test.
SMOKE_FOCUS='^Cache Suite (Informer Cache Cache test|Informer Cache with ReaderFailOnMissingInformer|Cache with transformers|Cache with selectors|TransformStripManagedFields) '

say() { echo "ecosystem: $*" >&2; }

stop_server() { "$KAS" stop >/dev/null 2>&1 || true; }
trap stop_server EXIT
trap 'stop_server; exit 130' INT TERM

case $MODE in
  whole) FOCUS=${ECOSYSTEM_FOCUS:-} ;;
  smoke) FOCUS=${ECOSYSTEM_FOCUS:-$SMOKE_FOCUS} ;;
  *) say "usage: $0 whole|smoke [CR_VERSION]"; exit 2 ;;
esac
RESULTS=$WORK/results/$MODE
[[ $CR_VERSION == v0.25.2 ]] || RESULTS=$RESULTS-$CR_VERSION

# module_dir prints the module cache directory of controller-runtime.
module_dir() {
  "$GO" mod download -json "$CR_MODULE@$CR_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p'
}

# pending_reason prints why a variant cannot run in this checkout, if so.
pending_reason() {
  case $1 in
    overlay) [[ -f $ROOT/overlay/go.mod ]] || echo "overlay/ (the client-go overlay tool) is not in this checkout" ;;
    bridge) [[ -f $ROOT/clientgo/go.mod ]] || echo "clientgo/ (clientgo.NewSharedIndexInformer) is not in this checkout" ;;
    stock) ;;
    *) echo "unknown variant" ;;
  esac
}

# patch_bridge points the cache's default informer constructor at
# clientgo.NewSharedIndexInformer in the copy at $1. Specs that pass their
# own Options.NewInformer keep it.
patch_bridge() {
  local f=$1/pkg/cache/internal/informers.go
  grep -q '^	newInformer := cache.NewSharedIndexInformer$' "$f" || {
    say "bridge: the line to patch is not in $f (controller-runtime changed?)"
    return 1
  }
  sed -i \
    -e 's|^	newInformer := cache.NewSharedIndexInformer$|	newInformer := kcacheclientgo.NewSharedIndexInformer // patched by kcache ecosystem/run.sh|' \
    -e '0,/^import (/s|^import (|import (\n	kcacheclientgo "github.com/kcache/cache/clientgo"|' "$f" &&
    "$GO" mod edit -require=github.com/kcache/cache@v0.0.0 -require=github.com/kcache/cache/clientgo@v0.0.0 \
      -replace=github.com/kcache/cache="$ROOT" -replace=github.com/kcache/cache/clientgo="$ROOT/clientgo"
}

# prepare VARIANT: a fresh, writable copy of the suite, set up for VARIANT.
prepare() {
  local v=$1 dir=$WORK/$1/controller-runtime
  rm -rf "$dir" && mkdir -p "$WORK/$v" && cp -r "$SRC" "$dir" && chmod -R u+w "$dir" || return 1
  cd "$dir" || return 1
  # Every variant runs on the newest patch of the client-go minor the
  # release asks for (controller-runtime v0.25.2 asks for v0.37.0: v0.37.2).
  "$GO" get "k8s.io/client-go@$CLIENT_GO_VERSION" >/dev/null 2>&1 || {
    say "$v: go get k8s.io/client-go@$CLIENT_GO_VERSION failed"
    return 1
  }
  case $v in
    overlay)
      make -s -C "$ROOT" overlay DIR="$WORK/overlay/client-go" VERSION="$CLIENT_GO_VERSION" OVERLAY_FLAGS=-force >"$WORK/overlay/make-overlay.log" 2>&1 || {
        say "overlay: make overlay failed, see $WORK/overlay/make-overlay.log"
        return 1
      }
      "$GO" mod edit -replace=k8s.io/client-go="$WORK/overlay/client-go"
      ;;
    bridge) patch_bridge "$dir" ;;
  esac
}

# build VARIANT: compile the suite's test binary, record the time. With
# -trimpath the copies' and the overlay's directories stay out of the build
# cache's keys, so a fresh clone reuses what an earlier run compiled.
build() {
  local v=$1 began=$SECONDS out=$RESULTS/$1
  (cd "$WORK/$v/controller-runtime" &&
    GOFLAGS="-mod=mod -trimpath" "$GO" test -c -o "$WORK/$v/cache.test" ./pkg/cache/) >"$out/build.log" 2>&1
  local rc=$?
  echo "build_s $((SECONDS - began))" >>"$out/times"
  ((rc == 0)) || say "$v: build FAILED, see $out/build.log"
  return "$rc"
}

# run_suite VARIANT: a fresh kas, the test binary, kas stopped.
run_suite() {
  local v=$1 out=$RESULTS/$1 began=$SECONDS
  if ! "$KAS" start >/dev/null 2>"$out/kas-start.log"; then
    say "$v: FAILED: the test API server did not start, see $out/kas-start.log and $ROOT/kas/.cache/run/kas.log"
    return 1
  fi
  local rc=0
  began=$SECONDS
  (
    # shellcheck disable=SC1091
    . "$ROOT/kas/.cache/run/env"
    cd "$WORK/$v/controller-runtime/pkg/cache" &&
      USE_EXISTING_CLUSTER=true "$GO" tool test2json -t -p sigs.k8s.io/controller-runtime/pkg/cache \
        "$WORK/$v/cache.test" -test.v=test2json -test.count=1 -test.timeout=40m \
        -ginkgo.json-report="$out/report.json" -ginkgo.no-color -ginkgo.flake-attempts=2 ${FOCUS:+"-ginkgo.focus=$FOCUS"} >"$out/test.json"
  ) || rc=$?
  echo "run_s $((SECONDS - began))" >>"$out/times"
  echo "exit $rc" >>"$out/times"
  stop_server
  say "$v: suite $( ((rc == 0)) && echo passed || echo "FAILED (exit $rc)") in $((SECONDS - began)) s"
  return 0
}

rm -rf "$RESULTS" && mkdir -p "$RESULTS" || exit 1
(cd "$HERE" && "$GO" vet ./... && "$GO" build -o "$WORK/specreport" ./cmd/specreport) || exit 1
SRC=$(module_dir)
[[ -n $SRC && -d $SRC ]] || {
  say "cannot download $CR_MODULE@$CR_VERSION"
  exit 1
}
say "$MODE: controller-runtime $CR_VERSION pkg/cache${FOCUS:+, focus $FOCUS}; variants: $VARIANTS"

args=()
ready=()
for v in $VARIANTS; do
  mkdir -p "$RESULTS/$v"
  args+=("$v=$RESULTS/$v")
  why=$(pending_reason "$v")
  if [[ -n $why ]]; then
    echo "$why" >"$RESULTS/$v/pending"
    say "$v: pending: $why"
    continue
  fi
  if (prepare "$v") && build "$v"; then
    ready+=("$v")
  fi
done
# Build everything first, then run: the servers never wait on a compiler.
for v in "${ready[@]}"; do
  run_suite "$v"
done

"$WORK/specreport" "${args[@]}" | tee "$RESULTS/summary.md"
exit "${PIPESTATUS[0]}"
