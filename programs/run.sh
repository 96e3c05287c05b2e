#!/usr/bin/env bash
# run.sh: two programs nobody here wrote, built on stock k8s.io/client-go and
# on the kcache overlay of the same release, run side by side on kas. See
# README.md.
#
# Steps:
#   1. the overlay (make overlay VERSION=$CLIENT_GO) into .work/client-go;
#      for each program a scratch module in .work/build/<program> requiring
#      the program at its release, and two modfiles, stock.mod (what the
#      program's own go.mod resolves to) and kcache.mod (plus one replace of
#      k8s.io/client-go); both binaries built, then the proof: go tool nm
#      finds $PROOF_SYMBOL in every kcache binary and in no stock one;
#   2. KWOK, PROGRAMS_KWOK_ROUNDS rounds of both variants, the order
#      alternating (stock first in odd rounds): a fresh kas, KWOK under cmd/measure,
#      cmd/driver creating the nodes and pods and waiting until every pod
#      runs, PROGRAMS_IDLE of quiet, the end state, KWOK stopped;
#   3. the descheduler, on the last cluster (KWOK stopped, so nothing
#      changes any more): cmd/driver moves and taints nodes, then
#      PROGRAMS_ROUNDS rounds of one dry-run process per variant, the order
#      alternating, each stopped after PROGRAMS_CYCLES cycles;
#   4. cmd/report writes the result file.
#
# With PROGRAMS_KWOK_RACE=N (make bench-programs-kwok-race), step 1 and then
# N rounds of both KWOK builds at debug level, the order alternating, with
# the nodes and pods created at once and a bounded wait, to show the Lease
# race of KWOK v0.8.0 that step 2 avoids by creating the pods once every
# node is Ready (README.md); cmd/report -kwok-race writes
# ../bench/results/kwok-race-<UTC>.txt. PROGRAMS_PODS and PROGRAMS_NODES
# default to 1000 and 20 there, PROGRAMS_RACE_WAIT (default 60s) bounds
# each run's wait.
#
# Environment:
#   PROGRAMS_PODS    pods (default 20000)
#   PROGRAMS_NODES   KWOK nodes (default 200)
#   PROGRAMS_IDLE    quiet after every pod runs, where KWOK's heap is read
#                    (default 60s; with no collection in it, the last one before its end)
#   PROGRAMS_ROUNDS  descheduler processes per variant (default 3)
#   PROGRAMS_KWOK_ROUNDS  KWOK runs per variant (default 3), the order
#                    alternating (stock first in odd rounds)
#   PROGRAMS_CYCLES  dry-run cycles per process (default 3; the first is
#                    reported apart, see README.md)
#   PROGRAMS_INTERVAL  --descheduling-interval (default 15s)
#   PROGRAMS_RESULT  result file (default ../bench/results/programs-<UTC>.txt)
#   PROGRAMS_COMMAND the command named in the header (default this script)
#   PROGRAMS_KWOK_PORT  KWOK's own server (default 20248)
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
GO=${GO:-go}
WORK=$HERE/.work
BIN=$WORK/bin
LOGS=$WORK/logs
PROOF_SYMBOL='k8s.io/client-go/tools/cache/internal/dedup.(*Table)'
CLIENT_GO=v0.36.1 # what both programs' releases require
DESCHEDULER=sigs.k8s.io/descheduler@v0.36.0
KWOK=sigs.k8s.io/kwok@v0.8.0
RACE=${PROGRAMS_KWOK_RACE:-0}
if ((RACE > 0)); then
  PODS=${PROGRAMS_PODS:-1000}
  NODES=${PROGRAMS_NODES:-20}
else
  PODS=${PROGRAMS_PODS:-20000}
  NODES=${PROGRAMS_NODES:-200}
fi
RACE_WAIT=${PROGRAMS_RACE_WAIT:-60s}
IDLE=${PROGRAMS_IDLE:-60s}
ROUNDS=${PROGRAMS_ROUNDS:-3}
KWOK_ROUNDS=${PROGRAMS_KWOK_ROUNDS:-3}
CYCLES=${PROGRAMS_CYCLES:-3}
INTERVAL=${PROGRAMS_INTERVAL:-15s}
KWOK_PORT=${PROGRAMS_KWOK_PORT:-20248}
export KAS_CACHE_DIR=$WORK/kas
KAS=$ROOT/kas/run.sh

say() { echo "programs: $*" >&2; }
die() { say "FAILED: $*"; exit 1; }

began=$SECONDS
mkdir -p "$BIN/stock" "$BIN/kcache" "$LOGS" || exit 1
cd "$HERE" || exit 1
times=$WORK/times.tsv
: >"$times"
took() { echo -e "$1\t$(($2))" >>"$times"; say "$1 took $(($2)) s"; }

# scratch_module DIR MODULE@VERSION COMMAND: a module whose only requirement
# is the program's release, with the program's own replace lines (go
# install would refuse a module that has any; descheduler has one).
scratch_module() {
  local dir=$1 modver=$2 cmd=$3 mod=${2%@*} ver=${2#*@} gomod
  mkdir -p "$dir" && cd "$dir" || return 1
  printf 'module kcache.local/build\n\ngo 1.26.0\n\nrequire %s %s\n\ntool %s\n' "$mod" "$ver" "$cmd" >go.mod
  gomod=$("$GO" mod download -json "$modver" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
  [[ -f $gomod ]] || return 1
  grep -E '^replace [^ ]+ => [^ ]+ v' "$gomod" >>go.mod
  "$GO" mod tidy || return 1
  cp go.mod stock.mod && cp go.sum stock.sum && cp go.mod kcache.mod && cp go.sum kcache.sum &&
    "$GO" mod edit -modfile=kcache.mod -replace=k8s.io/client-go="$WORK/client-go" &&
    "$GO" mod tidy -modfile=kcache.mod
}

# 1. The overlay, the four binaries, the proof.
t=$SECONDS
make -s -C "$ROOT" overlay DIR="$WORK/client-go" VERSION="$CLIENT_GO" OVERLAY_FLAGS=-force \
  >"$LOGS/make-overlay.log" 2>&1 || die "make overlay, see $LOGS/make-overlay.log"
: >"$WORK/proof.tsv.new"
for prog in descheduler kwok; do
  case $prog in
  descheduler) modver=$DESCHEDULER cmd=sigs.k8s.io/descheduler/cmd/descheduler ;;
  kwok) modver=$KWOK cmd=sigs.k8s.io/kwok/cmd/kwok ;;
  esac
  (scratch_module "$WORK/build/$prog" "$modver" "$cmd") >"$LOGS/module-$prog.log" 2>&1 ||
    die "the scratch module of $modver, see $LOGS/module-$prog.log"
  for v in stock kcache; do
    (cd "$WORK/build/$prog" && "$GO" build -modfile="$v.mod" -o "$BIN/$v/$prog" "$cmd") >"$LOGS/build-$prog-$v.log" 2>&1 ||
      die "building $prog ($v), see $LOGS/build-$prog-$v.log"
    has=$("$GO" tool nm "$BIN/$v/$prog" | grep -cF "$PROOF_SYMBOL")
    [[ $v == kcache && $has -eq 0 ]] && die "$BIN/$v/$prog lacks $PROOF_SYMBOL: not built on the overlay"
    [[ $v == stock && $has -ne 0 ]] && die "$BIN/$v/$prog contains $PROOF_SYMBOL: built on the overlay"
    echo -e "$v\t$prog\t$has" >>"$WORK/proof.tsv.new"
  done
done
mv "$WORK/proof.tsv.new" "$WORK/proof.tsv"
for c in measure driver report; do
  "$GO" build -o "$BIN/$c" "./cmd/$c" || die "building $c"
done
"$KAS" build >"$LOGS/build-kas.log" 2>&1 || die "building kas, see $LOGS/build-kas.log"
took builds "SECONDS - t"

kwok_dir=$("$GO" mod download -json "$KWOK" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[[ -d $kwok_dir/kustomize/stage ]] || die "KWOK's stages not found in the module cache"
# KWOK's own stages, unedited: nodes initialize and renew their Leases,
# pods become ready.
kwok_stages=()
for f in node/fast/node-initialize node/heartbeat-with-lease/node-heartbeat-with-lease pod/fast/pod-ready; do
  kwok_stages+=(-c "$kwok_dir/kustomize/stage/$f.yaml")
done

kwok_pid=
stop_kwok() {
  [[ -n $kwok_pid ]] || return 0
  kill -TERM "$kwok_pid" 2>/dev/null
  for _ in $(seq 30); do kill -0 "$kwok_pid" 2>/dev/null || break; sleep 1; done
  kill -KILL "$kwok_pid" 2>/dev/null
  wait "$kwok_pid" 2>/dev/null
  kwok_pid=
}
stop_all() { stop_kwok; "$KAS" stop >/dev/null 2>&1; }
trap stop_all EXIT
now() { date +%s.%N; }
# kwok_args is KWOK's command line, after the kas env file is read.
kwok_env() {
  # shellcheck disable=SC1091
  . "$KAS_CACHE_DIR/run/env"
  kwok_args=("${kwok_stages[@]}" --kubeconfig="$KUBECONFIG" --manage-all-nodes=false
    --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake --node-lease-duration-seconds=40
    --cidr=10.64.0.0/12 --node-ip=10.63.0.1 --server-address="127.0.0.1:$KWOK_PORT")
}
fresh_kas() {
  "$KAS" stop >/dev/null 2>&1
  "$KAS" start >"$1/kas-start.log" 2>&1 || { cat "$1/kas-start.log" >&2; die "starting kas"; }
  kwok_env
}

# header KIND: the result file's header lines common to both targets.
header() {
  echo "# make $1 result"
  echo "command: ${PROGRAMS_COMMAND:-programs/run.sh} (PROGRAMS_PODS=$PODS PROGRAMS_NODES=$NODES $2)"
  echo "date:    $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "machine: $(uname -a)"
  echo "cpus:    $(nproc)"
  echo "go:      $("$GO" version)"
  echo "commit:  $(git -C "$ROOT" rev-parse HEAD 2>/dev/null)$(git -C "$ROOT" diff --quiet HEAD 2>/dev/null || echo ' (with uncommitted changes)')"
  echo "stock:   k8s.io/client-go $CLIENT_GO (what both releases require)"
  echo "kcache:  k8s.io/client-go $CLIENT_GO replaced by make overlay VERSION=$CLIENT_GO (tools/cache is kcache)"
  echo "proof:   go tool nm finds $PROOF_SYMBOL in both kcache binaries and in neither stock one:"
  sed 's/^/           /' "$WORK/proof.tsv"
}

# The race runs (PROGRAMS_KWOK_RACE): KWOK at debug level, where it logs
# each pod event it drops; nodes and pods created at once.
if ((RACE > 0)); then
  rm -rf "$WORK/runs"
  for ((r = 1; r <= RACE; r++)); do
    order=(stock kcache)
    ((r % 2 == 0)) && order=(kcache stock)
    for v in "${order[@]}"; do
      dir=$WORK/runs/kwok-race-$r-$v
      mkdir -p "$dir"
      fresh_kas "$dir"
      "$BIN/$v/kwok" "${kwok_args[@]}" --v=DEBUG >"$dir/kwok.log" 2>&1 &
      kwok_pid=$!
      "$BIN/driver" setup -nodes "$NODES" -pods "$PODS" -nodes-first=false -wait "$RACE_WAIT" -out "$dir/setup.json" >"$dir/driver.log" 2>&1 ||
        say "kwok-race-$r-$v: not every pod ran within $RACE_WAIT"
      "$BIN/driver" endstate -out "$dir/endstate.txt" || die "KWOK race ($v): end state"
      stop_kwok
      say "kwok-race-$r-$v done"
    done
  done
  stop_all
  result=${PROGRAMS_RESULT:-$ROOT/bench/results/kwok-race-$(date -u +%Y%m%dT%H%M%SZ).txt}
  mkdir -p "$(dirname "$result")"
  {
    header bench-programs-kwok-race "PROGRAMS_KWOK_RACE=$RACE PROGRAMS_RACE_WAIT=$RACE_WAIT"
    echo "program: $KWOK cmd/kwok, unedited, at --v=DEBUG; cmd/driver setup -nodes-first=false (nodes and pods created at once)"
    echo
  } >"$WORK/header.txt"
  "$BIN/report" -kwok-race -runs "$WORK/runs" -header "$WORK/header.txt" -kwok-rounds "$RACE" -out "$result" || die "report"
  took total "SECONDS - began"
  cat "$result"
  exit 0
fi

# 2. KWOK, rounds of both variants.
rm -rf "$WORK/runs"
for ((r = 1; r <= KWOK_ROUNDS; r++)); do
  order=(stock kcache)
  ((r % 2 == 0)) && order=(kcache stock)
  for v in "${order[@]}"; do
    t=$SECONDS
    dir=$WORK/runs/kwok-$r-$v
    mkdir -p "$dir"
    fresh_kas "$dir"
    start=$(now)
    "$BIN/measure" -out "$dir/measure.json" -log "$dir/kwok.log" -- "$BIN/$v/kwok" "${kwok_args[@]}" &
    kwok_pid=$!
    "$BIN/driver" setup -nodes "$NODES" -pods "$PODS" -out "$dir/setup.json" 2>&1 | tee "$dir/driver.log" >&2
    [[ ${PIPESTATUS[0]} == 0 ]] || die "KWOK ($v): setup, see $dir"
    idle_from=$(now)
    sleep "$IDLE"
    idle_to=$(now)
    "$BIN/driver" endstate -out "$dir/endstate.txt" || die "KWOK ($v): end state"
    printf '%s\n%s\n%s\n' "$start" "$idle_from" "$idle_to" >"$dir/window.txt"
    stop_kwok
    [[ -s $dir/measure.json ]] || die "KWOK ($v) left no figures, see $dir/kwok.log"
    took "kwok-$r-$v" "SECONDS - t"
  done
done

# 3. The descheduler on the last KWOK run's cluster, now still.
t=$SECONDS
"$BIN/driver" perturb -nodes "$NODES" || die "moving and tainting nodes"
cat >"$WORK/policy.yaml" <<'YAML'
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
  - name: programs
    pluginConfig:
      - name: DefaultEvictor
      - name: RemovePodsViolatingNodeTaints
      - name: RemovePodsViolatingNodeAffinity
        args:
          nodeAffinityType:
            - requiredDuringSchedulingIgnoredDuringExecution
    plugins:
      deschedule:
        enabled:
          - RemovePodsViolatingNodeTaints
          - RemovePodsViolatingNodeAffinity
YAML
# descheduler_cycles DIR VARIANT: one process, stopped once it has logged
# CYCLES finished cycles (or after 15 minutes).
descheduler_cycles() {
  local dir=$1 v=$2 pid n=0
  "$BIN/measure" -out "$dir/measure.json" -log "$dir/descheduler.log" -- "$BIN/$v/descheduler" \
    --kubeconfig="$KUBECONFIG" --policy-config-file="$WORK/policy.yaml" --dry-run \
    --descheduling-interval="$INTERVAL" --disable-metrics --secure-port=0 -v=1 &
  pid=$!
  for _ in $(seq 900); do
    n=$(grep -c '"Number of evictions/requests"' "$dir/descheduler.log" 2>/dev/null)
    [[ ${n:-0} -ge $CYCLES ]] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 1
  done
  kill -TERM "$pid" 2>/dev/null
  wait "$pid"
  [[ ${n:-0} -ge $CYCLES ]] || { say "descheduler ($v) finished ${n:-0} of $CYCLES cycles"; return 1; }
}
for ((r = 1; r <= ROUNDS; r++)); do
  order=(stock kcache)
  ((r % 2 == 0)) && order=(kcache stock)
  for v in "${order[@]}"; do
    dir=$WORK/runs/descheduler-$r-$v
    mkdir -p "$dir"
    descheduler_cycles "$dir" "$v" || die "descheduler ($v, round $r), see $dir/descheduler.log"
  done
done
took descheduler "SECONDS - t"
stop_all

# 4. The report.
result=${PROGRAMS_RESULT:-$ROOT/bench/results/programs-$(date -u +%Y%m%dT%H%M%SZ).txt}
mkdir -p "$(dirname "$result")"
{
  header bench-programs "PROGRAMS_IDLE=$IDLE PROGRAMS_ROUNDS=$ROUNDS PROGRAMS_KWOK_ROUNDS=$KWOK_ROUNDS PROGRAMS_CYCLES=$CYCLES PROGRAMS_INTERVAL=$INTERVAL"
  echo "programs: $DESCHEDULER cmd/descheduler and $KWOK cmd/kwok, unedited, each built from a module requiring only its release"
  echo "server:  kas ($(sed -n 's/^[[:space:]]*k8s.io\/kubernetes \(v[^ ]*\).*/kube-apiserver \1/p' "$ROOT/kas/go.mod" | head -1) + embedded etcd), a fresh one per KWOK run; the descheduler on the last one's cluster"
  echo "heap:    from the Go runtime's GC trace (GODEBUG=gctrace=1, both variants); RSS and CPU from the process's rusage"
  echo "times:"
  sed 's/^/           /' "$times"
  echo
} >"$WORK/header.txt"
"$BIN/report" -runs "$WORK/runs" -header "$WORK/header.txt" -rounds "$ROUNDS" -kwok-rounds "$KWOK_ROUNDS" -cycles "$CYCLES" -out "$result" || die "report"
took total "SECONDS - began"
cat "$result"
