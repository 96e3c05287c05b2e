#!/usr/bin/env bash
# Runs the end-to-end memory benchmark (bench/cmd/e2e) against a real
# kube-apiserver + etcd started by kas/ (../kas/run.sh): builds and starts
# the server with ServiceAccount admission (the pods' token volumes come
# from it), runs `go run ./cmd/e2e "$@"`, and stops the server whatever
# happens (trap). If a kas of this worktree already runs, it is used and
# left running; for the default workload it must have been started with
# KAS_APISERVER_ARGS=--enable-admission-plugins=ServiceAccount (the run
# says so at the first pod otherwise).
#
#   bench/e2e.sh            # 20,000 pods (the default)
#   bench/e2e.sh -n 100000  # the full run
#   bench/e2e.sh -quick     # 1,000 pods, untagged variants only (make test)
#   bench/e2e.sh -applier-owns-token   # the harsher workload (bench/README.md)
#   bench/e2e.sh -churn 2m -churn-rate 100   # a longer, faster churn phase
#
# With BENCH=scale-out (make bench-scale-out) it runs `go run
# ./cmd/scale-out "$@"`: replicas of examples/cmd/activeactive under faults,
# into scale-out-<UTC>.txt.
#
# With BENCH=scale (make bench-scale) it runs `go run ./cmd/scale "$@"`
# instead, the same benchmark at growing pod counts up to 100,000, on a
# server whose etcd quota is raised as a large cluster's is
# (KAS_ETCD_QUOTA_BYTES, default 8 GiB here), into scale-<UTC>.txt.
#
# Result files: the whole output (stdout and stderr) goes, under a header
# naming the command, the date, the machine, Go and the commit, to
# bench/results/e2e-<UTC date-time>.txt, where README's figures come from.
# A -quick run (make test) writes one only with RESULTS=1; RESULTS=0
# writes none for any run.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
KAS=$ROOT/kas/run.sh
GO=${GO:-go}
BENCH=${BENCH:-e2e}
case $BENCH in
  e2e | scale | scale-out) ;;
  *) echo "bench-e2e: BENCH=$BENCH: want e2e, scale or scale-out" >&2; exit 2 ;;
esac
if [[ $BENCH == scale ]]; then
  # etcd's default quota (2 GiB) is what a small cluster runs with; 100,000
  # pods with their history need more, and large clusters raise it.
  export KAS_ETCD_QUOTA_BYTES=${KAS_ETCD_QUOTA_BYTES:-$((8 << 30))}
  # A restarted API server fills its watch cache with every pod before it
  # is ready; at 100,000 pods on a busy machine that took longer than the
  # launcher's default wait (KAS_READY_TIMEOUT, which the forced relist's
  # restart also uses).
  export KAS_READY_TIMEOUT=${KAS_READY_TIMEOUT:-1200}
fi

say() { echo "bench-e2e: $*" >&2; }

# header describes this run for its result file.
header() {
  local changed
  changed=$(git -C "$ROOT" status --porcelain 2>/dev/null | wc -l)
  echo "# make bench-$BENCH result"
  if [[ $BENCH == scale ]]; then
    echo "command: BENCH=scale bench/e2e.sh $*"
    echo "server:  kas (kube-apiserver v1.36.4, embedded etcd 3.6.8), etcd quota ${KAS_ETCD_QUOTA_BYTES} bytes, ServiceAccount admission"
  else
    echo "command: bench/e2e.sh $*"
  fi
  [[ -n ${KAS_APISERVER_ARGS:-} ]] && echo "kas args: ${KAS_APISERVER_ARGS} (and ServiceAccount admission)"
  echo "date:    $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "machine: $(uname -a)"
  echo "cpus:    $(nproc)"
  echo "go:      $("$GO" version)"
  echo "commit:  $(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)$( ((changed > 0)) && echo " with $changed uncommitted paths")"
  echo
}

if [[ -z ${E2E_RESULTS_FILE:-} ]]; then
  quick=0
  for arg in "$@"; do
    case $arg in -quick | --quick | -quick=true | --quick=true) quick=1 ;; esac
  done
  if [[ ${RESULTS:-$((1 - quick))} == 1 ]]; then
    mkdir -p "$HERE/results"
    E2E_RESULTS_FILE=$HERE/results/$BENCH-$(date -u +%Y%m%dT%H%M%SZ).txt
    export E2E_RESULTS_FILE
    header "$@" >"$E2E_RESULTS_FILE"
    # This script again, its output copied into the file; it sees
    # E2E_RESULTS_FILE set and runs the benchmark.
    "${BASH_SOURCE[0]}" "$@" 2>&1 | tee -a "$E2E_RESULTS_FILE"
    rc=${PIPESTATUS[0]}
    say "output written to ${E2E_RESULTS_FILE#"$ROOT"/}"
    exit "$rc"
  fi
fi

if "$KAS" status >/dev/null 2>&1; then
  say "using the running kas"
else
  trap '"$KAS" stop >/dev/null 2>&1 || true' EXIT
  trap '"$KAS" stop >/dev/null 2>&1 || true; exit 130' INT TERM
  began=$SECONDS
  mkdir -p "$ROOT/kas/.cache"
  # The pods' token volumes come from ServiceAccount admission, as in a
  # cluster (bench/internal/e2e/pods.go); kas leaves it off unless asked.
  export KAS_APISERVER_ARGS="--enable-admission-plugins=ServiceAccount${KAS_APISERVER_ARGS:+ $KAS_APISERVER_ARGS}"
  if ! "$KAS" start >/dev/null 2>"$ROOT/kas/.cache/e2e-start.log"; then
    say "FAILED: the API server did not start; see $ROOT/kas/.cache/e2e-start.log and $ROOT/kas/.cache/run/kas.log"
    exit 1
  fi
  say "API server ready in $((SECONDS - began)) s"
fi
# shellcheck disable=SC1091
. "$ROOT/kas/.cache/run/env"
cd "$HERE" && "$GO" run "./cmd/$BENCH" "$@"
