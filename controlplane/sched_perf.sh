#!/usr/bin/env bash
# sched_perf.sh OUT: runs Kubernetes' scheduler benchmark
# (k8s.io/kubernetes/test/integration/scheduler_perf, the release go.mod
# pins), unedited, built on stock client-go and on the kcache overlay (the
# modfiles run.sh writes), and appends its throughput figures to OUT as
# lines "workload variant metric value" (metric: Average, Perc50, Perc90,
# Perc99 of SchedulingThroughput, pods/s). Called by run.sh.
#
# Environment:
#   CP_SCHED_PERF_WORKLOADS  PACKAGE:BENCH pairs, space separated: the
#                  package under scheduler_perf/ and the part of the
#                  benchmark's name after BenchmarkPerfScheduling/
#                  (default: SchedulingBasic at 500 and 5000 nodes,
#                  SchedulingPodAntiAffinity and TopologySpreading at 500)
#   CP_SCHED_PERF_ROUNDS     rounds, both variants each, order alternating (2)
set -uo pipefail

OUT=$1
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
GO=${GO:-go}
WORK=$HERE/.work
BIN=$WORK/bin
LOGS=$WORK/logs/sched-perf
PROOF_SYMBOL='k8s.io/client-go/tools/cache/internal/dedup.(*Table)'
PREFIX=k8s.io/kubernetes/test/integration/scheduler_perf
WORKLOADS=${CP_SCHED_PERF_WORKLOADS:-misc:SchedulingBasic/500Nodes affinity:SchedulingPodAntiAffinity/500Nodes topology_spreading:TopologySpreading/500Nodes misc:SchedulingBasic/5000Nodes}
ROUNDS=${CP_SCHED_PERF_ROUNDS:-2}

say() { echo "sched-perf: $*" >&2; }
die() { say "FAILED: $*"; exit 1; }

mkdir -p "$LOGS" && cd "$HERE" || exit 1
# etcd, which the integration framework finds on PATH (go.mod's tool line
# pins go.etcd.io/etcd/server/v3 at the version Kubernetes requires).
"$GO" build -o "$BIN/etcd" go.etcd.io/etcd/server/v3 || die "building etcd"
# Every test binary starts its own etcd: nothing may listen on this URL.
export KUBE_INTEGRATION_ETCD_URL=http://127.0.0.1:2
export PATH=$BIN:$PATH

for wl in $WORKLOADS; do
  pkg=${wl%%:*} bench=${wl#*:}
  for v in stock kcache; do
    t=$SECONDS
    GOFLAGS=-mod=mod "$GO" test -c -modfile="$WORK/$v.mod" -o "$BIN/$v/sched-perf-$pkg.test" "$PREFIX/$pkg" \
      >"$LOGS/build-$v-$pkg.log" 2>&1 || die "building $pkg on $v, see $LOGS/build-$v-$pkg.log"
    has=$("$GO" tool nm "$BIN/$v/sched-perf-$pkg.test" | grep -cF "$PROOF_SYMBOL")
    [[ $v == kcache && $has -eq 0 ]] && die "the kcache scheduler_perf binary lacks $PROOF_SYMBOL"
    [[ $v == stock && $has -ne 0 ]] && die "the stock scheduler_perf binary contains $PROOF_SYMBOL"
    say "built $pkg on $v in $((SECONDS - t)) s"
  done
  dir=$(GOFLAGS=-mod=mod "$GO" list -modfile="$WORK/stock.mod" -f '{{.Dir}}' "$PREFIX/$pkg") || die "locating $pkg"
  for ((r = 1; r <= ROUNDS; r++)); do
    order=(stock kcache)
    ((r % 2 == 0)) && order=(kcache stock)
    for v in "${order[@]}"; do
      t=$SECONDS
      log=$LOGS/$pkg-${bench//\//_}-$r-$v.log
      # -test.bench matches each level of the name alone: anchor each.
      pattern="^BenchmarkPerfScheduling\$/^${bench//\//\$/^}\$"
      # The README's way of running one benchmark once; the workload's
      # labels are not filtered (the bench regexp picks it).
      (cd "$dir" && "$BIN/$v/sched-perf-$pkg.test" -test.run='^$' -test.bench="$pattern" \
        -test.benchtime=1x -test.short=false -test.timeout=60m -perf-scheduling-label-filter= \
        -data-items-dir="$LOGS") >"$log" 2>"$log.stderr" || die "scheduler_perf $bench on $v, see $log and $log.stderr"
      # A result line on stdout (the logs go to stderr): name, iterations,
      # then value-unit pairs. A workload that schedules its pods within the
      # throughput collector's one-second sampling prints no throughput: that
      # run counts for nothing (the report gives the runs per side).
      before=$(grep -c "^$bench $v Average " "$OUT")
      awk -v wl="$bench" -v v="$v" '/^BenchmarkPerfScheduling\// {
          for (i = 3; i < NF; i += 2) if ($(i + 1) ~ /^SchedulingThroughput\//) {
            m = $(i + 1); sub(/^SchedulingThroughput\//, "", m); print wl, v, m, $i
          } }' "$log" >>"$OUT"
      if (($(grep -c "^$bench $v Average " "$OUT") == before)); then
        say "$bench on $v: no SchedulingThroughput in $log (too short to sample), not counted ($((SECONDS - t)) s)"
        continue
      fi
      say "$bench on $v: $(grep "^$bench $v Average " "$OUT" | tail -1 | awk '{print $4}') pods/s ($((SECONDS - t)) s)"
    done
  done
done
