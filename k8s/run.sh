#!/usr/bin/env bash
# run.sh [PACKAGE...]: runs integration test packages of k8s.io/kubernetes
# (test/integration/PACKAGE, at the release go.mod pins) twice, unedited:
# built on stock k8s.io/client-go and built with client-go replaced by the
# kcache overlay (make overlay), then writes the comparison (cmd/report).
#
# Steps:
#   1. etcd: built from its Go module (go.mod's `tool` line pins
#      go.etcd.io/etcd/server/v3) into .work/bin/etcd, which the suites'
#      framework finds on PATH.
#   2. the overlay: `make overlay VERSION=<go.mod's client-go>` into
#      .work/client-go, and two modfiles: .work/stock.mod (a copy of go.mod)
#      and .work/kcache.mod (the same plus one replace of k8s.io/client-go),
#      so both builds differ only in that line and go.mod stays tidy.
#   3. per package, per variant: `go test -c` of the package into
#      $K8S_OUT/bin/VARIANT/, then the proof: the kcache binary must contain
#      the kcache-only symbol $PROOF_SYMBOL and the stock one must not,
#      else the run stops.
#   4. per package: stock, then kcache, run one after the other from the
#      package's own directory (its testdata paths are relative), output
#      recorded as test2json in $K8S_OUT/logs/VARIANT/NAME.1.json. Tests that
#      failed on either side are then re-run, each alone, K8S_RERUNS times
#      on both sides (runs 2, 3, ...), so a flaky test shows as such with
#      both rates.
#   5. after every package, the report is rewritten, so a partial run still
#      leaves a valid result file.
#
# Environment:
#   GO            go command (default go)
#   K8S_PACKAGES  packages when none are given as arguments (default: the
#                 full list below)
#   K8S_RUN       a -test.run regexp for every package (default: all)
#   K8S_RERUNS    re-runs of each failed test, per side (default 2)
#   K8S_TIMEOUT   -test.timeout per package run (default 40m)
#   K8S_RESULT    result file (default results/k8s-suites-<UTC>.txt here)
#   K8S_STRICT=1  exit 1 unless every package ran on both sides and every
#                 difference between the pass sets proved flaky
#   K8S_BUILD_P   go build -p (default: go's own, the number of CPUs)
#   K8S_OUT       where test binaries, logs and the header go (default
#                 .work; make k8s-suites-smoke uses .work/smoke, so its runs
#                 leave a stopped full run's logs alone)
#   K8S_RESUME=1  keep the logs of an earlier run with the same K8S_RESULT
#                 and skip the packages it finished on both sides (for a
#                 run that was stopped; the header says so)
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
GO=${GO:-go}
WORK=$HERE/.work
BIN=$WORK/bin
OUT=${K8S_OUT:-$WORK}
TESTBIN=$OUT/bin
LOGS=$OUT/logs
PREFIX=k8s.io/kubernetes/test/integration
PROOF_SYMBOL='k8s.io/client-go/tools/cache/internal/dedup.(*Table)'
RERUNS=${K8S_RERUNS:-2}
TIMEOUT=${K8S_TIMEOUT:-40m}

# The whole list, cheapest and most telling first (controllers built on
# shared informers and workqueues, then the scheduler, whose queue is fed by
# informer events).
DEFAULT_PACKAGES="replicaset deployment garbagecollector replicationcontroller
  daemonset podgc ttlcontroller cronjob namespace disruption quota
  endpointslice statefulset scheduler/queueing scheduler/eventhandler job
  scheduler scheduler/filters scheduler/preemption"

say() { echo "k8s-suites: $*" >&2; }
die() { say "FAILED: $*"; exit 1; }

packages=("$@")
((${#packages[@]})) || read -r -a packages <<<"$(echo ${K8S_PACKAGES:-$DEFAULT_PACKAGES})"
names=()
for p in "${packages[@]}"; do names+=("${p//\//-}"); done

began=$SECONDS
mkdir -p "$BIN" "$TESTBIN/stock" "$TESTBIN/kcache" "$LOGS" || exit 1
# One run at a time: runs share etcd's binary and the overlay, which each
# writes anew.
exec 9>"$WORK/lock" && flock 9 || die "cannot lock $WORK/lock"
resume=${K8S_RESUME:-}
if [[ $resume == 1 ]]; then
  [[ -n ${K8S_RESULT:-} && -f $OUT/header.txt ]] || die "K8S_RESUME=1 needs K8S_RESULT and an earlier run's $OUT/header.txt"
else
  rm -rf "$LOGS"/stock "$LOGS"/kcache "$LOGS"/times.tsv
fi
mkdir -p "$LOGS/stock" "$LOGS/kcache"
buildflags=()
[[ -n ${K8S_BUILD_P:-} ]] && buildflags=(-p "$K8S_BUILD_P")

cd "$HERE" || exit 1
client_go=$("$GO" list -m -f '{{if .Replace}}{{.Replace.Version}}{{else}}{{.Version}}{{end}}' k8s.io/client-go) ||
  die "cannot read client-go's version from go.mod"
k8s_version=$("$GO" list -m -f '{{.Version}}' k8s.io/kubernetes) || die "cannot read k8s.io/kubernetes's version"
etcd_version=$("$GO" list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3) || die "cannot read etcd's version"

# 1. etcd.
t=$SECONDS
"$GO" build "${buildflags[@]}" -o "$BIN/etcd" go.etcd.io/etcd/server/v3 || die "building etcd"
say "etcd $etcd_version built in $((SECONDS - t)) s"

# 2. The overlay and the two modfiles.
t=$SECONDS
make -s -C "$ROOT" overlay DIR="$WORK/client-go" VERSION="$client_go" OVERLAY_FLAGS=-force \
  >"$LOGS/make-overlay.log" 2>&1 || die "make overlay, see $LOGS/make-overlay.log"
cp go.mod "$WORK/stock.mod" && cp go.sum "$WORK/stock.sum" &&
  cp go.mod "$WORK/kcache.mod" && cp go.sum "$WORK/kcache.sum" &&
  "$GO" mod edit -modfile="$WORK/kcache.mod" -replace=k8s.io/client-go="$WORK/client-go" ||
  die "writing the modfiles"
say "overlay of client-go $client_go written in $((SECONDS - t)) s"

# The header of the result file.
result=${K8S_RESULT:-$HERE/results/k8s-suites-$(date -u +%Y%m%dT%H%M%SZ).txt}
mkdir -p "$(dirname "$result")" || exit 1
header=$OUT/header.txt
if [[ $resume == 1 ]]; then
  sed -i '/^$/d' "$header"
  {
    echo "resumed: $(date -u +%Y-%m-%dT%H:%M:%SZ) at commit $(git -C "$ROOT" rev-parse HEAD 2>/dev/null)$(git -C "$ROOT" diff --quiet HEAD 2>/dev/null || echo ' (with uncommitted changes)'), packages: ${packages[*]}"
    echo
  } >>"$header"
else {
  echo "# make k8s-suites result"
  echo "command: ${K8S_COMMAND:-k8s/run.sh ${packages[*]}}${K8S_RUN:+ (K8S_RUN=$K8S_RUN)}"
  echo "date:    $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "machine: $(uname -a)"
  echo "cpus:    $(nproc)"
  echo "go:      $("$GO" version)"
  echo "commit:  $(git -C "$ROOT" rev-parse HEAD 2>/dev/null)$(git -C "$ROOT" diff --quiet HEAD 2>/dev/null || echo ' (with uncommitted changes)')"
  echo "suites:  k8s.io/kubernetes $k8s_version test/integration/..., unedited; etcd $etcd_version built from its module"
  echo "stock:   k8s.io/client-go $client_go"
  echo "kcache:  k8s.io/client-go $client_go replaced by make overlay VERSION=$client_go (tools/cache is kcache)"
  echo "proof:   every kcache test binary contains $PROOF_SYMBOL, every stock one does not (go tool nm)"
  echo "counts:  top-level tests of run 1 (the whole package); a test that did not finish counts as failed"
  echo
} >"$header"
fi

report() {
  "$GO" run ./cmd/report -logs "$LOGS" -packages "${names[*]}" -header "$header" -out "$result" "$@"
}

# build VARIANT PKG NAME: the test binary, checked for the proof symbol.
build() {
  local v=$1 pkg=$2 name=$3 bin=$TESTBIN/$1/$3.test has
  GOFLAGS=-mod=mod "$GO" test -c "${buildflags[@]}" -modfile="$WORK/$v.mod" -o "$bin" "$PREFIX/$pkg" \
    >"$LOGS/$v/$name.build.log" 2>&1 || { cat "$LOGS/$v/$name.build.log" >&2; return 1; }
  has=$("$GO" tool nm "$bin" | grep -cF "$PROOF_SYMBOL")
  if [[ $v == kcache && $has -eq 0 ]]; then
    say "FAILED: $bin lacks $PROOF_SYMBOL: it was not built on the overlay"
    return 2
  fi
  if [[ $v == stock && $has -ne 0 ]]; then
    say "FAILED: $bin contains $PROOF_SYMBOL: it was built on the overlay"
    return 2
  fi
}

# runtests VARIANT PKG NAME RUN REGEXP: one run, as test2json.
runtests() {
  local v=$1 pkg=$2 name=$3 run=$4 re=$5 dir
  dir=$("$GO" list -modfile="$WORK/stock.mod" -mod=mod -f '{{.Dir}}' "$PREFIX/$pkg") || return 1
  (
    cd "$dir" &&
      PATH=$BIN:$PATH KUBE_INTEGRATION_ETCD_URL=http://127.0.0.1:1 \
        "$TESTBIN/$v/$name.test" -test.v=test2json -test.timeout "$TIMEOUT" ${re:+-test.run "$re"} 2>&1 |
      "$GO" tool test2json -t -p "$PREFIX/$pkg" >"$LOGS/$v/$name.$run.json"
    exit "${PIPESTATUS[0]}"
  )
}

status=0
for i in "${!packages[@]}"; do
  pkg=${packages[$i]} name=${names[$i]}
  if [[ $resume == 1 ]] && [[ $(grep -cE "^$name (stock|kcache) [0-9]+ [0-9]+ " "$LOGS/times.tsv" 2>/dev/null) -eq 2 ]]; then
    say "$pkg: done in the earlier run, skipped"
    continue
  fi
  for v in stock kcache; do
    t=$SECONDS
    build "$v" "$pkg" "$name"
    rc=$?
    ((rc == 2)) && exit 1 # a binary on the wrong client-go: nothing to compare
    bs=$((SECONDS - t))
    if ((rc != 0)); then
      say "$pkg ($v): build FAILED in $bs s"
      printf '%s %s %s %s %s\n' "$name" "$v" "$bs" - build-failed >>"$LOGS/times.tsv"
      status=1
      continue
    fi
    t=$SECONDS
    runtests "$v" "$pkg" "$name" 1 "${K8S_RUN:-}"
    rc=$?
    printf '%s %s %s %s %s\n' "$name" "$v" "$bs" "$((SECONDS - t))" "$rc" >>"$LOGS/times.tsv"
    say "$pkg ($v): built in $bs s, ran in $((SECONDS - t)) s, exit $rc"
  done
  # Re-run, each alone and on both sides, every top-level test that failed
  # or did not finish on either side.
  failed=$("$GO" run ./cmd/report -logs "$LOGS" -packages "$name" -failed)
  if [[ -n $failed ]]; then
    for ((r = 2; r <= RERUNS + 1; r++)); do
      for v in stock kcache; do
        [[ -x $TESTBIN/$v/$name.test ]] || continue
        : >"$LOGS/$v/$name.$r.json"
        for test in $failed; do
          runtests "$v" "$pkg" "$name" "$r.tmp" "^$test\$"
          cat "$LOGS/$v/$name.$r.tmp.json" >>"$LOGS/$v/$name.$r.json"
          rm -f "$LOGS/$v/$name.$r.tmp.json"
        done
      done
    done
    say "$pkg: re-ran $(echo "$failed" | wc -w) failed test(s) $RERUNS more time(s) on each side"
  fi
  report >/dev/null || status=1
  say "$pkg: $(tail -n 1 "$result")"
done

strict=()
[[ ${K8S_STRICT:-} == 1 ]] && strict=(-strict)
report "${strict[@]}" || status=1
say "result: $result ($((SECONDS - began)) s)"
tail -n 1 "$result" >&2
exit "$status"
