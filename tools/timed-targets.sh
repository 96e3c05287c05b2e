#!/usr/bin/env bash
# Runs make targets one after another, as `make test` lists them, and says
# how long each took and how long the run has taken so far, so that a run
# stopped from outside (CI's time limit) still shows where its time went.
# Beside each target's time it gives the CPU time (user and system) of
# the processes it ran and waited for: a target whose CPU time is well
# below twice its time on two cores mostly waits.
# The first failing target ends the run with its exit status; a table of
# every target's time closes a run that passed.
#
# Targets joined by "+" run at the same time, each with its output kept
# aside and printed, in the order given, once all of them have ended: for
# targets that mostly wait (their CPU time well below their time), which
# share nothing a concurrent run would disturb (no kas, no fixed port or
# directory).
#
#   tools/timed-targets.sh fmt-check vet unit ...
#   tools/timed-targets.sh fmt-check unit+compat+sharding-test ...
#   tools/timed-targets.sh overlay-test OVERLAY_E2E_VERSIONS=
#
# An argument with "=" is a make variable, passed to every target's make.
# MAKE names the make to call (the Makefile passes its own); TIMED_LABEL
# starts every line (default "make test").
set -uo pipefail

MAKE=${MAKE:-make}
label=${TIMED_LABEL:-make test}
start=$SECONDS
rows=()
vars=()
scratch=$(mktemp)
asides=$(mktemp -d)
trap 'rm -rf "$scratch" "$asides"' EXIT

# children_cpu sets cpu_now to the CPU seconds (user and system) of the
# processes this shell ran and waited for so far: the second line of the
# builtin times, which must run in this shell (in a command substitution's
# subshell it would count that subshell's children). Its file is $1, or
# $scratch.
children_cpu() {
  local f=${1:-$scratch}
  times >"$f"
  cpu_now=$(awk 'NR == 2 {
    n = 0
    for (i = 1; i <= 2; i++) { split($i, p, "m"); sub("s", "", p[2]); n += p[1] * 60 + p[2] }
    printf "%d", n
  }' "$f")
}
targets=()
for arg in "$@"; do
  case $arg in
    *=*) vars+=("$arg") ;;
    *) targets+=("$arg") ;;
  esac
done

# run_one TARGET runs one target here, with its output as it comes.
run_one() {
  local target=$1 began=$SECONDS cpu_began rc took cpu
  children_cpu
  cpu_began=$cpu_now
  echo "$label: $target: starting at $((began - start)) s" >&2
  "$MAKE" --no-print-directory "$target" ${vars[@]+"${vars[@]}"}
  rc=$?
  took=$((SECONDS - began))
  children_cpu
  cpu=$((cpu_now - cpu_began))
  if ((rc != 0)); then
    echo "$label: $target: FAILED (exit $rc) after $took s; $((SECONDS - start)) s in all" >&2
    exit "$rc"
  fi
  echo "$label: $target: passed in $took s (CPU $cpu s); $((SECONDS - start)) s in all" >&2
  rows+=("$(printf '%-22s %6d s   CPU %6d s' "$target" "$took" "$cpu")")
}

# run_group TARGET... runs the targets at once, each in a subshell that
# keeps its output in $asides/TARGET.log and writes its exit status, time
# and CPU time (its own children's, counted by times in that subshell) to
# $asides/TARGET.status; then prints the outputs and lines in order. The
# first failed target, in that order, ends the run.
run_group() {
  local began=$SECONDS target rc took cpu failed=0
  echo "$label: $*: starting together at $((began - start)) s" >&2
  for target in "$@"; do
    (
      t0=$SECONDS
      "$MAKE" --no-print-directory "$target" ${vars[@]+"${vars[@]}"} >"$asides/$target.log" 2>&1
      rc=$?
      children_cpu "$asides/$target.times"
      echo "$rc $((SECONDS - t0)) $cpu_now" >"$asides/$target.status"
    ) &
  done
  wait
  for target in "$@"; do
    cat "$asides/$target.log"
    read -r rc took cpu <"$asides/$target.status" || { rc=1 took=0 cpu=0; }
    if ((rc != 0)); then
      echo "$label: $target: FAILED (exit $rc) after $took s, run with $*" >&2
      ((failed == 0)) && failed=$rc
      continue
    fi
    echo "$label: $target: passed in $took s (CPU $cpu s), run with the others of its group" >&2
    rows+=("$(printf '%-22s %6d s   CPU %6d s   (together)' "$target" "$took" "$cpu")")
  done
  if ((failed != 0)); then
    echo "$label: FAILED after $((SECONDS - start)) s in all" >&2
    exit "$failed"
  fi
  echo "$label: $*: passed together in $((SECONDS - began)) s; $((SECONDS - start)) s in all" >&2
  rows+=("$(printf '%-22s %6d s' "  (the group)" "$((SECONDS - began))")")
}

for target in "${targets[@]}"; do
  if [[ $target == *+* ]]; then
    IFS=+ read -r -a group <<<"$target"
    run_group "${group[@]}"
  else
    run_one "$target"
  fi
done
echo "$label: every target passed in $((SECONDS - start)) s:" >&2
printf '  %s\n' "${rows[@]}" >&2
