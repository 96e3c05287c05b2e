#!/usr/bin/env bash
# run.sh: kube-controller-manager and kube-scheduler of k8s.io/kubernetes
# (the release go.mod pins) built on stock k8s.io/client-go and on the kcache
# overlay, each pair run against a fresh kas (kube-apiserver + etcd) with
# KWOK's fake nodes while the driver (cmd/driver) plays one scripted
# scenario; then, optionally, scheduler_perf on both builds; then the report
# (cmd/report) into the result file. See README.md.
#
# Steps:
#   1. the overlay (make overlay VERSION=<client-go of go.mod>) into
#      .work/client-go and two modfiles, .work/stock.mod (a copy of go.mod)
#      and .work/kcache.mod (plus one replace of k8s.io/client-go);
#   2. kube-controller-manager and kube-scheduler built with each modfile
#      into .work/bin/{stock,kcache}/, then the proof: every kcache binary
#      contains $PROOF_SYMBOL, no stock one does (go tool nm), else stop;
#   3. KWOK (sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION, its own module) and
#      the driver; kas through ../kas/run.sh with its own cache dir;
#   4. CP_ROUNDS rounds, each running both variants, the order alternating
#      (stock first in odd rounds, kcache first in even ones): start kas,
#      the controller manager, the scheduler and KWOK; run the driver; stop
#      them all;
#   5. scheduler_perf (unless CP_SCHED_PERF=0): the upstream test package
#      test/integration/scheduler_perf built on each modfile and run
#      unchanged, CP_SCHED_PERF_WORKLOADS in turn, alternating variants;
#   6. cmd/report writes the result file.
#
# Environment:
#   CP_PODS        pods of the scenario (default 20000)
#   CP_NODES       KWOK nodes (default: pods/100, at least 3)
#   CP_CHURN       steady churn duration (default 5m)
#   CP_CHURN_RATE  churn writes per second (default 20)
#   CP_IDLE        each idle window where steady-state memory is read (30s)
#   CP_ROUNDS      rounds of both variants (default 1)
#   CP_QPS         client QPS of both components (default 200; burst 2x)
#   CP_SCHED_PERF  0 to leave scheduler_perf out (default 1)
#   CP_SCHED_PERF_WORKLOADS, CP_SCHED_PERF_ROUNDS  see sched_perf.sh
#   CP_RESULT      result file (default ../bench/results/control-plane-<UTC>.txt)
#   CP_COMMAND     the command named in the header (default this script)
#   KWOK_VERSION   default v0.8.0
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
GO=${GO:-go}
WORK=$HERE/.work
BIN=$WORK/bin
LOGS=$WORK/logs
PROOF_SYMBOL='k8s.io/client-go/tools/cache/internal/dedup.(*Table)'
KWOK_VERSION=${KWOK_VERSION:-v0.8.0}
ROUNDS=${CP_ROUNDS:-1}
QPS=${CP_QPS:-200}
KCM_PORT=${CP_KCM_PORT:-20257}
SCHED_PORT=${CP_SCHED_PORT:-20259}
KWOK_PORT=${CP_KWOK_PORT:-20247}
export KAS_CACHE_DIR=$WORK/kas
# kas's default service range, a /24, holds 254 services; the scenario has
# one per deployment and statefulset (about 340 at 5,000 pods).
export KAS_APISERVER_ARGS="--service-cluster-ip-range=10.96.0.0/12 ${KAS_APISERVER_ARGS:-}"
KAS=$ROOT/kas/run.sh

say() { echo "control-plane: $*" >&2; }
die() { say "FAILED: $*"; exit 1; }

began=$SECONDS
mkdir -p "$BIN/stock" "$BIN/kcache" "$LOGS" || exit 1
cd "$HERE" || exit 1
client_go=$("$GO" list -m -f '{{if .Replace}}{{.Replace.Version}}{{else}}{{.Version}}{{end}}' k8s.io/client-go) ||
  die "cannot read client-go's version from go.mod"
k8s_version=$("$GO" list -m -f '{{.Version}}' k8s.io/kubernetes) || die "cannot read k8s.io/kubernetes's version"
LDFLAGS="-X k8s.io/component-base/version.gitVersion=$k8s_version -X k8s.io/component-base/version.gitMajor=1"
LDFLAGS+=" -X k8s.io/component-base/version.gitMinor=$(cut -d. -f2 <<<"$k8s_version")"
times=$WORK/times.tsv
: >"$times"
took() { echo -e "$1\t$(($2))" >>"$times"; say "$1 took $(($2)) s"; }

# 1. The overlay and the modfiles.
t=$SECONDS
make -s -C "$ROOT" overlay DIR="$WORK/client-go" VERSION="$client_go" OVERLAY_FLAGS=-force \
  >"$LOGS/make-overlay.log" 2>&1 || die "make overlay, see $LOGS/make-overlay.log"
cp go.mod "$WORK/stock.mod" && cp go.sum "$WORK/stock.sum" &&
  cp go.mod "$WORK/kcache.mod" && cp go.sum "$WORK/kcache.sum" &&
  "$GO" mod edit -modfile="$WORK/kcache.mod" -replace=k8s.io/client-go="$WORK/client-go" || die "writing the modfiles"
took overlay "SECONDS - t"

# 2. The four binaries, and the proof.
for v in stock kcache; do
  t=$SECONDS
  "$GO" build -modfile="$WORK/$v.mod" -ldflags "$LDFLAGS" -o "$BIN/$v/" \
    k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler \
    >"$LOGS/build-$v.log" 2>&1 || die "building the $v control plane, see $LOGS/build-$v.log"
  for b in kube-controller-manager kube-scheduler; do
    has=$("$GO" tool nm "$BIN/$v/$b" | grep -cF "$PROOF_SYMBOL")
    [[ $v == kcache && $has -eq 0 ]] && die "$BIN/$v/$b lacks $PROOF_SYMBOL: not built on the overlay"
    [[ $v == stock && $has -ne 0 ]] && die "$BIN/$v/$b contains $PROOF_SYMBOL: built on the overlay"
    echo -e "$v\t$b\t$has" >>"$WORK/proof.tsv.new"
  done
  took "build-$v" "SECONDS - t"
done
mv "$WORK/proof.tsv.new" "$WORK/proof.tsv"

# 3. KWOK, the driver, the report, kas.
t=$SECONDS
(cd "$WORK" && GOBIN=$BIN "$GO" install "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION") \
  >"$LOGS/build-kwok.log" 2>&1 || die "building KWOK $KWOK_VERSION, see $LOGS/build-kwok.log"
# KWOK's own stages, unedited, from its module: nodes initialize and renew
# their Leases; pods become ready, Job pods complete, deleted pods go.
kwok_dir=$(cd "$WORK" && "$GO" mod download -json "sigs.k8s.io/kwok@$KWOK_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[[ -d $kwok_dir/kustomize/stage ]] || die "KWOK's stages not found in the module cache"
kwok_stages=()
for f in node/fast/node-initialize node/heartbeat-with-lease/node-heartbeat-with-lease pod/fast/pod-ready \
  pod/fast/pod-complete pod/fast/pod-delete; do
  kwok_stages+=(-c "$kwok_dir/kustomize/stage/$f.yaml")
done
"$GO" build -o "$BIN/driver" ./cmd/driver && "$GO" build -o "$BIN/report" ./cmd/report || die "building the driver"
"$KAS" build >"$LOGS/build-kas.log" 2>&1 || die "building kas, see $LOGS/build-kas.log"
took "build-kwok-driver-kas" "SECONDS - t"

pids=()
stop_all() {
  local p
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do
    for _ in $(seq 30); do kill -0 "$p" 2>/dev/null || break; sleep 1; done
    kill -KILL "$p" 2>/dev/null
  done
  pids=()
  "$KAS" stop >/dev/null 2>&1
}
trap stop_all EXIT

# run_variant VARIANT ROUND: one scenario on a fresh cluster.
run_variant() {
  local v=$1 round=$2 dir=$WORK/runs/$2-$1 t=$SECONDS
  rm -rf "$dir" && mkdir -p "$dir" || return 1
  "$KAS" start >"$dir/kas-start.log" 2>&1 || { cat "$dir/kas-start.log" >&2; return 1; }
  # shellcheck disable=SC1091
  . "$KAS_CACHE_DIR/run/env"
  cat >"$dir/scheduler.yaml" <<YAML
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: $KUBECONFIG
  qps: $QPS
  burst: $((2 * QPS))
leaderElection:
  leaderElect: true
YAML
  local common=(--authentication-kubeconfig="$KUBECONFIG" --authorization-kubeconfig="$KUBECONFIG"
    --authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics --bind-address=127.0.0.1)
  "$BIN/$v/kube-controller-manager" --kubeconfig="$KUBECONFIG" "${common[@]}" --secure-port="$KCM_PORT" \
    --cert-dir="$dir/kcm-certs" --leader-elect=true --controllers='*' \
    --kube-api-qps="$QPS" --kube-api-burst=$((2 * QPS)) >"$dir/kcm.log" 2>&1 &
  pids+=($!)
  "$BIN/$v/kube-scheduler" --config="$dir/scheduler.yaml" "${common[@]}" --secure-port="$SCHED_PORT" \
    --cert-dir="$dir/scheduler-certs" >"$dir/scheduler.log" 2>&1 &
  pids+=($!)
  "$BIN/kwok" "${kwok_stages[@]}" --kubeconfig="$KUBECONFIG" --manage-all-nodes=false \
    --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake --node-lease-duration-seconds=40 \
    --cidr=10.64.0.0/12 --node-ip=10.63.0.1 --server-address=127.0.0.1:$KWOK_PORT >"$dir/kwok.log" 2>&1 &
  pids+=($!)
  "$BIN/driver" -variant "$v" -out "$dir" \
    -kcm-metrics "https://127.0.0.1:$KCM_PORT/metrics" -scheduler-metrics "https://127.0.0.1:$SCHED_PORT/metrics" \
    2>&1 | tee "$dir/driver.log" >&2
  local rc=${PIPESTATUS[0]}
  stop_all
  took "run-$round-$v" "SECONDS - t"
  return "$rc"
}

# profile_summary prints, for round 1's profiles of each component (the
# driver keeps a CPU profile of the create and churn phases' first 45 s and
# a heap profile at the first idle window), the top functions and, for CPU,
# the share of tools/cache (kcache's value sharing, internal/dedup, included).
profile_summary() {
  local prof comp v f share
  echo "profiles (round 1; top = by flat; CPU's tools/cache share = pprof -focus=k8s.io/client-go/tools/cache, sharing engine included):"
  for prof in cpu-create cpu-churn heap-steady; do
    for comp in scheduler kcm; do
      for v in stock kcache; do
        f=$WORK/runs/1-$v/$prof-$comp.pb.gz
        [[ -s $f ]] || continue
        echo
        if [[ $prof == cpu-* ]]; then
          share=$("$GO" tool pprof -top -nodecount=1 -focus='k8s.io/client-go/tools/cache' "$f" 2>/dev/null |
            grep -o 'accounting for .* total' | head -1)
          echo "$prof $comp $v: tools/cache ${share:-not found}"
        else
          echo "$prof $comp $v (decoding happens outside tools/cache, so no share is given)"
        fi
        "$GO" tool pprof -top -nodecount=8 "$f" 2>/dev/null | sed -n '/flat%/,$p' | sed 's/^/    /'
      done
    done
  done
  echo
}

# 4. The rounds.
rm -rf "$WORK/runs"
for ((r = 1; r <= ROUNDS; r++)); do
  order=(stock kcache)
  ((r % 2 == 0)) && order=(kcache stock)
  for v in "${order[@]}"; do
    # A run whose phase did not converge still wrote its figures, which the
    # report marks; a run without them stops everything.
    run_variant "$v" "$r" || [[ -f $WORK/runs/$r-$v/result.json ]] || die "round $r, $v: see $WORK/runs/$r-$v/"
  done
done

# 5. scheduler_perf.
: >"$WORK/sched-perf.tsv"
if [[ ${CP_SCHED_PERF:-1} == 1 ]]; then
  t=$SECONDS
  # A failure leaves the figures of the workloads that ran; the report says
  # which ran.
  "$HERE/sched_perf.sh" "$WORK/sched-perf.tsv" || say "scheduler_perf failed, see $LOGS/sched-perf/"
  took scheduler_perf "SECONDS - t"
fi

# 6. The report.
result=${CP_RESULT:-$ROOT/bench/results/control-plane-$(date -u +%Y%m%dT%H%M%SZ).txt}
mkdir -p "$(dirname "$result")"
{
  echo "# make bench-control-plane result"
  echo "command: ${CP_COMMAND:-controlplane/run.sh} (CP_PODS=${CP_PODS:-20000} CP_NODES=${CP_NODES:-auto} CP_CHURN=${CP_CHURN:-5m} CP_CHURN_RATE=${CP_CHURN_RATE:-20} CP_ROUNDS=$ROUNDS CP_QPS=$QPS CP_SCHED_PERF=${CP_SCHED_PERF:-1})"
  echo "date:    $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "machine: $(uname -a)"
  echo "cpus:    $(nproc)"
  echo "go:      $("$GO" version)"
  echo "commit:  $(git -C "$ROOT" rev-parse HEAD 2>/dev/null)$(git -C "$ROOT" diff --quiet HEAD 2>/dev/null || echo ' (with uncommitted changes)')"
  echo "control plane: k8s.io/kubernetes $k8s_version cmd/kube-controller-manager and cmd/kube-scheduler, unedited"
  echo "stock:   k8s.io/client-go $client_go"
  echo "kcache:  k8s.io/client-go $client_go replaced by make overlay VERSION=$client_go (tools/cache is kcache)"
  echo "proof:   go tool nm finds $PROOF_SYMBOL in both kcache binaries and in neither stock one"
  echo "nodes:   KWOK $KWOK_VERSION (sigs.k8s.io/kwok, built from its module)"
  echo "server:  kas (kube-apiserver $k8s_version + embedded etcd), a fresh one per run"
  echo
} >"$WORK/header.txt"
took total "SECONDS - began"
profile_summary >"$WORK/profiles.txt"
"$BIN/report" -runs "$WORK/runs" -header "$WORK/header.txt" -times "$times" -sched-perf "$WORK/sched-perf.tsv" \
  -profiles "$WORK/profiles.txt" -out "$result" || die "report"
cat "$result"
